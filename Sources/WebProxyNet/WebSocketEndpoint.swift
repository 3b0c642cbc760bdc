/// Receives a `WebSocketEndpoint`'s events on its loop thread.
public protocol WebSocketEndpointDelegate: AnyObject {
    /// A complete binary message arrived.
    func webSocket(_ endpoint: WebSocketEndpoint, didReceive message: [UInt8])
    /// The peer sent a Ping, already answered with a Pong. Default: nothing.
    func webSocket(_ endpoint: WebSocketEndpoint, didReceivePing payload: [UInt8])
    /// The peer answered a Ping. Default: nothing.
    func webSocket(_ endpoint: WebSocketEndpoint, didReceivePong payload: [UInt8])
    /// The send queue drained after `isWritable` turned false. Default: nothing.
    func webSocketDidDrain(_ endpoint: WebSocketEndpoint)
    /// The last call, made exactly once: how the WebSocket ended. A transport that ended or
    /// failed without a close handshake (also after a local `dropConnection()` or `abort()`)
    /// is `.endOfStream`; `transportError` then says why, when there was an error.
    func webSocket(_ endpoint: WebSocketEndpoint, didCloseWith outcome: WebSocketCloseOutcome)
}

extension WebSocketEndpointDelegate {
    public func webSocket(_ endpoint: WebSocketEndpoint, didReceivePing payload: [UInt8]) {}
    public func webSocket(_ endpoint: WebSocketEndpoint, didReceivePong payload: [UInt8]) {}
    public func webSocketDidDrain(_ endpoint: WebSocketEndpoint) {}
}

/// An open WebSocket (client or server side) over a `ByteStream`: one binary message per
/// `send`, received messages up to the machine's cap, automatic Pongs (the delegate still
/// hears of each Ping), the close handshake
/// with a deadline, and an abrupt end reported as `.endOfStream`.
///
/// Nothing is read until a delegate is set, so no message is lost between the upgrade and
/// the owner taking over.
public final class WebSocketEndpoint: ByteStreamDelegate {
    /// Which end this is.
    public var role: WebSocketRole { machine.role }
    /// Receives messages and the close. Reading starts once it is set.
    public var delegate: (any WebSocketEndpointDelegate)? {
        didSet { startIfReady() }
    }
    /// How long `close(code:)` waits for the peer's Close before resetting TCP.
    public var closeTimeout: Duration
    /// The transport failure that ended the WebSocket, if any.
    public private(set) var transportError: TransportError?

    private let transport: any ByteStream
    private var machine: WebSocketConnection
    private var leftover: [UInt8]
    private var started = false
    private var finished = false
    private var closeTimer: TimerID?

    /// Whether the client's TLS handshake resumed an earlier session; false on a server's
    /// endpoint and without TLS.
    public let isSessionResumed: Bool

    init(
        transport: any ByteStream, isSessionResumed: Bool = false, machine: WebSocketConnection, leftover: [UInt8],
        closeTimeout: Duration
    ) {
        self.transport = transport
        self.isSessionResumed = isSessionResumed
        self.machine = machine
        self.leftover = leftover
        self.closeTimeout = closeTimeout
        transport.pauseReading()
        transport.delegate = self
    }

    /// The loop the endpoint lives on.
    public var loop: EventLoop { transport.loop }
    /// Open, closing (our Close sent) or closed.
    public var state: WebSocketConnectionState { machine.state }
    /// Bytes accepted by `send` and not yet taken by the kernel (TLS framing included).
    public var bufferedByteCount: Int { transport.queuedWriteBytes }
    /// False while `bufferedByteCount` is at or above the high watermark; wait for
    /// `webSocketDidDrain` before sending more.
    public var isWritable: Bool { transport.isWritable }
    /// The peer's address.
    public var remoteAddress: SocketAddress { transport.remoteAddress }

    /// Sends one binary message. Throws `.io(.closed)` once closing, `.io(.writeBufferFull)`
    /// (sending nothing) when the send queue limit would be passed. The peer's Close can
    /// arrive in the same read as the messages before it, so a delegate may get `.closed`
    /// while it is handed those messages: that is no reason to `abort()`, which would lose
    /// the messages still to come; they and `didCloseWith` follow.
    /// The message is framed in place (header written first, payload masked where it
    /// is), so handing over the only reference saves a copy.
    public func send(_ message: consuming [UInt8]) throws(TransportError) {
        transport.loop.preconditionInEventLoop()
        var payload = message
        guard !finished, let header = machine.sendBinaryInPlace(&payload) else {
            throw .io(NetError(.closed, call: "send", message: "the WebSocket is closing or closed"))
        }
        try transport.write(header, payload)
        transport.loop.tally.webSocketMessagesSent += 1
    }

    /// Sends one binary message (see `send(_:)`).
    public func send(_ message: ArraySlice<UInt8>) throws(TransportError) {
        transport.loop.preconditionInEventLoop()
        guard !finished, let frame = machine.sendBinary(message) else {
            throw .io(NetError(.closed, call: "send", message: "the WebSocket is closing or closed"))
        }
        try transport.write(frame)
        transport.loop.tally.webSocketMessagesSent += 1
    }

    /// Sends a Ping (at most 125 bytes of payload); false once closing or closed.
    @discardableResult
    public func sendPing(_ payload: [UInt8] = []) -> Bool {
        transport.loop.preconditionInEventLoop()
        guard payload.count <= 125, !finished, let frame = machine.sendPing(payload) else { return false }
        return (try? transport.write(frame)) != nil
    }

    /// Starts the close handshake: sends Close, then waits up to `closeTimeout` for the
    /// peer's Close (reported `.clean`) before resetting TCP (reported `.timedOut`).
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        transport.loop.preconditionInEventLoop()
        guard !finished, reason.utf8.count <= 123, let frame = machine.close(code: code, reason: reason) else {
            return
        }
        try? transport.write(frame)
        closeTimer = transport.loop.scheduleTimer(after: closeTimeout) { [self] in
            closeTimer = nil
            perform(machine.closeDeadlinePassed())
        }
    }

    /// Ends the stream now (FIN) without a Close frame or close_notify: the peer sees an
    /// abrupt end.
    public func dropConnection() {
        transport.loop.preconditionInEventLoop()
        guard !finished else { return }
        transport.drop()
        finish(.endOfStream)
    }

    /// Resets TCP (RST) without a Close frame.
    public func abort() {
        transport.loop.preconditionInEventLoop()
        guard !finished else { return }
        transport.abort()
        finish(.endOfStream)
    }

    // MARK: machine

    private func startIfReady() {
        guard !started, delegate != nil else { return }
        started = true
        transport.loop.enqueue { [self] in
            guard !finished else { return }
            if !leftover.isEmpty {
                let bytes = leftover
                leftover = []
                perform(machine.receive(bytes))
            }
            if !finished { transport.resumeReading() }
        }
    }

    private func perform(_ actions: [WebSocketAction]) {
        for action in actions {
            guard !finished else { return }
            switch action {
            case .write(let bytes):
                try? transport.write(bytes)
            case .message(let message):
                transport.loop.tally.webSocketMessagesReceived += 1
                delegate?.webSocket(self, didReceive: message)
            case .ping(let payload):
                delegate?.webSocket(self, didReceivePing: payload)
            case .pong(let payload):
                delegate?.webSocket(self, didReceivePong: payload)
            case .closed(let outcome):
                switch outcome {
                case .timedOut: transport.abort()
                default: transport.close()
                }
                finish(outcome)
            }
        }
    }

    private func finish(_ outcome: WebSocketCloseOutcome) {
        guard !finished else { return }
        finished = true
        if let closeTimer { transport.loop.cancelTimer(closeTimer) }
        closeTimer = nil
        let delegate = self.delegate
        self.delegate = nil
        delegate?.webSocket(self, didCloseWith: outcome)
    }

    // MARK: ByteStreamDelegate

    public func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        perform(machine.receive(plaintext))
    }

    public func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        perform(machine.receiveEndOfStream())
        transport.close()
    }

    public func streamDidBecomeWritable(_ connection: any ByteStream) {
        guard !finished else { return }
        delegate?.webSocketDidDrain(self)
    }

    public func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        transportError = error
        guard !finished else { return }
        perform(machine.receiveEndOfStream())
        finish(.endOfStream)
    }
}
