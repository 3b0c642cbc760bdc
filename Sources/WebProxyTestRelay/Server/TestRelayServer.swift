import WebProxyCore
import WebProxyNet

/// The network shell of the test relay: runs a `RelayEngine` over HTTPS/1.1 and WebSockets on
/// one `EventLoop`, dials the profiles' backends over TCP and arms one timer for `tick`.
///
/// Everything except the `execute`-hopping fault methods must be used on the loop thread;
/// that confinement is why the class can be `@unchecked Sendable`.
public final class TestRelayServer: @unchecked Sendable {
    /// How long a backend dial may take before `backendDialFailed`.
    public static let backendDialTimeout: Duration = .seconds(5)

    /// The loop the relay lives on.
    public let loop: EventLoop
    /// The bound listening address (with the kernel's port when bound to port 0).
    public let localAddress: SocketAddress

    private var engine: RelayEngine
    private let backends: [SocketAddress]
    private var http: HTTPServer?
    private var nextConnection: UInt64 = 1
    private var responders: [RelayConnectionID: HTTPResponder] = [:]
    private var webSocketKeys: [RelayConnectionID: String] = [:]
    private var sockets: [RelayConnectionID: WebSocketEndpoint] = [:]
    private var socketIDs: [ObjectIdentifier: RelayConnectionID] = [:]
    /// Messages waiting for a socket's send queue to drain, in order. The engine bounds them
    /// (stream windows, pending budget), as a real relay's buffered transport is bounded.
    private var socketBacklogs: [RelayConnectionID: [[UInt8]]] = [:]
    /// Endpoints we closed ourselves, kept alive until their close handshake ends.
    private var closingSockets: [ObjectIdentifier: WebSocketEndpoint] = [:]
    private var backendLinks: [BackendID: BackendLink] = [:]
    private var backendIDs: [ObjectIdentifier: BackendID] = [:]
    private var tickTimer: (deadline: RelayInstant, id: TimerID)?
    /// Events raised while actions run wait here, so the engine is never re-entered.
    private var pendingEvents: [(inout RelayEngine, RelayInstant) -> [RelayAction]] = []
    private var running = false
    private var stopped = false
    /// Responses to drop after the engine applied their request, by request path suffix.
    private var appliedResponseDrops: [String: Int] = [:]
    /// Raw answers to send instead of the engine's, after it applied the request, by path suffix.
    private var rawResponses: [String: RawAnswer] = [:]
    /// Raw answers to send instead of handing the request to the engine at all, by path suffix.
    private var unappliedAnswers: [String: RawAnswer] = [:]
    /// The request path of each HTTP connection awaiting an answer, while drops are armed.
    private var requestPaths: [RelayConnectionID: String] = [:]

    /// Bytes to answer the next `count` matching requests with.
    private typealias RawAnswer = (count: Int, bytes: [UInt8])

    /// One backend connection: dialing (writes and pauses remembered) or open.
    private final class BackendLink {
        var attempt: ConnectAttempt?
        var connection: TCPConnection?
        var queuedWrites: [[UInt8]] = []
        var paused = false
        /// Bytes handed to `write` and bytes already reported as drained.
        var written = 0
        var reported = 0
    }

    private init(
        loop: EventLoop, engine: RelayEngine, backends: [SocketAddress], localAddress: SocketAddress
    ) {
        self.loop = loop
        self.engine = engine
        self.backends = backends
        self.localAddress = localAddress
    }

    /// Starts a relay for `configuration` on `listen` (call on the loop thread). `backends[i]`
    /// is where streams of profile `i` are dialed; `tls` is a server context.
    public static func start(
        on loop: EventLoop, listen: SocketAddress, configuration: TestRelayConfiguration,
        backends: [SocketAddress], tls: TLSContext,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        httpConfiguration: HTTPServer.Configuration? = nil
    ) throws(NetError) -> TestRelayServer {
        precondition(loop.inEventLoop, "TestRelayServer is used on its loop only")
        var httpSettings = httpConfiguration ?? HTTPServer.Configuration()
        if httpConfiguration == nil {
            // One byte over the engine's limit, so the engine (not the parser's 413) answers
            // a body just over it, as the reference relay does.
            httpSettings.parserLimits.maxBodyBytes = configuration.limits.maxBodyBytes + 1
        }
        let box = ServerBox()
        let http = try HTTPServer.start(
            on: listen, context: tls, loop: loop, configuration: httpSettings
        ) { request, responder in
            box.server?.received(request, responder: responder)
        }
        guard let bound = http.localAddress else {
            http.close()
            throw NetError(.closed, call: "listen", message: "the relay listener has no address")
        }
        let server = TestRelayServer(
            loop: loop, engine: RelayEngine(configuration: configuration, random: random),
            backends: backends, localAddress: bound)
        server.http = http
        box.server = server
        return server
    }

    /// The bound port.
    public var port: UInt16 { localAddress.port }

    /// Stops listening and closes every client and backend connection (loop thread).
    public func stop() {
        precondition(loop.inEventLoop, "TestRelayServer is used on its loop only")
        guard !stopped else { return }
        stopped = true
        http?.close()
        http = nil
        if let tickTimer { loop.cancelTimer(tickTimer.id) }
        tickTimer = nil
        for endpoint in sockets.values { endpoint.abort() }
        for endpoint in closingSockets.values { endpoint.abort() }
        sockets = [:]
        socketIDs = [:]
        socketBacklogs = [:]
        closingSockets = [:]
        for link in backendLinks.values {
            link.attempt?.cancel()
            link.connection?.abort()
        }
        backendLinks = [:]
        backendIDs = [:]
        responders = [:]
        webSocketKeys = [:]
        requestPaths = [:]
        pendingEvents = []
    }

    // MARK: - Faults and inspection

    /// The engine's faults (loop thread).
    public var faults: RelayFaults {
        get { engine.faults }
        set { engine.faults = newValue }
    }

    /// Live sessions (loop thread).
    public var sessionCount: Int { engine.sessionCount }
    /// Each live session's open streams, fewest first (loop thread).
    public var streamsPerSession: [Int] { engine.streamsPerSession }
    /// TLS connections clients have opened to the relay so far.
    public var connectionsAccepted: Int { http?.connectionsAccepted ?? 0 }
    /// Says GOAWAY on every HTTP/2 connection, as a front restarting gracefully does.
    public func goAwayHTTP2Connections() { http?.goAwayHTTP2Connections() }

    /// Every session's state in counts (loop thread).
    public var stateSummary: String { engine.stateSummary }

    /// DATA payload bytes that arrived from clients in `/up` bodies and WebSocket messages,
    /// counted before the engine applies them (replayed bodies count again; loop thread).
    public private(set) var uplinkDataBytes = 0

    /// TLS handshakes with clients that failed (loop thread).
    public var failedHandshakeCount: Int { http?.failedHandshakes ?? 0 }

    /// Armed response drops not yet used, by path suffix (loop thread).
    public var pendingAppliedResponseDrops: [String: Int] { appliedResponseDrops }

    /// From any thread: the next `count` API requests whose path ends with `pathSuffix`
    /// (such as "/up" or "/down") are applied by the engine, then their connection is reset
    /// instead of answered — `dropResponses` aimed at one endpoint.
    public func dropAppliedResponses(_ count: Int, pathSuffix: String) {
        arm { [self] in appliedResponseDrops[pathSuffix, default: 0] += count }
    }

    /// Armed raw answers not yet used, by path suffix (loop thread).
    public var pendingRawResponses: [String: Int] { rawResponses.mapValues(\.count) }

    /// From any thread: the next `count` API requests whose path ends with `pathSuffix` are
    /// applied by the engine, then answered with `bytes` as they are (garbage, an oversized
    /// head or body) and their connection closed — a relay that answers nonsense. A count of
    /// 0 disarms.
    public func replaceAppliedResponses(_ count: Int, pathSuffix: String, with bytes: [UInt8] = []) {
        arm { [self] in rawResponses[pathSuffix] = count > 0 ? (count, bytes) : nil }
    }

    /// Armed unapplied raw answers not yet used, by path suffix (loop thread).
    public var pendingUnappliedAnswers: [String: Int] { unappliedAnswers.mapValues(\.count) }

    /// From any thread: the next `count` requests whose path (the target without its query)
    /// ends with `pathSuffix` — "/" for the bridge page, "/session", "/ws" for WebSocket
    /// upgrades — never reach the engine: they are answered with `bytes` as they are and
    /// their connection closed, so even the bootstrap or an upgrade can get nonsense. A
    /// count of 0 disarms.
    public func answerUnapplied(_ count: Int, pathSuffix: String, with bytes: [UInt8] = []) {
        arm { [self] in unappliedAnswers[pathSuffix] = count > 0 ? (count, bytes) : nil }
    }

    /// Changes the faults from any thread (applied on the loop).
    public func updateFaults(_ change: @escaping @Sendable (inout RelayFaults) -> Void) {
        arm { [self] in change(&engine.faults) }
    }

    /// Runs a fault change now when called on the loop thread (from a test's hop onto the
    /// loop, so the fault is armed before the test goes on), else hops onto the loop.
    private func arm(_ change: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { change() } else { loop.execute(change) }
    }

    /// Restarts the relay (every session forgotten) from any thread.
    public func restart() {
        loop.execute { [self] in
            guard !stopped else { return }
            dispatch { engine, now in engine.restart(now: now) }
        }
    }

    /// Ends the session holding `token` from any thread, as an idle expiry would.
    public func expireSession(token: String) {
        loop.execute { [self] in
            guard !stopped else { return }
            dispatch { engine, now in engine.expireSession(token: token, now: now) }
        }
    }

    /// Ends every session carrying `count` streams from any thread, as an idle expiry would.
    public func expireSessions(carrying count: Int) {
        loop.execute { [self] in
            guard !stopped else { return }
            dispatch { engine, now in engine.expireSessions(carrying: count, now: now) }
        }
    }

    // MARK: - Events in

    private var now: RelayInstant { RelayInstant(nanoseconds: loop.now.nanoseconds) }

    /// Runs one engine event and its actions; events raised meanwhile run after it, in order.
    private func dispatch(_ event: @escaping (inout RelayEngine, RelayInstant) -> [RelayAction]) {
        guard !stopped else { return }
        pendingEvents.append(event)
        guard !running else { return }
        running = true
        while !pendingEvents.isEmpty, !stopped {
            let next = pendingEvents.removeFirst()
            let actions = next(&engine, now)
            for action in actions { perform(action) }
        }
        running = false
        rearmTick()
    }

    private func received(_ request: HTTPServerRequest, responder: HTTPResponder) {
        guard !stopped else {
            responder.abortConnection()
            return
        }
        let path = String(request.head.target.prefix { $0 != "?" })
        if let raw = Self.take(from: &unappliedAnswers, for: path) {
            responder.respond(rawBytes: raw, keepAlive: false)
            return
        }
        let id = RelayConnectionID(nextConnection)
        nextConnection += 1
        responders[id] = responder
        if let key = request.head.headers.first("Sec-WebSocket-Key") { webSocketKeys[id] = key }
        if !appliedResponseDrops.isEmpty || !rawResponses.isEmpty { requestPaths[id] = path }
        responder.onConnectionClosed = { [weak self] in
            guard let self, responders.removeValue(forKey: id) != nil else { return }
            webSocketKeys[id] = nil
            requestPaths[id] = nil
            dispatch { engine, now in engine.connectionClosed(id, now: now) }
        }
        if request.head.method == "POST", request.head.target.hasSuffix("/up") { countUplinkData(request.body) }
        let relayRequest = RelayRequest(
            method: request.head.method, rawTarget: request.head.target,
            headers: request.head.headers.map { (name: $0.name, value: $0.value) },
            body: request.body)
        dispatch { engine, now in engine.handle(relayRequest, connection: id, now: now) }
    }

    private func rearmTick() {
        guard !stopped else { return }
        let deadline = engine.nextDeadline
        if let tickTimer, tickTimer.deadline == deadline { return }
        if let tickTimer { loop.cancelTimer(tickTimer.id) }
        tickTimer = nil
        guard let deadline else { return }
        let id = loop.scheduleTimer(at: MonotonicTime(nanoseconds: deadline.nanoseconds)) {
            [weak self] in
            guard let self else { return }
            tickTimer = nil
            dispatch { engine, now in engine.tick(now: now) }
        }
        tickTimer = (deadline, id)
    }

    // MARK: - Actions out

    private func perform(_ action: RelayAction) {
        switch action {
        case .respond(let id, let response):
            guard let responder = responders.removeValue(forKey: id) else { return }
            webSocketKeys[id] = nil
            responder.onConnectionClosed = nil
            let path = requestPaths.removeValue(forKey: id)
            if let path, takeAppliedResponseDrop(path) {
                responder.abortConnection()
                return
            }
            if let path, let raw = Self.take(from: &rawResponses, for: path) {
                responder.respond(rawBytes: raw, keepAlive: false)
                return
            }
            let delay = engine.faults.responseDelay
            if delay > .zero {
                loop.scheduleTimer(after: delay) { Self.write(response, to: responder) }
            } else {
                Self.write(response, to: responder)
            }
        case .park:
            break  // The responder stays in `responders` until an answer or the tick.
        case .acceptWebSocket(let id, let response):
            acceptWebSocket(id, response)
        case .resetConnection(let id):
            webSocketKeys[id] = nil
            requestPaths[id] = nil
            if let responder = responders.removeValue(forKey: id) {
                responder.abortConnection()
            } else if let endpoint = forgetSocket(id) {
                endpoint.abort()
            }
        case .sendMessage(let id, let message):
            guard sockets[id] != nil else { return }
            socketBacklogs[id, default: []].append(message)
            flushBacklog(id)
        case .sendPing(let id):
            sockets[id]?.sendPing()
        case .sendPong:
            break  // WebSocketEndpoint answered the Ping already, before reporting it.
        case .closeWebSocket(let id, let code):
            forgetSocket(id)?.close(code: WebSocketCloseCode(rawValue: code))
        case .dropConnection(let id):
            webSocketKeys[id] = nil
            requestPaths[id] = nil
            if let responder = responders.removeValue(forKey: id) {
                responder.dropConnection()
            } else if let endpoint = forgetSocket(id) {
                endpoint.dropConnection()
            }
        case .dialBackend(let backend, let profile):
            dial(backend, profile: profile)
        case .writeBackend(let backend, let bytes):
            writeBackend(backend, bytes)
        case .pauseBackend(let backend):
            guard let link = backendLinks[backend] else { return }
            link.paused = true
            link.connection?.pauseReading()
        case .resumeBackend(let backend):
            guard let link = backendLinks[backend] else { return }
            link.paused = false
            link.connection?.resumeReading()
        case .closeBackend(let backend):
            guard let link = backendLinks.removeValue(forKey: backend) else { return }
            link.attempt?.cancel()
            if let connection = link.connection {
                backendIDs[ObjectIdentifier(connection)] = nil
                connection.close()
            }
        }
    }

    /// Adds the DATA payload bytes of a client batch to `uplinkDataBytes` (malformed batches
    /// count up to the damage; the engine judges them).
    private func countUplinkData(_ batch: [UInt8]) {
        var decoder = FrameDecoder(direction: .clientToRelay)
        decoder.append(batch)
        while let frame = try? decoder.nextFrame() {
            if case .data(_, let payload) = frame { uplinkDataBytes += payload.count }
        }
    }

    /// Whether the answer to a request for `path` is one of the armed drops (and uses it up).
    private func takeAppliedResponseDrop(_ path: String) -> Bool {
        guard let suffix = appliedResponseDrops.keys.first(where: { path.hasSuffix($0) }),
            let left = appliedResponseDrops[suffix]
        else { return false }
        appliedResponseDrops[suffix] = left > 1 ? left - 1 : nil
        return true
    }

    /// The raw answer armed in `answers` for a request for `path`, if any (and uses it up).
    private static func take(from answers: inout [String: RawAnswer], for path: String) -> [UInt8]? {
        guard let suffix = answers.keys.first(where: { path.hasSuffix($0) }), let armed = answers[suffix]
        else { return nil }
        answers[suffix] = armed.count > 1 ? (armed.count - 1, armed.bytes) : nil
        return armed.bytes
    }

    private static func write(_ response: RelayResponse, to responder: HTTPResponder) {
        let head = HTTPResponseHead(
            status: response.status, reason: response.reason,
            headers: HTTPHeaders(response.headers.map { ($0.name, $0.value) }))
        // HTTPResponder adds Content-Length (none for 1xx/204/304).
        if !responder.respond(head, body: response.body) { responder.abortConnection() }
    }

    // MARK: - WebSockets

    private func acceptWebSocket(_ id: RelayConnectionID, _ response: RelayResponse) {
        guard let responder = responders.removeValue(forKey: id) else { return }
        responder.onConnectionClosed = nil
        requestPaths[id] = nil
        guard let key = webSocketKeys.removeValue(forKey: id) else {
            responder.abortConnection()
            dispatch { engine, now in engine.connectionClosed(id, now: now) }
            return
        }
        var head = WebSocketHandshake.upgradeResponse(key: key, subprotocol: nil)
        head.reason = response.reason
        let added = ["upgrade", "connection", "sec-websocket-accept"]
        for field in response.headers where !added.contains(field.name.lowercased()) {
            head.headers.append(name: field.name, value: field.value)
        }
        let limit = engine.configuration.limits.maxBodyBytes
        guard let endpoint = responder.upgradeToWebSocket(response101: head, maxMessageBytes: limit)
        else {
            responder.abortConnection()
            dispatch { engine, now in engine.connectionClosed(id, now: now) }
            return
        }
        sockets[id] = endpoint
        socketIDs[ObjectIdentifier(endpoint)] = id
        endpoint.delegate = self
    }

    /// Sends what waits for `id` while its send queue takes it; a slow reader keeps the rest
    /// until `webSocketDidDrain`. A socket whose client sent Close takes nothing more: the
    /// backlog is dropped, and the messages that came before the Close are still delivered.
    private func flushBacklog(_ id: RelayConnectionID) {
        guard let endpoint = sockets[id] else {
            socketBacklogs[id] = nil
            return
        }
        while let next = socketBacklogs[id]?.first {
            do {
                try endpoint.send(next)
            } catch {
                if case .io(let failure) = error {
                    if failure.code == .writeBufferFull, endpoint.state == .open { return }
                    if failure.code == .closed {
                        socketBacklogs[id] = nil
                        return
                    }
                }
                forgetSocket(id)?.abort()
                dispatch { engine, now in engine.connectionClosed(id, now: now) }
                return
            }
            socketBacklogs[id]?.removeFirst()
        }
        socketBacklogs[id] = nil
    }

    /// Unbinds `id`'s endpoint (later events of it are ignored) and keeps it alive while closing.
    @discardableResult
    private func forgetSocket(_ id: RelayConnectionID) -> WebSocketEndpoint? {
        socketBacklogs[id] = nil
        guard let endpoint = sockets.removeValue(forKey: id) else { return nil }
        socketIDs[ObjectIdentifier(endpoint)] = nil
        closingSockets[ObjectIdentifier(endpoint)] = endpoint
        return endpoint
    }

    // MARK: - Backends

    private func dial(_ backend: BackendID, profile: Int) {
        guard backends.indices.contains(profile) else {
            dispatch { engine, now in engine.backendDialFailed(backend, now: now) }
            return
        }
        let link = BackendLink()
        backendLinks[backend] = link
        link.attempt = TCPConnection.connect(
            to: backends[profile], on: loop, timeout: Self.backendDialTimeout
        ) { [weak self] result in
            guard let self, backendLinks[backend] === link else { return }
            link.attempt = nil
            switch result {
            case .failure:
                backendLinks[backend] = nil
                dispatch { engine, now in engine.backendDialFailed(backend, now: now) }
            case .success(let connection):
                connected(connection, link: link, backend: backend)
            }
        }
    }

    private func connected(_ connection: TCPConnection, link: BackendLink, backend: BackendID) {
        // A queue notice at every drain to empty, so `backendDrained` is never withheld.
        let window = engine.configuration.limits.streamWindow
        connection.writeLimits = TCPConnection.WriteLimits(
            highWatermark: 1, lowWatermark: 0,
            limit: max(TCPConnection.WriteLimits.default.limit, window.multipliedReportingOverflow(by: 2).partialValue))
        link.connection = connection
        backendIDs[ObjectIdentifier(connection)] = backend
        if link.paused { connection.pauseReading() }
        dispatch { engine, now in engine.backendConnected(backend, now: now) }
        let queued = link.queuedWrites
        link.queuedWrites = []
        for bytes in queued { writeBackend(backend, bytes) }
        connection.delegate = self
    }

    private func writeBackend(_ backend: BackendID, _ bytes: [UInt8]) {
        guard let link = backendLinks[backend] else { return }
        guard let connection = link.connection else {
            link.queuedWrites.append(bytes)
            return
        }
        do {
            try connection.write(bytes)
        } catch {
            backendFailed(backend, connection: connection)
            return
        }
        link.written += bytes.count
        reportDrained(backend, link: link)
    }

    /// Reports the bytes the kernel took since the last report.
    private func reportDrained(_ backend: BackendID, link: BackendLink) {
        guard let connection = link.connection else { return }
        let accepted = link.written - connection.queuedWriteBytes - link.reported
        guard accepted > 0 else { return }
        link.reported += accepted
        dispatch { engine, now in engine.backendDrained(accepted, backend: backend, now: now) }
    }

    private func backendFailed(_ backend: BackendID, connection: TCPConnection) {
        guard backendLinks.removeValue(forKey: backend) != nil else { return }
        backendIDs[ObjectIdentifier(connection)] = nil
        connection.abort()
        dispatch { engine, now in engine.backendEnded(backend, now: now) }
    }
}

/// Lets the HTTP handler reach the server created after the listener.
private final class ServerBox {
    var server: TestRelayServer?
}

extension TestRelayServer: WebSocketEndpointDelegate {
    public func webSocket(_ endpoint: WebSocketEndpoint, didReceive message: [UInt8]) {
        guard let id = socketIDs[ObjectIdentifier(endpoint)] else { return }
        countUplinkData(message)
        dispatch { engine, now in engine.webSocketReceived(.binary(message), connection: id, now: now) }
    }

    public func webSocketDidDrain(_ endpoint: WebSocketEndpoint) {
        guard let id = socketIDs[ObjectIdentifier(endpoint)] else { return }
        flushBacklog(id)
    }

    public func webSocket(_ endpoint: WebSocketEndpoint, didReceivePing payload: [UInt8]) {
        guard let id = socketIDs[ObjectIdentifier(endpoint)] else { return }
        dispatch { engine, now in engine.webSocketReceived(.ping(payload), connection: id, now: now) }
    }

    public func webSocket(_ endpoint: WebSocketEndpoint, didReceivePong payload: [UInt8]) {
        guard let id = socketIDs[ObjectIdentifier(endpoint)] else { return }
        dispatch { engine, now in engine.webSocketReceived(.pong, connection: id, now: now) }
    }

    public func webSocket(_ endpoint: WebSocketEndpoint, didCloseWith outcome: WebSocketCloseOutcome) {
        let key = ObjectIdentifier(endpoint)
        closingSockets[key] = nil
        guard let id = socketIDs.removeValue(forKey: key) else { return }
        sockets[id] = nil
        socketBacklogs[id] = nil
        let inbound: WebSocketInbound? =
            switch outcome {
            case .clean: .close
            case .failed(.textMessage): .text
            case .failed(.messageTooBig): .tooLarge
            default: nil
            }
        if let inbound {
            dispatch { engine, now in engine.webSocketReceived(inbound, connection: id, now: now) }
        }
        dispatch { engine, now in engine.connectionClosed(id, now: now) }
    }
}

extension TestRelayServer: ByteStreamDelegate {
    public func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard let backend = backendIDs[ObjectIdentifier(connection)] else { return }
        let chunk = max(1, engine.configuration.limits.backendReadChunk)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            let piece = Array(bytes[offset..<end])
            offset = end
            dispatch { engine, now in engine.backendReceived(piece, from: backend, now: now) }
        }
    }

    public func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        guard let backend = backendIDs[ObjectIdentifier(connection)] else { return }
        dispatch { engine, now in engine.backendEnded(backend, now: now) }
    }

    public func streamDidBecomeWritable(_ connection: any ByteStream) {
        guard let backend = backendIDs[ObjectIdentifier(connection)],
            let link = backendLinks[backend]
        else { return }
        reportDrained(backend, link: link)
    }

    public func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        let key = ObjectIdentifier(connection)
        guard let backend = backendIDs.removeValue(forKey: key) else { return }
        guard backendLinks.removeValue(forKey: backend) != nil else { return }
        dispatch { engine, now in engine.backendEnded(backend, now: now) }
    }
}
