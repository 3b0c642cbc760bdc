import Testing
import WebProxyCore
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

/// Seeded random lives of a session against a simulated relay that mostly follows the
/// protocol and sometimes is hostile (garbage bodies, DATA beyond the window, frames for
/// unknown streams, 404, 503, lost answers, dropped sockets). Checks after every event:
/// nothing traps, uplink bodies are valid batches within `batchLimit`, DATA never exceeds
/// the credit the relay granted, local write queues stay bounded, every local connection
/// carried by a session that died was closed, and shutdown leaves nothing open.
@Suite("SessionSupervisor: seeded randomized lives")
struct SessionFuzzTests {
    @Test("random interleavings keep the invariants", arguments: CarrierMode.allCases, [UInt64(1), 2, 3, 4])
    func randomLife(mode: CarrierMode, seed: UInt64) {
        var world = FuzzWorld(mode: mode, seed: seed)
        for _ in 0..<1500 { world.randomStep() }
        world.shutDownAndDrain()
        #expect(world.violations == [], "mode \(mode) seed \(seed)")
        // The lives reach the interesting parts: data both ways and rebuilt sessions.
        #expect(world.sessionsUp > 1)
        #expect(world.bytesWritten > 0)
        #expect(world.bytesSent > 0)
    }
}

/// The simulated relay and local side, and the invariant checks.
struct FuzzWorld {
    let mode: CarrierMode
    var random: SplitMix64
    var h: SessionHarness
    var violations: [String] = []
    var sessionsUp = 0
    var sessionsDown = 0
    var bytesWritten = 0
    var bytesSent = 0

    // Local side.
    var nextConnection: UInt64 = 1
    var open: Set<ConnectionID> = []
    var waiting: Set<ConnectionID> = []
    var writeQueued: [ConnectionID: Int] = [:]
    // Relay side.
    var requests: [RequestID: CarrierRequest] = [:]
    var connecting: [SocketID: CarrierRequest] = [:]
    var sockets: [SocketID: StreamID?] = [:]
    var timers: [SessionTimer: MonotonicInstant] = [:]
    /// Streams the relay saw OPEN for and has not closed, with its credit toward the client
    /// and the client's credit toward it.
    var relayCredit: [StreamID: Int] = [:]
    var clientCredit: [StreamID: Int] = [:]
    var closedByRelay: Set<StreamID> = []
    var seenUplinks: Set<String> = []
    var stopped = false

    static let settings = SessionSettings(globalQueueLimit: 256 << 10, windowUpdateThreshold: 4096)

    init(mode: CarrierMode, seed: UInt64) {
        self.mode = mode
        random = SplitMix64(seed: seed &* 0x1234_5678_9ABC)
        h = SessionHarness(settings: FuzzWorld.settings, random: SplitMix64(seed: seed))
        feed(.start)
    }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    mutating func randomStep() {
        switch Int.random(in: 0..<12, using: &random) {
        case 0:
            guard open.count < 140 else { return }
            let id = ConnectionID(nextConnection)
            nextConnection += 1
            open.insert(id)
            feed(.localAccepted(id))
        case 1, 2:
            guard let id = open.randomElement(using: &random) else { return }
            let allowance = h.supervisor.readAllowance(for: id)
            guard allowance > 0 else { return }
            let count = min(allowance, Int.random(in: 1...90_000, using: &random))
            feed(.localRead(id, Array(repeating: UInt8(truncatingIfNeeded: count), count: count)[...]))
        case 3:
            guard let (id, queued) = writeQueued.filter({ $0.value > 0 }).randomElement(using: &random) else { return }
            let count = Int.random(in: 1...queued, using: &random)
            writeQueued[id, default: 0] -= count
            feed(.localWritten(id, count))
        case 4:
            guard chance(30), let id = open.randomElement(using: &random) else { return }
            closeLocally(id)
            feed(chance(50) ? .localEOF(id) : .localError(id))
        case 5, 6, 7:
            guard let id = requests.keys.randomElement(using: &random), let request = requests.removeValue(forKey: id)
            else { return }
            if chance(4) {
                feed(.httpFailed(id))
            } else {
                feed(.httpResponse(id, answer(request), wallClockSeconds: 0))
            }
        case 8:
            guard let (id, request) = connecting.randomElement(using: &random) else { return }
            connecting[id] = nil
            if chance(3) {
                feed(.webSocketUpgradeFailed(id, response: chance(50) ? SessionHarness.notFound : nil))
            } else {
                let offered = request.header("Sec-WebSocket-Protocol") ?? ""
                let lane = offered.split(separator: ".").last.flatMap { UInt32($0) }.flatMap(StreamID.init(rawValue:))
                sockets[id] = offered.hasPrefix("tproxy-lane-v1.") ? lane : .some(nil)
                feed(.webSocketOpened(id, response: CarrierResponse(status: 101, headers: [("Sec-WebSocket-Protocol", offered)])))
            }
        case 9:
            guard let (id, lane) = sockets.randomElement(using: &random) else { return }
            switch Int.random(in: 0..<20, using: &random) {
            case 0:
                sockets[id] = nil
                feed(.webSocketClosed(id, clean: false))
            case 1: feed(.webSocketPong(id))
            case 2: feed(.webSocketDrained(id, bufferedBytes: 0))
            default:
                if let body = relayBatch(lane: lane) { feed(.webSocketMessage(id, body)) }
            }
        case 10:
            guard let (timer, at) = timers.randomElement(using: &random) else { return }
            timers[timer] = nil
            if at > h.now { h.now = at }
            feed(.timerFired(timer))
        default:
            h.advance(.milliseconds(Int64.random(in: 1...3000, using: &random)))
        }
    }

    mutating func closeLocally(_ id: ConnectionID) {
        open.remove(id)
        waiting.remove(id)
        writeQueued[id] = nil
    }

    /// The relay's answer to one request: mostly right, sometimes hostile.
    mutating func answer(_ request: CarrierRequest) -> CarrierResponse {
        if request.method == "GET" { return chance(5) ? SessionHarness.notFound : SessionHarness.page(mode) }
        if request.method == "DELETE" { return CarrierResponse(status: 204) }
        if request.path.hasSuffix("/session") {
            if chance(5) { return CarrierResponse(status: 503, headers: [("Retry-After", "1")]) }
            relayCredit = [:]
            clientCredit = [:]
            closedByRelay = []
            return SessionHarness.created(mode)
        }
        if chance(2) { return SessionHarness.notFound }
        if chance(3) { return CarrierResponse(status: 503) }
        let lane = request.header("X-Lane-ID").flatMap { UInt32($0) }.flatMap(StreamID.init(rawValue:))
        if request.path.hasSuffix("/up") {
            return SessionHarness.upAck(UInt64(request.header("X-Up-Seq") ?? "") ?? 0)
        }
        let cursor = UInt64(request.header("X-Down-Cursor") ?? "") ?? 0
        if let lane, closedByRelay.contains(lane) { return SessionHarness.downIdle(cursor: cursor, laneClosed: true) }
        guard chance(60), let body = relayBatch(lane: lane) else { return SessionHarness.downIdle(cursor: cursor) }
        return CarrierResponse(status: 200, headers: [("X-Down-Cursor", String(cursor + 1))], body: body)
    }

    /// A downlink batch for `lane` (nil: any stream): DATA within the relay's credit, WINDOW,
    /// CLOSE, PING, or now and then something hostile.
    mutating func relayBatch(lane: StreamID?) -> [UInt8]? {
        if chance(3) {
            let hostile: [[UInt8]] = [
                (0..<Int.random(in: 1...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) },
                [0x02, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF],
                Frame.window(stream: StreamID.max, delta: 1).encoded,
                Frame.data(stream: lane ?? .first, payload: Array(repeating: 1, count: 70_000)[...]).encoded,
            ]
            return hostile.randomElement(using: &random)
        }
        let candidates = relayCredit.keys.filter { lane == nil || $0 == lane }.sorted()
        guard let stream = candidates.randomElement(using: &random) else {
            return lane?.isSession == false ? nil : (chance(20) ? Frame.ping(token: [7]).encoded : nil)
        }
        var frames: [Frame] = []
        let credit = relayCredit[stream] ?? 0
        if credit > 0, chance(80) {
            let count = min(credit, Int.random(in: 1...70_000, using: &random))
            relayCredit[stream] = credit - count
            frames.append(.data(stream: stream, payload: Array(repeating: 0x5A, count: count)[...]))
        }
        if chance(40) {
            let delta = UInt32.random(in: 1...65_536, using: &random)
            clientCredit[stream, default: 0] += Int(delta)
            frames.append(.window(stream: stream, delta: delta))
        }
        if chance(5) {
            relayCredit[stream] = nil
            closedByRelay.insert(stream)
            frames.append(.close(stream: stream))
        }
        return frames.isEmpty ? nil : frames.encodedBatch()
    }

    mutating func feed(_ event: SessionEvent) {
        let actions = h.onLogged(event)
        for action in actions { apply(action) }
        if actions.contains(where: { if case .sessionDown = $0 { true } else { false } }) {
            let carried = open.subtracting(waiting)
            if !carried.isEmpty { violations.append("session died with \(carried.count) carried connections open") }
            requests = requests.filter { $0.value.method == "DELETE" }
            sockets = [:]
            connecting = [:]
        }
        let total = writeQueued.values.reduce(0, +)
        if mode == .https || mode == .httpsLanes, total > FuzzWorld.settings.globalQueueLimit + (2 << 20) {
            violations.append("local write queues hold \(total) bytes")
        }
    }

    mutating func apply(_ action: SessionAction) {
        switch action {
        case .sendHTTP(let id, _, let request, _, _):
            requests[id] = request
            if request.path.hasSuffix("/up") {
                let key = (request.header("X-Lane-ID") ?? "-") + "/" + (request.header("X-Up-Seq") ?? "")
                if seenUplinks.insert(key).inserted { uplink(request.body) }
            }
            if request.path.hasSuffix("/session"), request.method == "POST" { seenUplinks = [] }
        case .cancelHTTP(let id): requests[id] = nil
        case .openWebSocket(let id, let request, _): connecting[id] = request
        case .sendWebSocketMessage(let id, let body):
            if sockets[id] == nil { violations.append("message on unknown \(id)") }
            uplink(body)
        case .closeWebSocket(let id):
            connecting[id] = nil
            sockets[id] = nil
        case .writeLocal(let id, let bytes):
            guard open.contains(id), !waiting.contains(id) else {
                violations.append("write to \(id), which is not carried")
                return
            }
            writeQueued[id, default: 0] += bytes.count
            bytesWritten += bytes.count
            if writeQueued[id, default: 0] > Int(FlowWindow.initialCredit) {
                violations.append("\(id) has \(writeQueued[id, default: 0]) bytes queued")
            }
        case .closeLocal(let id, _):
            if !open.contains(id) { violations.append("close of \(id), which is not open") }
            closeLocally(id)
        case .schedule(let timer, let at):
            timers[timer] = at
            if case .admission(let id) = timer { waiting.insert(id) }
        case .cancelTimer(let timer):
            timers[timer] = nil
            if case .admission(let id) = timer { waiting.remove(id) }
        case .sessionUp: sessionsUp += 1
        case .sessionDown: sessionsDown += 1
        case .stopped: stopped = true
        case .pauseLocalRead, .resumeLocalRead, .sendWebSocketPing, .log: break
        }
    }

    /// Checks one uplink body: a valid batch within the limit, DATA within credit.
    mutating func uplink(_ body: [UInt8]) {
        guard body.count <= FrameLimits.defaultBatchBytes else {
            violations.append("uplink body of \(body.count) bytes")
            return
        }
        do {
            for frame in try FrameBatch.decode(body[...], direction: .clientToRelay) {
                switch frame {
                case .open(let stream):
                    relayCredit[stream] = Int(FlowWindow.initialCredit)
                    clientCredit[stream] = Int(FlowWindow.initialCredit)
                case .data(let stream, let payload):
                    let credit = clientCredit[stream] ?? 0
                    if payload.count > credit { violations.append("DATA of \(payload.count) on \(stream) with credit \(credit)") }
                    clientCredit[stream] = credit - payload.count
                    bytesSent += payload.count
                case .window(let stream, let delta):
                    if relayCredit[stream] != nil { relayCredit[stream, default: 0] += Int(delta) }
                case .close(let stream):
                    relayCredit[stream] = nil
                case .pong, .ping, .hello, .welcome, .bye:
                    break
                }
            }
        } catch {
            violations.append("invalid uplink batch: \(error)")
        }
    }

    /// Shutdown, then answer or fail whatever is left until the supervisor stops.
    mutating func shutDownAndDrain() {
        feed(.shutdown)
        for (id, request) in requests where request.method == "DELETE" {
            requests[id] = nil
            feed(.httpResponse(id, CarrierResponse(status: 204), wallClockSeconds: 0))
        }
        if !stopped { violations.append("not stopped after shutdown") }
        if !open.isEmpty { violations.append("\(open.count) local connections left open") }
    }
}
