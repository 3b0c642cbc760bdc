import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

/// Drives a `SessionSupervisor` with injected time and recorded relay answers shaped like
/// the transcripts in `relay-transcripts/` (host `proxy.example.com`, https profile secret).
struct SessionHarness {
    static let host = "proxy.example.com"
    static let capability = "MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk"
    static let bootstrap = "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw"
    static let sessionText = "VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"
    static let api = RelayAPI(host: host, prefix: "/api/v1")

    static var token: RelayToken {
        guard let token = RelayToken(sessionText) else { fatalError("fixture token is not canonical") }
        return token
    }

    /// Tests see every deadline and threshold exactly: a WINDOW goes out for every written byte.
    /// The uplink pacer is off (its default); its own tests turn it on
    /// (`SessionDriverPacingTests`). So is websocket-lanes' spare lane, so that the lane tests
    /// follow one lane per connection; `SessionDriverSpareLaneTests` turns it on.
    static let settings = SessionSettings(windowUpdateThreshold: 1, opensSpareLane: false)

    var supervisor: SessionSupervisor
    var now = MonotonicInstant.start

    init(settings: SessionSettings = SessionHarness.settings, random: some RandomNumberGenerator & Sendable = ZeroRandom()) {
        let secret = try! ProxySecret(parsing: "000102030405060708090a0b0c0d0e0f")
        let host = try! RelayHost(SessionHarness.host)
        supervisor = SessionSupervisor(secret: secret, host: host, basePath: nil, settings: settings, random: random)
    }

    /// Feeds one event; returns the actions without the log entries.
    mutating func on(_ event: SessionEvent) -> [SessionAction] {
        supervisor.handle(event, at: now).filter { if case .log = $0 { false } else { true } }
    }

    /// Feeds one event; returns every action, log entries included.
    mutating func onLogged(_ event: SessionEvent) -> [SessionAction] {
        supervisor.handle(event, at: now)
    }

    mutating func advance(_ duration: Duration) { now = now.advanced(by: duration) }

    func at(_ duration: Duration) -> MonotonicInstant { now.advanced(by: duration) }

    /// Start, bridge page, session creation: returns the actions after WELCOME. Request ids
    /// 1 (page) and 2 (create) are used.
    mutating func establish(_ mode: CarrierMode) -> [SessionAction] {
        let start = on(.start)
        #expect(start == [.sendHTTP(RequestID(1), .bridgePage, SessionHarness.bridgeRequest, deadline: at(.seconds(20)), silence: .seconds(5))])
        let create = on(.httpResponse(RequestID(1), SessionHarness.page(mode), wallClockSeconds: 0))
        #expect(create == [.sendHTTP(RequestID(2), .createSession, SessionHarness.createRequest, deadline: at(.seconds(20)), silence: .seconds(5))])
        return on(.httpResponse(RequestID(2), SessionHarness.created(mode), wallClockSeconds: 0))
    }

    /// A harness whose session is up over `mode` (see `establish`).
    static func established(_ mode: CarrierMode, settings: SessionSettings = SessionHarness.settings) -> SessionHarness {
        var harness = SessionHarness(settings: settings)
        _ = harness.establish(mode)
        return harness
    }

    /// A harness whose session is up over `mode`, with `connection` accepted and its first
    /// `echoBytes` read (on the https carriers that makes request 4 the OPEN-bearing /up).
    static func carrying(
        _ connection: ConnectionID, over mode: CarrierMode, settings: SessionSettings = SessionHarness.settings
    ) -> SessionHarness {
        var harness = established(mode, settings: settings)
        _ = harness.on(.localAccepted(connection))
        _ = harness.on(.localRead(connection, echoBytes))
        return harness
    }

    static var bridgeRequest: CarrierRequest {
        BridgePage.request(host: host, basePath: "", capability: capability)
    }

    static var createRequest: CarrierRequest {
        guard let bootstrap = RelayToken(bootstrap) else { fatalError("fixture token is not canonical") }
        return api.createSession(bootstrap: bootstrap)
    }

    static func page(_ mode: CarrierMode, batchLimit: Int = 2_097_152) -> CarrierResponse {
        let html = """
            <!doctype html><html><head><meta charset="utf-8"><title>Connection</title></head><body>
            <script nonce="PZ6ExNbNvc-v8_i5cJDAV8_V">
            "use strict";
            const relayOrigin="https://proxy.example.com",bootstrap="\(bootstrap)",carrierMode="\(mode.rawValue)";
            const laneQueueLimit=8388608,laneItemLimit=1024,batchLimit=\(batchLimit);
            </script></body></html>
            """
        return CarrierResponse(
            status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
            body: Array(html.utf8))
    }

    static func created(_ mode: CarrierMode) -> CarrierResponse {
        CarrierResponse(
            status: 200,
            headers: [
                ("Cache-Control", "no-store"), ("Content-Type", "application/octet-stream"),
                ("X-Carrier-Mode", mode.rawValue), ("X-Down-Cursor", "0"), ("X-Session-Token", sessionText),
            ],
            body: Frame.welcome.encoded)
    }

    static func upAck(_ sequence: UInt64) -> CarrierResponse {
        CarrierResponse(status: 204, headers: [("Cache-Control", "no-store"), ("X-Up-Ack", String(sequence))])
    }

    static func downBatch(cursor: UInt64, _ frames: [Frame]) -> CarrierResponse {
        CarrierResponse(
            status: 200,
            headers: [("Content-Type", "application/octet-stream"), ("X-Down-Cursor", String(cursor))],
            body: frames.encodedBatch())
    }

    static func downIdle(cursor: UInt64, laneClosed: Bool = false) -> CarrierResponse {
        var headers: [(name: String, value: String)] = [("X-Down-Cursor", String(cursor))]
        if laneClosed { headers.append(("X-Lane-Closed", "1")) }
        return CarrierResponse(status: 204, headers: headers)
    }

    static let notFound = CarrierResponse(
        status: 404, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array("404 page not found\n".utf8))

    static func up(_ sequence: UInt64, lane: StreamID? = nil, _ frames: [Frame]) -> CarrierRequest {
        api.up(session: token, sequence: sequence, lane: lane, body: frames.encodedBatch())
    }

    static func down(_ cursor: UInt64, lane: StreamID? = nil) -> CarrierRequest {
        api.down(session: token, cursor: cursor, lane: lane)
    }

    static func upgrade(lane: StreamID? = nil) -> WebSocketUpgrade {
        WebSocketUpgrade(channel: CarrierChannel(api: api, session: token, lane: lane))
    }

    static func switched(lane: StreamID? = nil) -> CarrierResponse {
        let protocolName = lane.map { "tproxy-lane-v1.\(sessionText).\($0.rawValue)" } ?? "tproxy-v1.\(sessionText)"
        return CarrierResponse(
            status: 101,
            headers: [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Protocol", protocolName)])
    }
}

/// What the SessionDriver suites share: the harness's short name and the local connection
/// they drive.
protocol SessionDriverSuite {}

extension SessionDriverSuite {
    typealias H = SessionHarness
    var conn: ConnectionID { ConnectionID(7) }
}

/// The 16 bytes of the transcripts' first echo.
let echoBytes: ArraySlice<UInt8> = Array("0123456789abcdef".utf8)[...]

func stream(_ raw: UInt32) -> StreamID {
    guard let id = StreamID(rawValue: raw) else { fatalError("stream id out of range") }
    return id
}

/// Jitter draws of 0: backoffs are exactly their base values.
struct ZeroRandom: RandomNumberGenerator, Sendable {
    mutating func next() -> UInt64 { 0 }
}
