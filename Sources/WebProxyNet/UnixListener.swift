import Glibc

/// A listening unix-domain stream socket at a filesystem path, on an `EventLoop`. Accepted
/// connections are `TCPConnection`s (the same non-blocking stream machinery, without
/// TCP_NODELAY) whose `remoteAddress` is a `.unix` address, usually unnamed.
///
/// The listener owns its path: `close()` removes it, and so does the loop stopping while
/// the listener is open. Use it only on its loop's thread.
public final class UnixListener {
    /// The loop that owns the socket.
    public let loop: EventLoop
    /// Where the socket is.
    public let path: String

    private let listener: TCPListener
    private var isOpen = true

    private init(loop: EventLoop, path: String, listener: TCPListener) {
        self.loop = loop
        self.path = path
        self.listener = listener
    }

    /// Binds a socket at `path` (which must not exist: `EADDRINUSE` otherwise), gives it
    /// `mode` before listening, so nobody connects under a looser mode, and listens. Calls
    /// `accepted` for each new connection and `acceptFailed` for each accept error it
    /// survives, as `TCPListener` does. Throws `EINVAL` for a path `SocketAddress.unix(path:)`
    /// refuses.
    public static func listen(
        path: String, mode: mode_t = 0o600, loop: EventLoop, backlog: Int32 = 16,
        acceptPause: Duration = .milliseconds(100),
        accepted: @escaping (TCPConnection) -> Void,
        acceptFailed: @escaping (NetError) -> Void = { _ in }
    ) throws(NetError) -> UnixListener {
        loop.preconditionInEventLoop()
        guard let address = SocketAddress.unix(path: path) else { throw NetError.syscall("bind", errno: EINVAL) }
        let fd = try Syscall.streamSocket(for: address)
        do {
            try Syscall.bind(fd, to: address)
        } catch {
            Syscall.close(fd)
            throw error
        }
        do {
            _ = try Syscall.retrying("chmod") { chmod(path, mode) }
            try Syscall.listen(fd, backlog: backlog)
        } catch {
            Syscall.close(fd)
            unlink(path)
            throw error
        }
        let tcp: TCPListener
        do {
            tcp = try TCPListener.register(
                fd: fd, bound: address, loop: loop, acceptPause: acceptPause, accepted: accepted,
                acceptFailed: acceptFailed, onShutdown: { unlink(path) })
        } catch {
            unlink(path)
            throw error
        }
        return UnixListener(loop: loop, path: path, listener: tcp)
    }

    /// The bound address (`.unix(path)`).
    public var localAddress: SocketAddress { listener.localAddress }

    /// Stops listening, closes the socket and removes its path. Accepted connections are
    /// unaffected. Calling it again does nothing.
    public func close() {
        loop.preconditionInEventLoop()
        guard isOpen else { return }
        isOpen = false
        listener.close()
        unlink(path)
    }
}
