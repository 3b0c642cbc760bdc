/// A `TCPConnection` and a `TLSEngine` on one loop: a plaintext `ByteStream` (reads,
/// backpressure, writability, the peer's end, close).
///
/// Ciphertext goes from the loop's read buffer straight into the engine; plaintext is
/// decrypted into one buffer per connection and handed to the delegate. Writes are
/// encrypted from the caller's bytes while TCP is below its high watermark and copied into
/// a bounded queue only when it is not. Reading from the socket stops while the delegate
/// has paused or is not set, so ciphertext never piles up beyond one read.
public final class TLSConnection: ByteStream {
    private enum Phase {
        case handshaking
        case open
        case closed
    }

    /// The loop that owns the socket.
    public let loop: EventLoop
    /// The TLS state machine (negotiated ALPN, protocol version, peer certificate…).
    public let engine: TLSEngine
    /// Receives plaintext and the close. Setting it starts delivery.
    public var delegate: (any ByteStreamDelegate)? {
        didSet { scheduleDelivery() }
    }
    /// Bounds of the plaintext write queue (which counts what TCP still holds).
    public var writeLimits = TCPConnection.WriteLimits.default
    /// How long `close()` waits for queued bytes and the peer before resetting.
    public var closeTimeout: Duration = .seconds(5)

    private let tcp: TCPConnection
    private var phase = Phase.handshaking
    private var handshakeCompletion: ((Result<TLSConnection, TransportError>) -> Void)?
    private var handshakeTimer: TimerID?
    private var handshakeSilenceWatch: PathSilenceWatch?
    private var closeTimer: TimerID?
    private var failure: TransportError?
    private var readPaused = false
    private var endOfStreamDelivered = false
    private var deliveryScheduled = false
    private var closeRequested = false
    private var owesWritableNotice = false
    private var pending = ByteQueue()
    private var recordsReceived = TLSRecordCounter()
    private var recordsSent = TLSRecordCounter()
    private var plaintextBuffer: UnsafeMutableRawBufferPointer?

    /// Plaintext bytes decrypted per delegate call, at most.
    static let plaintextChunk = 32 * 1024
    /// Ciphertext moved from the engine to TCP per write call, at most.
    static let ciphertextChunk = 64 * 1024
    /// Plaintext encrypted per engine call, at most.
    static let encryptChunk = 64 * 1024

    private init(tcp: TCPConnection, engine: TLSEngine) {
        self.loop = tcp.loop
        self.tcp = tcp
        self.engine = engine
    }

    deinit {
        plaintextBuffer?.deallocate()
    }

    /// Starts a client handshake on `tcp`, verifying and sending `serverName` as SNI, and
    /// offering `alpnProtocols` instead of the context's ALPN list when given.
    /// `completion` runs once on the loop, never before this returns: with this connection
    /// once the handshake is done, or the failure (`.tls` with a timeout after
    /// `handshakeTimeout`, or once the path moved nothing for `handshakeSilence`).
    /// `abort()` abandons it (the completion then reports the close).
    public static func startClient(
        over tcp: TCPConnection, context: TLSContext, serverName: String, alpnProtocols: [String]? = nil,
        handshakeTimeout: Duration = .seconds(10), handshakeSilence: Duration? = nil,
        completion: @escaping (Result<TLSConnection, TransportError>) -> Void
    ) throws(TLSError) -> TLSConnection {
        let engine = try TLSEngine(clientContext: context, serverName: serverName, alpnProtocols: alpnProtocols)
        let connection = TLSConnection(tcp: tcp, engine: engine)
        connection.start(timeout: handshakeTimeout, silence: handshakeSilence, completion: completion)
        return connection
    }

    /// Starts a server handshake on an accepted `tcp` (see `startClient`).
    public static func startServer(
        over tcp: TCPConnection, context: TLSContext, handshakeTimeout: Duration = .seconds(10),
        completion: @escaping (Result<TLSConnection, TransportError>) -> Void
    ) throws(TLSError) -> TLSConnection {
        let engine = try TLSEngine(serverContext: context)
        let connection = TLSConnection(tcp: tcp, engine: engine)
        connection.start(timeout: handshakeTimeout, silence: nil, completion: completion)
        return connection
    }

    // MARK: public operations

    /// The peer's address.
    public var remoteAddress: SocketAddress { tcp.remoteAddress }

    /// The TCP connection's `pathProgress`.
    public var pathProgress: UInt64? { tcp.pathProgress }

    /// False once closing or closed.
    public var isOpen: Bool { phase == .open && !closeRequested && tcp.isOpen }

    /// Plaintext queued here plus ciphertext TCP has not sent yet.
    public var queuedWriteBytes: Int {
        pending.count + engine.pendingCiphertextCount + tcp.queuedWriteBytes
    }

    /// True while `queuedWriteBytes` is below the high watermark.
    public var isWritable: Bool { queuedWriteBytes < writeLimits.highWatermark }

    /// Encrypts and sends `plaintext`; what TCP cannot take now is copied and queued.
    /// Throws `.io(.closed)` once closing, `.io(.writeBufferFull)` (taking nothing) past
    /// `writeLimits.limit`.
    public func write(_ plaintext: UnsafeRawBufferPointer) throws(TransportError) {
        loop.preconditionInEventLoop()
        guard phase == .open, !closeRequested, tcp.isOpen else {
            throw .io(NetError(.closed, call: "write", message: "connection is closed for writing"))
        }
        guard plaintext.count <= writeLimits.limit - queuedWriteBytes else {
            throw .io(NetError(.writeBufferFull, call: "write", message: "write queue limit reached"))
        }
        var offset = 0
        if pending.isEmpty {
            do {
                while offset < plaintext.count && tcp.isOpen && tcp.isWritable {
                    let end = min(plaintext.count, offset + Self.encryptChunk)
                    let consumed = try engine.write(UnsafeRawBufferPointer(rebasing: plaintext[offset..<end]))
                    offset += consumed
                    flushCiphertext()
                    if consumed == 0 { break }
                }
            } catch {
                fail(.tls(error))
                throw .tls(error)
            }
        }
        pending.append(UnsafeRawBufferPointer(rebasing: plaintext[offset...]))
        if queuedWriteBytes >= writeLimits.highWatermark { owesWritableNotice = true }
    }

    /// Encrypts and sends `head` then `body` as one unit: both are taken, or (past
    /// `writeLimits.limit`) neither. Only the head and the start of the body are joined,
    /// into the first record, so a short head (a WebSocket frame header) does not become a
    /// TLS record of its own: the records are those of one write of both, as a browser's.
    public func write(_ head: [UInt8], _ body: UnsafeRawBufferPointer) throws(TransportError) {
        loop.preconditionInEventLoop()
        guard head.count + body.count <= writeLimits.limit - queuedWriteBytes else {
            throw .io(NetError(.writeBufferFull, call: "write", message: "write queue limit reached"))
        }
        var joined = 0
        if !head.isEmpty {
            joined = min(body.count, max(0, TLSEngine.recordPlaintext - head.count))
            try write(head + body[..<joined])
        }
        if joined < body.count { try write(UnsafeRawBufferPointer(rebasing: body[joined...])) }
    }

    /// Stops delivering plaintext (and reading the socket) until `resumeReading()`.
    public func pauseReading() {
        loop.preconditionInEventLoop()
        readPaused = true
        updateSocketReading()
    }

    /// Delivers plaintext again after `pauseReading()`.
    public func resumeReading() {
        loop.preconditionInEventLoop()
        readPaused = false
        scheduleDelivery()
    }

    /// Closes gracefully: sends what is queued, then close_notify, then FIN. Resets the
    /// connection if that has not finished after `closeTimeout`.
    public func close() {
        loop.preconditionInEventLoop()
        guard phase != .closed, !closeRequested else { return }
        closeRequested = true
        guard phase == .open else {
            tcp.abort()
            return
        }
        closeTimer = loop.scheduleTimer(after: closeTimeout) { [self] in
            closeTimer = nil
            tcp.abort()
        }
        if pending.isEmpty { finishClose() }
    }

    /// Ends TCP at once with FIN after what TCP already holds, without close_notify: the
    /// peer sees a truncated stream (what the reference relay does to drop a WebSocket).
    public func drop() {
        loop.preconditionInEventLoop()
        guard phase != .closed else { return }
        closeRequested = true
        pending.removeAll()
        tcp.close()
    }

    /// Resets the connection (RST); queued bytes are dropped.
    public func abort() {
        loop.preconditionInEventLoop()
        guard phase != .closed else { return }
        closeRequested = true
        pending.removeAll()
        tcp.abort()
    }

    // MARK: handshake

    private func start(
        timeout: Duration, silence: Duration?, completion: @escaping (Result<TLSConnection, TransportError>) -> Void
    ) {
        loop.preconditionInEventLoop()
        handshakeCompletion = completion
        tcp.delegate = TCPSide(owner: self)
        let peer = engine.serverName ?? "the client"
        handshakeTimer = loop.scheduleTimer(after: timeout) { [self] in
            handshakeTimer = nil
            fail(.tls(TLSError(.handshakeFailed, "TLS handshake with \(peer) timed out after \(timeout)")))
        }
        if let silence {
            handshakeSilenceWatch = PathSilenceWatch(loop: loop, bound: silence, progress: { [tcp] in tcp.pathProgress }) {
                [weak self] in
                self?.handshakeSilenceWatch = nil
                self?.fail(.tls(TLSError(.handshakeFailed, "TLS handshake with \(peer) moved nothing for \(silence)")))
            }
        }
        loop.enqueue { [self] in advanceHandshake() }
    }

    private func advanceHandshake() {
        guard phase == .handshaking, failure == nil else { return }
        do {
            // Our BIO never refuses a write: a write want only means "take the ciphertext and go on".
            for _ in 0..<8 {
                let progress = try engine.handshake()
                flushCiphertext()
                switch progress {
                case .complete:
                    finishHandshake()
                    return
                case .wantRead:
                    return
                case .wantWrite:
                    continue
                }
            }
        } catch {
            fail(.tls(error))
        }
    }

    private func finishHandshake() {
        if let handshakeTimer { loop.cancelTimer(handshakeTimer) }
        handshakeTimer = nil
        handshakeSilenceWatch?.stop()
        handshakeSilenceWatch = nil
        phase = .open
        updateSocketReading()
        let completion = handshakeCompletion
        handshakeCompletion = nil
        completion?(.success(self))
        scheduleDelivery()
    }

    // MARK: reading

    fileprivate func tcpDidRead(_ ciphertext: UnsafeRawBufferPointer) {
        loop.tally.tlsRecordsReceived += recordsReceived.count(ciphertext)
        engine.feed(ciphertext)
        switch phase {
        case .handshaking:
            advanceHandshake()
        case .open:
            deliverPlaintext()
        case .closed:
            return
        }
    }

    fileprivate func tcpDidReadEOF() {
        engine.feedEOF()
        switch phase {
        case .handshaking:
            advanceHandshake()
        case .open:
            deliverPlaintext()
        case .closed:
            return
        }
    }

    private func scheduleDelivery() {
        guard phase == .open, !deliveryScheduled else {
            updateSocketReading()
            return
        }
        deliveryScheduled = true
        loop.enqueue { [self] in
            deliveryScheduled = false
            deliverPlaintext()
        }
    }

    /// Decrypts and delivers until the engine wants more ciphertext, the delegate pauses or
    /// the stream ends; then sets socket reading to match.
    private func deliverPlaintext() {
        defer { updateSocketReading() }
        while phase == .open, !readPaused, !endOfStreamDelivered, let delegate, failure == nil {
            let buffer = plaintextBuffer ?? allocatePlaintextBuffer()
            let result: TLSEngine.ReadResult
            do {
                result = try engine.readPlaintext(into: buffer)
            } catch {
                fail(.tls(error))
                return
            }
            flushCiphertext()  // a key update or a ticket acknowledgement may need sending
            switch result {
            case .bytes(let count):
                guard count > 0 else { return }
                delegate.stream(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            case .wantRead:
                return
            case .eof(let clean):
                endOfStreamDelivered = true
                delegate.streamDidReachEnd(self, clean: clean)
                return
            }
        }
    }

    private func allocatePlaintextBuffer() -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.plaintextChunk, alignment: 16)
        plaintextBuffer = buffer
        return buffer
    }

    /// Reads the socket during the handshake, and afterwards only while plaintext can go
    /// somewhere: ciphertext then never waits in the engine for more than one read.
    private func updateSocketReading() {
        guard tcp.isOpen else { return }
        let wanted: Bool
        switch phase {
        case .handshaking: wanted = true
        case .open: wanted = !readPaused && delegate != nil && !endOfStreamDelivered
        case .closed: wanted = false
        }
        if wanted && tcp.isReadingPaused {
            tcp.resumeReading()
        } else if !wanted && !tcp.isReadingPaused {
            tcp.pauseReading()
        }
    }

    // MARK: writing

    /// Moves every byte of pending ciphertext to TCP (a few hundred KiB at most: the engine
    /// stops encrypting at `maximumPendingCiphertext`).
    private func flushCiphertext() {
        while engine.pendingCiphertextCount > 0, tcp.isOpen {
            let ciphertext = engine.takeCiphertext(upTo: Self.ciphertextChunk)
            let outcome = ciphertext.withUnsafeBytes { raw in
                loop.tally.tlsRecordsSent += recordsSent.count(raw)
                return Result { () throws(TransportError) in try tcp.write(raw) }
            }
            if case .failure(let error) = outcome {
                fail(error)
                return
            }
        }
    }

    fileprivate func tcpDidBecomeWritable() {
        guard phase == .open else { return }
        do {
            while !pending.isEmpty && tcp.isOpen && tcp.isWritable {
                let consumed = try pending.withFront(Self.encryptChunk) { raw throws(TLSError) in
                    try engine.write(raw)
                }
                pending.skip(consumed)
                flushCiphertext()
                if consumed == 0 { break }
            }
        } catch {
            fail(.tls(error))
            return
        }
        guard pending.isEmpty, tcp.isOpen else { return }
        if closeRequested {
            finishClose()
        } else if owesWritableNotice && tcp.isWritable {
            owesWritableNotice = false
            delegate?.streamDidBecomeWritable(self)
        }
    }

    private func finishClose() {
        _ = try? engine.shutdown()
        flushCiphertext()
        tcp.close()
    }

    // MARK: failure and close

    /// Records the first failure and closes: TCP sends any alert OpenSSL queued if it can go
    /// at once, and is reset otherwise.
    private func fail(_ error: TransportError) {
        guard failure == nil, phase != .closed else { return }
        failure = error
        pending.removeAll()
        if case .tls = error { flushCiphertext() }
        if tcp.queuedWriteBytes == 0 { tcp.close() } else { tcp.abort() }
    }

    fileprivate func tcpDidClose(_ error: TransportError?) {
        guard phase != .closed else { return }
        phase = .closed
        if let handshakeTimer { loop.cancelTimer(handshakeTimer) }
        if let closeTimer { loop.cancelTimer(closeTimer) }
        handshakeTimer = nil
        handshakeSilenceWatch?.stop()
        handshakeSilenceWatch = nil
        closeTimer = nil
        pending.removeAll()
        let reported = failure ?? error
        if let completion = handshakeCompletion {
            handshakeCompletion = nil
            let peer = engine.serverName ?? "the client"
            completion(
                .failure(
                    reported
                        ?? .tls(
                            TLSError(
                                .closedDuringHandshake, "the connection to \(peer) closed during the TLS handshake"))
                ))
            return
        }
        let delegate = self.delegate
        self.delegate = nil
        delegate?.stream(self, didCloseWith: reported)
    }
}

/// TCP's delegate for a `TLSConnection`. It holds the connection strongly: an open socket
/// keeps its TLS state alive, and the cycle ends when TCP releases its delegate on close.
private final class TCPSide: ByteStreamDelegate {
    let owner: TLSConnection

    init(owner: TLSConnection) { self.owner = owner }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        owner.tcpDidRead(bytes)
    }

    func streamDidReachEnd(_ stream: any ByteStream, clean: Bool) {
        owner.tcpDidReadEOF()
    }

    func streamDidBecomeWritable(_ stream: any ByteStream) {
        owner.tcpDidBecomeWritable()
    }

    func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
        owner.tcpDidClose(error)
    }
}
