import Glibc
internal import CWebProxyLinux

/// A non-blocking TCP byte stream owned by one `EventLoop`; use it only on that loop's thread.
/// A unix-domain stream (from `UnixListener`, or `connect` to a `.unix` address) works the
/// same way, without TCP_NODELAY.
///
/// Reads go to the delegate in chunks from the loop's reused buffer, and only while a delegate
/// is set and reading is not paused (so a connection handed between owners loses nothing).
/// Writes are sent at once when possible; the rest is queued (bounded by `writeQueueLimit`)
/// and flushed with vectored `sendmsg` when the socket becomes writable.
public final class TCPConnection: ByteStream {
    /// Watermarks and limits of the write queue, in bytes.
    public struct WriteLimits: Hashable, Sendable {
        /// `isWritable` turns false at or above this many queued bytes.
        public var highWatermark: Int
        /// `streamDidBecomeWritable` fires when the queue drains to this many bytes.
        public var lowWatermark: Int
        /// `write` refuses bytes that would take the queue past this.
        public var limit: Int

        public init(highWatermark: Int, lowWatermark: Int, limit: Int) {
            self.highWatermark = highWatermark
            self.lowWatermark = lowWatermark
            self.limit = limit
        }

        /// 256 KiB high, 64 KiB low, 4 MiB limit.
        public static let `default` = WriteLimits(
            highWatermark: 256 * 1024, lowWatermark: 64 * 1024, limit: 4 * 1024 * 1024)
    }

    private enum State {
        case connecting(completion: (Result<TCPConnection, NetError>) -> Void, timeout: TimerID?)
        case open
        case closed
    }

    /// The loop that owns the socket.
    public let loop: EventLoop
    /// Receives reads, EOF, writability and the close. Setting it may start reading.
    public var delegate: (any ByteStreamDelegate)? {
        didSet { updateInterest() }
    }
    /// The write queue's bounds.
    public var writeLimits = WriteLimits.default
    /// The address this side is bound to (known once connected).
    public private(set) var localAddress: SocketAddress?
    /// The peer's address.
    public let remoteAddress: SocketAddress

    private var state: State
    private var token: UInt64 = 0
    private let fd: Int32
    private var readPaused = false
    private var readEOF = false
    private var writeShutdownRequested = false
    private var writeShutDown = false
    private var closeRequested = false
    private var owesWritableNotice = false
    /// Bytes pushed back by a handshake, delivered before the next read.
    private var unread: [UInt8] = []
    private var unreadDeliveryScheduled = false
    private var queue = SendQueue()

    private init(loop: EventLoop, fd: Int32, remote: SocketAddress, state: State) {
        self.loop = loop
        self.fd = fd
        self.remoteAddress = remote
        self.state = state
    }

    // MARK: creating

    /// Wraps a socket the listener accepted and registers it with `loop`.
    static func accepted(fd: Int32, remote: SocketAddress, on loop: EventLoop) throws(NetError) -> TCPConnection {
        if remote.family != .unix {
            try? Syscall.setOption(fd, CWPL_IPPROTO_TCP, CWPL_TCP_NODELAY, 1, "setsockopt(TCP_NODELAY)")
        }
        let connection = TCPConnection(loop: loop, fd: fd, remote: remote, state: .open)
        connection.localAddress = try? Syscall.localAddress(fd)
        do {
            connection.token = try loop.register(
                fd: fd, interest: [], onShutdown: { [weak connection] in connection?.loopDidShutDown() }
            ) { [connection] in
                connection.handle($0)
            }
        } catch {
            Syscall.close(fd)
            throw error
        }
        return connection
    }

    /// Connects to `address` (with TCP_NODELAY unless it is a unix-domain socket).
    /// `completion` runs once on the loop, never
    /// before this returns: with the open connection, or an error (`.timedOut` after
    /// `timeout`). Cancelling the returned attempt closes the socket and drops the completion.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, timeout: Duration,
        completion: @escaping (Result<TCPConnection, NetError>) -> Void
    ) -> ConnectAttempt {
        loop.preconditionInEventLoop()
        let attempt = ConnectAttempt()
        let fd: Int32
        do {
            fd = try Syscall.streamSocket(for: address)
        } catch {
            loop.enqueue { [attempt] in
                if !attempt.isCancelled { completion(.failure(error)) }
            }
            return attempt
        }
        let connection = TCPConnection(
            loop: loop, fd: fd, remote: address, state: .connecting(completion: completion, timeout: nil))
        attempt.connection = connection
        do {
            if address.family != .unix {
                try Syscall.setOption(fd, CWPL_IPPROTO_TCP, CWPL_TCP_NODELAY, 1, "setsockopt(TCP_NODELAY)")
            }
            connection.token = try loop.register(
                fd: fd, interest: .writable, onShutdown: { [weak connection] in connection?.loopDidShutDown() }
            ) { [connection] in
                connection.handle($0)
            }
        } catch {
            Syscall.close(fd)
            connection.state = .closed
            loop.enqueue { [attempt] in
                if !attempt.isCancelled { completion(.failure(error)) }
            }
            return attempt
        }
        let timer = loop.scheduleTimer(after: timeout) { [connection] in
            connection.finishConnect(.failure(NetError(.timedOut, call: "connect", message: "connect timed out")))
        }
        connection.state = .connecting(completion: completion, timeout: timer)
        do {
            if try Syscall.connect(fd, to: address) {
                // Connected at once (loopback can): report on the next iteration, not re-entrantly.
                loop.enqueue { [connection] in connection.finishConnect(.success(())) }
            }
        } catch {
            loop.enqueue { [connection] in connection.finishConnect(.failure(error)) }
        }
        return attempt
    }

    // MARK: public operations

    /// True while the write queue is below the high watermark.
    public var isWritable: Bool { queue.count < writeLimits.highWatermark }

    /// Bytes queued and not yet accepted by the kernel.
    public var queuedWriteBytes: Int { queue.count }

    /// A count that grows whenever the peer acknowledges a byte sent or a byte arrives, as
    /// the kernel sees it (TCP_INFO): proof that the path still moves, even while the bytes
    /// sit in socket buffers. Nil when closed or when the kernel does not say.
    public var pathProgress: UInt64? {
        loop.preconditionInEventLoop()
        guard case .open = state else { return nil }
        var acknowledged: UInt64 = 0
        var received: UInt64 = 0
        guard cwpl_tcp_progress(fd, &acknowledged, &received) == 0 else { return nil }
        return acknowledged &+ received
    }

    /// False once closed or failed.
    public var isOpen: Bool {
        if case .open = state { true } else { false }
    }

    /// Sends `bytes`, queueing (a copy of) what the kernel does not take now. Throws
    /// `.io(.closed)` after a close or shutdownWrite, `.io(.writeBufferFull)` (queueing
    /// nothing) past `writeLimits.limit`. A send failure closes the connection and is
    /// reported through the delegate.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        loop.preconditionInEventLoop()
        guard case .open = state, !writeShutdownRequested, !closeRequested else {
            throw .io(NetError(.closed, call: "write", message: "connection is closed for writing"))
        }
        guard !bytes.isEmpty else { return }
        guard bytes.count <= writeLimits.limit - queue.count else {
            throw .io(NetError(.writeBufferFull, call: "write", message: "write queue limit reached"))
        }
        var offset = 0
        if queue.isEmpty {
            let result: IOResult
            do {
                loop.tally.socketWrites += 1
                result = try Syscall.send(fd, bytes)
            } catch {
                closeNow(error)
                return
            }
            if case .processed(let written) = result { offset = written }
            if offset == bytes.count { return }
        }
        queue.append(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        if queue.count >= writeLimits.highWatermark { owesWritableNotice = true }
        updateInterest()
    }

    /// Sends `head` then `body`, both or (past `writeLimits.limit`) neither.
    public func write(_ head: [UInt8], _ body: UnsafeRawBufferPointer) throws(TransportError) {
        loop.preconditionInEventLoop()
        guard head.count + body.count <= writeLimits.limit - queue.count else {
            throw .io(NetError(.writeBufferFull, call: "write", message: "write queue limit reached"))
        }
        try write(head)
        try write(body)
    }

    /// Stops delivering reads (backpressure) until `resumeReading()`.
    public func pauseReading() {
        loop.preconditionInEventLoop()
        readPaused = true
        updateInterest()
    }

    /// Delivers reads again after `pauseReading()`.
    public func resumeReading() {
        loop.preconditionInEventLoop()
        readPaused = false
        updateInterest()
    }

    /// True while reading is paused by `pauseReading()`.
    public var isReadingPaused: Bool { readPaused }

    /// Half-closes: sends FIN after the queued bytes. Reading continues; the connection closes
    /// by itself once the peer's EOF has also been read.
    public func shutdownWrite() {
        loop.preconditionInEventLoop()
        guard case .open = state, !writeShutdownRequested else { return }
        writeShutdownRequested = true
        flushIfPossible()
    }

    /// Closes gracefully: stops reading, sends the queued bytes, then closes (FIN).
    public func close() {
        loop.preconditionInEventLoop()
        guard case .open = state, !closeRequested else { return }
        closeRequested = true
        if queue.isEmpty { closeNow(nil) } else { updateInterest() }
    }

    /// Closes at once with FIN after what the kernel holds; queued bytes are dropped.
    public func drop() {
        loop.preconditionInEventLoop()
        closeNow(nil)
    }

    /// Closes at once with SO_LINGER 0: queued bytes are dropped and the peer gets RST.
    public func abort() {
        loop.preconditionInEventLoop()
        guard case .open = state else { return }
        try? Syscall.setLingerZero(fd)
        closeNow(nil)
    }

    /// Puts bytes back in front of the stream: the next delegate gets them before any read.
    /// Proxy handshakes use it for bytes that arrived after their reply.
    func pushBack(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        unread = bytes + unread
        updateInterest()
    }

    // MARK: events

    private func handle(_ readiness: EventLoop.Readiness) {
        switch state {
        case .closed:
            return
        case .connecting:
            if readiness.writable || readiness.error || readiness.hangup {
                let error = (try? Syscall.socketError(fd)) ?? 0
                if error != 0 {
                    finishConnect(.failure(NetError.syscall("connect", errno: error)))
                } else if readiness.hangup {
                    finishConnect(.failure(NetError.syscall("connect", errno: ECONNRESET)))
                } else {
                    finishConnect(.success(()))
                }
            }
        case .open:
            if readiness.error {
                let error = (try? Syscall.socketError(fd)) ?? 0
                if error != 0 {
                    closeNow(NetError.syscall("socket", errno: error))
                    return
                }
            }
            if readiness.readable && wantsRead {
                readAvailable()
            }
            if readiness.writable {
                flushIfPossible()
            }
            if readiness.hangup, case .open = state, !wantsRead, queue.isEmpty {
                // Both directions are gone but nobody is reading: stop epoll reporting it
                // until interest changes, or it would spin.
                loop.park(token)
            }
        }
    }

    private func finishConnect(_ result: Result<Void, NetError>) {
        guard case .connecting(let completion, let timeout) = state else { return }
        if let timeout { loop.cancelTimer(timeout) }
        switch result {
        case .success:
            state = .open
            localAddress = try? Syscall.localAddress(fd)
            updateInterest()
            completion(.success(self))
        case .failure(let error):
            state = .closed
            loop.close(token)
            completion(.failure(error))
        }
    }

    /// Abandons a connect in progress without calling its completion.
    fileprivate func cancelConnect() {
        guard case .connecting(_, let timeout) = state else { return }
        if let timeout { loop.cancelTimer(timeout) }
        state = .closed
        loop.close(token)
    }

    private var wantsRead: Bool {
        !readPaused && !readEOF && !closeRequested && delegate != nil && unread.isEmpty
    }

    private func readAvailable() {
        let buffer = loop.readBuffer
        // A few reads per wake-up, so one busy peer cannot starve the others.
        for _ in 0..<4 {
            let result: IOResult
            do {
                result = try Syscall.read(fd, into: buffer)
            } catch {
                closeNow(error)
                return
            }
            if case .processed = result { loop.tally.socketReads += 1 }
            switch result {
            case .wouldBlock:
                return
            case .processed(0):
                readEOF = true
                updateInterest()
                delegate?.streamDidReachEnd(self, clean: true)
                closeIfBothDirectionsDone()
                return
            case .processed(let count):
                delegate?.stream(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                guard wantsRead, case .open = state, count == buffer.count else { return }
            }
        }
    }

    private func flushIfPossible() {
        guard case .open = state else { return }
        while !queue.isEmpty {
            let result: IOResult
            do {
                loop.tally.socketWrites += 1
                result = try queue.send(fd)
            } catch {
                closeNow(error)
                return
            }
            guard case .processed(let written) = result else { break }
            queue.consume(written)
        }
        if queue.isEmpty {
            if closeRequested {
                closeNow(nil)
                return
            }
            if writeShutdownRequested && !writeShutDown {
                writeShutDown = true
                do {
                    try Syscall.shutdownWrite(fd)
                } catch {
                    closeNow(error)
                    return
                }
                closeIfBothDirectionsDone()
                guard case .open = state else { return }
            }
        }
        updateInterest()
        if owesWritableNotice && queue.count <= writeLimits.lowWatermark {
            owesWritableNotice = false
            delegate?.streamDidBecomeWritable(self)
        }
    }

    private func closeIfBothDirectionsDone() {
        if readEOF && writeShutDown && queue.isEmpty { closeNow(nil) }
    }

    private func updateInterest() {
        guard case .open = state else { return }
        var interest: EventLoop.Interest = []
        if wantsRead { interest.insert(.readable) }
        if !queue.isEmpty { interest.insert(.writable) }
        do {
            try loop.setInterest(interest, for: token)
        } catch {
            closeNow(error)
            return
        }
        scheduleUnreadDelivery()
    }

    private func scheduleUnreadDelivery() {
        guard !unread.isEmpty, !unreadDeliveryScheduled, delegate != nil, !readPaused else { return }
        unreadDeliveryScheduled = true
        loop.enqueue { [self] in
            unreadDeliveryScheduled = false
            guard case .open = state, let delegate, !readPaused, !unread.isEmpty else { return }
            let bytes = unread
            unread = []
            bytes.withUnsafeBytes { delegate.stream(self, didRead: $0) }
            updateInterest()
        }
    }

    /// The loop stopped and closed the socket: drop the delegate (which may hold this
    /// connection: a cycle) and everything queued, without calling anyone back.
    fileprivate func loopDidShutDown() {
        state = .closed
        queue.removeAll()
        unread = []
        delegate = nil
    }

    /// Closes the socket now; the delegate hears of it on the next loop iteration.
    private func closeNow(_ error: NetError?) {
        guard case .open = state else { return }
        state = .closed
        loop.close(token)
        queue.removeAll()
        unread = []
        loop.enqueue { [self] in
            let delegate = self.delegate
            self.delegate = nil
            delegate?.stream(self, didCloseWith: error.map(TransportError.io))
        }
    }
}

/// A connect in progress; `cancel()` closes its socket and drops its completion.
public final class ConnectAttempt {
    fileprivate var connection: TCPConnection?
    fileprivate private(set) var isCancelled = false

    fileprivate init() {}

    /// Abandons the attempt if it has not completed; its completion will not run.
    public func cancel() {
        isCancelled = true
        connection?.cancelConnect()
        connection = nil
    }
}
