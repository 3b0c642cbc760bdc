import WebProxyCore
import WebProxyTestRelay
import WebProxyTestSupport

/// Replays a recorded transcript through a `RelayEngine` and lists every difference from
/// what the reference relay did.
///
/// - Requests are sent at their recorded `t_start_ms`; `tick(now)` runs before every step, so
///   long polls and pings fire at the step where the recording saw their effect or later.
/// - Tokens are mapped by role: the token this engine issued for `bootstrap#1` replaces the
///   recorded `bootstrap#1` in later requests, and a replay that must return "the same"
///   token is checked for equality with the earlier one.
/// - Backends behave like the recorder's test backend (`TestBackends`).
/// - Compared: status, the relay-relevant headers, whether a response was immediate or
///   came after a long poll, bridge statements, and every decoded frame (type, stream,
///   length, payload or its first 16 bytes, WINDOW delta) of every batch and message.
/// - Relaxation: WebSocket traffic is compared per socket as the ordered list of what the
///   relay sent on it (messages, pings, pongs, closes, TCP end), not by its interleaving with
///   the client's messages on the recorder's clock (e.g. in 07 the second WINDOW of socket E
///   arrived after the client's next message only because the backend drained later).
struct TranscriptReplay {
    let transcript: RelayTranscript
    private var engine: RelayEngine
    private var backends = TestBackends()
    private var now = RelayInstant.milliseconds(0)
    private var roles: [String: String] = [:]
    private var sockets: [String: RelayConnectionID] = [:]
    private var pending: [RelayConnectionID: RelayTranscript.Exchange] = [:]
    private var sent: [RelayConnectionID: [SocketOutput]] = [:]
    private var expected: [String: [RelayTranscript.SocketMessage]] = [:]
    private var nextConnection: UInt64 = 1
    private(set) var mismatches: [String] = []
    private(set) var comparedExchanges = 0
    private(set) var comparedSocketEvents = 0

    private enum SocketOutput {
        case message([UInt8])
        case ping
        case pong([UInt8])
        case close(UInt16)
        case end
    }

    static let relevantHeaders = [
        "Content-Type", "Cache-Control", "X-Carrier-Mode", "X-Down-Cursor", "X-Up-Ack",
        "X-Lane-Closed",
        "Retry-After", "Sec-WebSocket-Protocol",
    ]

    /// The recording relay: host proxy.example.com and one profile per carrier (README).
    static func configuration(longPollMilliseconds: UInt64) throws -> TestRelayConfiguration {
        var limits = RelayLimits()
        limits.longPoll = .milliseconds(Int64(longPollMilliseconds))
        let profiles: [(String, CarrierMode)] = [
            ("000102030405060708090a0b0c0d0e0f", .https),
            ("dd000102030405060708090a0b0c0d0e0f", .httpsLanes),
            ("101112131415161718191a1b1c1d1e1f", .websocket),
            ("202122232425262728292a2b2c2d2e2f", .websocketLanes),
        ]
        return TestRelayConfiguration(
            host: try RelayHost("proxy.example.com"),
            profiles: try profiles.map {
                RelayProfile(secret: try ProxySecret(parsing: $0.0), carrierMode: $0.1)
            },
            limits: limits)
    }

    init(_ transcript: RelayTranscript, seed: UInt64 = 1) throws {
        self.transcript = transcript
        engine = RelayEngine(
            configuration: try Self.configuration(
                longPollMilliseconds: transcript.longPollMilliseconds),
            random: SplitMix64(seed: seed))
    }

    mutating func run() {
        for event in transcript.events {
            switch event {
            case .exchange(let exchange):
                advance(to: exchange.start)
                send(exchange)
            case .message(let message):
                advance(to: message.time)
                if message.fromClient {
                    receive(message)
                } else {
                    expected[message.socket, default: []].append(message)
                }
            }
        }
        if let last = pending.values.map({ $0.start + $0.elapsed }).max() { advance(to: last) }
        for exchange in pending.values.sorted(by: { $0.step < $1.step }) {
            mismatches.append("step \(exchange.step) (\(exchange.label)): never answered")
        }
        compareSockets()
    }

    // MARK: - Driving the engine

    private mutating func advance(to milliseconds: UInt64) {
        now = max(now, .milliseconds(milliseconds))
        perform(engine.tick(now: now))
    }

    private mutating func send(_ exchange: RelayTranscript.Exchange) {
        let connection = RelayConnectionID(nextConnection)
        nextConnection += 1
        if let socket = exchange.socket { sockets[socket] = connection }
        pending[connection] = exchange
        let request = RelayRequest(
            method: exchange.method, rawTarget: substitute(exchange.path),
            headers: exchange.headers.map { (name: $0.name, value: substitute($0.value)) },
            body: exchange.body)
        perform(engine.handle(request, connection: connection, now: now))
    }

    private mutating func receive(_ message: RelayTranscript.SocketMessage) {
        guard let connection = sockets[message.socket] else {
            mismatches.append("step \(message.step): no socket \(message.socket)")
            return
        }
        let inbound: WebSocketInbound
        switch message.opcode {
        case "binary": inbound = .binary(message.payload)
        case "text": inbound = .text
        case "ping": inbound = .ping(message.payload)
        case "pong": inbound = .pong
        case "close": inbound = .close
        default:
            mismatches.append(
                "step \(message.step): cannot replay client opcode \(message.opcode ?? "none")")
            return
        }
        perform(engine.webSocketReceived(inbound, connection: connection, now: now))
    }

    /// Performs actions; backend events they cause are fed back in FIFO order.
    private mutating func perform(_ actions: [RelayAction]) {
        dispatch(actions)
        while let event = backends.nextEvent() {
            switch event {
            case .connected(let id):
                dispatch(engine.backendConnected(id, now: now))
            case .drained(let id, let count):
                if backends.isConnected(id) {
                    dispatch(engine.backendDrained(count, backend: id, now: now))
                }
            case .readable(let id):
                while let read = backends.read(id) {
                    switch read {
                    case .bytes(let bytes):
                        dispatch(engine.backendReceived(bytes, from: id, now: now))
                    case .end: dispatch(engine.backendEnded(id, now: now))
                    }
                }
            }
        }
    }

    private mutating func dispatch(_ actions: [RelayAction]) {
        for action in actions {
            switch action {
            case .respond(let connection, let response),
                .acceptWebSocket(let connection, let response):
                answered(connection, response)
            case .resetConnection(let connection):
                mismatches.append("\(connection) was reset")
            case .sendMessage(let connection, let bytes):
                sent[connection, default: []].append(.message(bytes))
            case .sendPing(let connection):
                sent[connection, default: []].append(.ping)
            case .sendPong(let connection, let payload):
                sent[connection, default: []].append(.pong(payload))
            case .closeWebSocket(let connection, let code):
                sent[connection, default: []] += [.close(code), .end]
            case .dropConnection(let connection):
                sent[connection, default: []].append(.end)
            case .park:
                break
            default:
                backends.perform(action)
            }
        }
    }

    // MARK: - Comparing

    private func substitute(_ text: String) -> String {
        var text = text
        for (recorded, role) in transcript.roleOfRecordedValue where text.contains(recorded) {
            if let ours = roles[role] { text = text.replacingOccurrences(of: recorded, with: ours) }
        }
        return text
    }

    private mutating func learn(_ role: String, _ value: String?, step: Int) {
        guard let value else { return mismatches.append("step \(step): no value for \(role)") }
        if let known = roles[role] {
            if known != value {
                mismatches.append("step \(step): \(role) differs from the one issued before")
            }
        } else {
            roles[role] = value
        }
    }

    private mutating func answered(_ connection: RelayConnectionID, _ response: RelayResponse) {
        guard let exchange = pending.removeValue(forKey: connection) else {
            return mismatches.append("\(connection): response without a request")
        }
        comparedExchanges += 1
        let step = "step \(exchange.step) (\(exchange.label))"
        if response.status != exchange.status {
            mismatches.append("\(step): status \(response.status), recorded \(exchange.status)")
            return
        }
        let waited = now.nanoseconds / 1_000_000 - exchange.start
        if (exchange.elapsed >= 2500) != (waited >= 2500) {
            mismatches.append(
                "\(step): answered after \(waited) ms, recorded \(exchange.elapsed) ms")
        }
        let isPage = response.value(of: "Content-Type")?.hasPrefix("text/html") == true
        let page = isPage ? String(decoding: response.body, as: UTF8.self) : ""
        for (location, role) in exchange.responseVariables {
            switch location {
            case "response.headers.X-Session-Token":
                learn(role, response.value(of: "X-Session-Token"), step: exchange.step)
            case "response.extracted.const_statement":
                let bootstrap = page.firstRange(of: "bootstrap=\"").map {
                    String(page[$0.upperBound...].prefix(43))
                }
                learn(role, bootstrap, step: exchange.step)
            default:
                break
            }
        }
        let recordedHeader = { (name: String) in
            exchange.responseHeaders.first { $0.name.lowercased() == name.lowercased() }?.value
        }
        for name in Self.relevantHeaders {
            let wanted = recordedHeader(name).map(substitute)
            if response.value(of: name) != wanted {
                mismatches.append(
                    "\(step): \(name) is \(response.value(of: name) ?? "absent"), recorded \(wanted ?? "absent")"
                )
            }
        }
        if (response.value(of: "X-Session-Token") == nil)
            != (recordedHeader("X-Session-Token") == nil)
        {
            mismatches.append("\(step): X-Session-Token presence differs")
        }
        if let statement = exchange.constStatement, !page.contains(substitute(statement)) {
            mismatches.append("\(step): bridge page lacks the const statement")
        }
        if let statement = exchange.batchStatement, !page.contains(statement) {
            mismatches.append("\(step): bridge page lacks the batch statement")
        }
        if let frames = exchange.responseFrames {
            compare(response.body, frames, step)
        } else if exchange.status == 200,
            response.value(of: "Content-Type") == "application/octet-stream"
        {
            mismatches.append("\(step): unexpected frame body")
        }
    }

    private mutating func compare(
        _ body: [UInt8], _ wanted: [RelayTranscript.ExpectedFrame], _ step: String
    ) {
        let frames: [Frame]
        do {
            frames = try FrameBatch.decode(body[...], direction: .relayToClient)
        } catch {
            return mismatches.append("\(step): batch does not decode: \(error)")
        }
        let ours = frames.map { "\($0.type.name)(\($0.stream), \($0.payloadLength) B)" }
        guard frames.count == wanted.count else {
            return mismatches.append("\(step): frames \(ours), recorded \(wanted)")
        }
        for (frame, recorded) in zip(frames, wanted) {
            let payload = Array(frame.encoded.dropFirst(Frame.headerLength))
            var delta: UInt32?
            if case .window(_, let d) = frame { delta = d }
            let same =
                frame.type.rawValue == recorded.typeCode && frame.stream.rawValue == recorded.stream
                && payload.count == recorded.payloadLength && delta == recorded.windowDelta
                && (recorded.isWholePayload
                    ? payload == recorded.payloadPrefix
                    : payload.starts(with: recorded.payloadPrefix))
            if !same { mismatches.append("\(step): frames \(ours), recorded \(wanted)") }
        }
    }

    private mutating func compareSockets() {
        for (name, messages) in expected.sorted(by: { $0.key < $1.key }) {
            let outputs = sockets[name].flatMap { sent[$0] } ?? []
            if outputs.count != messages.count {
                mismatches.append(
                    "socket \(name): sent \(outputs.count) events, recorded \(messages.count)")
            }
            for (output, message) in zip(outputs, messages) {
                comparedSocketEvents += 1
                let step = "step \(message.step) (socket \(name))"
                switch (output, message.opcode) {
                case (.message(let bytes), "binary"):
                    compare(bytes, message.frames ?? [], step)
                case (.ping, "ping"), (.end, nil):
                    break
                case (.pong(let payload), "pong"):
                    if payload != message.payload {
                        mismatches.append("\(step): pong payload differs")
                    }
                case (.close(let code), "close"):
                    if Int(code) != message.closeCode {
                        mismatches.append("\(step): close code \(code)")
                    }
                default:
                    mismatches.append(
                        "\(step): sent \(output), recorded \(message.opcode ?? "TCP end")")
                }
            }
        }
        for (name, connection) in sockets
        where expected[name] == nil && !(sent[connection] ?? []).isEmpty {
            mismatches.append("socket \(name): sent events the recording does not have")
        }
    }
}
