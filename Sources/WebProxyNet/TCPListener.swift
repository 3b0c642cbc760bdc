import Glibc
internal import CWebProxyLinux

/// A non-blocking TCP listening socket on an `EventLoop`. Accepted sockets are non-blocking,
/// close-on-exec and TCP_NODELAY; they read nothing until the handler sets a delegate.
public final class TCPListener {
    /// The loop that owns the socket.
    public let loop: EventLoop
    /// The bound address, with the kernel's port when bound to port 0.
    public let localAddress: SocketAddress

    private let token: UInt64
    private let acceptPause: Duration
    private let accepted: (TCPConnection) -> Void
    private let acceptFailed: (NetError) -> Void
    private var pauseTimer: TimerID?
    private var isOpen = true

    private init(
        loop: EventLoop, token: UInt64, localAddress: SocketAddress, acceptPause: Duration,
        accepted: @escaping (TCPConnection) -> Void, acceptFailed: @escaping (NetError) -> Void
    ) {
        self.loop = loop
        self.token = token
        self.localAddress = localAddress
        self.acceptPause = acceptPause
        self.accepted = accepted
        self.acceptFailed = acceptFailed
    }

    /// Binds (SO_REUSEADDR; IPv6 sockets are IPv6-only) and listens on `address`. Calls
    /// `accepted` for each new connection and `acceptFailed` for each accept error it survives
    /// (e.g. EMFILE, after which accepting pauses for `acceptPause`).
    public static func listen(
        on address: SocketAddress, loop: EventLoop, backlog: Int32 = 512,
        acceptPause: Duration = .milliseconds(100),
        accepted: @escaping (TCPConnection) -> Void,
        acceptFailed: @escaping (NetError) -> Void = { _ in }
    ) throws(NetError) -> TCPListener {
        loop.preconditionInEventLoop()
        let fd = try Syscall.tcpSocket(address.addressFamily)
        let bound: SocketAddress
        do {
            try Syscall.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "setsockopt(SO_REUSEADDR)")
            if address.family == .ipv6 {
                try Syscall.setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1, "setsockopt(IPV6_V6ONLY)")
            }
            try Syscall.bind(fd, to: address)
            try Syscall.listen(fd, backlog: backlog)
            bound = try Syscall.localAddress(fd)
        } catch {
            Syscall.close(fd)
            throw error
        }
        return try register(
            fd: fd, bound: bound, loop: loop, acceptPause: acceptPause, accepted: accepted, acceptFailed: acceptFailed)
    }

    /// Takes over `fd`, a TCP socket already bound and listening (one systemd passed with
    /// socket activation), and accepts on it as `listen` does. The listener owns `fd` from
    /// here on and closes it, also when this throws: `fd` must be a listening stream socket
    /// of an IP family (`ENOTSOCK`, `EINVAL` or `EAFNOSUPPORT` otherwise). It is made
    /// non-blocking and close-on-exec.
    public static func adopt(
        fd: Int32, loop: EventLoop, acceptPause: Duration = .milliseconds(100),
        accepted: @escaping (TCPConnection) -> Void,
        acceptFailed: @escaping (NetError) -> Void = { _ in }
    ) throws(NetError) -> TCPListener {
        loop.preconditionInEventLoop()
        let bound: SocketAddress
        do throws(NetError) {
            var type: Int32 = 0, listening: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = try Syscall.retrying("getsockopt(SO_TYPE)") { getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) }
            length = socklen_t(MemoryLayout<Int32>.size)
            _ = try Syscall.retrying("getsockopt(SO_ACCEPTCONN)") {
                getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length)
            }
            guard type == CWPL_SOCK_STREAM, listening == 1 else {
                throw NetError.syscall("getsockopt(SO_ACCEPTCONN)", errno: EINVAL)
            }
            bound = try Syscall.localAddress(fd)
            guard bound.family != .unix else { throw NetError.syscall("getsockname", errno: EAFNOSUPPORT) }
            let flags = try Syscall.retrying("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
            _ = try Syscall.retrying("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
            _ = try Syscall.retrying("fcntl(F_SETFD)") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
        } catch {
            Syscall.close(fd)
            throw error
        }
        return try register(
            fd: fd, bound: bound, loop: loop, acceptPause: acceptPause, accepted: accepted, acceptFailed: acceptFailed)
    }

    /// Watches the listening `fd` on `loop`; closes it if that fails. `onShutdown` runs if
    /// the loop stops while the listener is open.
    static func register(
        fd: Int32, bound: SocketAddress, loop: EventLoop, acceptPause: Duration,
        accepted: @escaping (TCPConnection) -> Void, acceptFailed: @escaping (NetError) -> Void,
        onShutdown: (() -> Void)? = nil
    ) throws(NetError) -> TCPListener {
        // The handler needs the listener and the listener needs the token: bridge with a box.
        // The registration keeps the listener alive until `close()` or the loop stops.
        final class Box { var listener: TCPListener? }
        let box = Box()
        let token: UInt64
        do {
            token = try loop.register(fd: fd, interest: .readable, onShutdown: onShutdown) { _ in
                box.listener?.acceptPending(fd)
            }
        } catch {
            Syscall.close(fd)
            throw error
        }
        let listener = TCPListener(
            loop: loop, token: token, localAddress: bound, acceptPause: acceptPause,
            accepted: accepted, acceptFailed: acceptFailed)
        box.listener = listener
        return listener
    }

    /// Stops listening and closes the socket. Accepted connections are unaffected.
    public func close() {
        loop.preconditionInEventLoop()
        guard isOpen else { return }
        isOpen = false
        if let pauseTimer { loop.cancelTimer(pauseTimer) }
        loop.close(token)
    }

    private func acceptPending(_ fd: Int32) {
        // Bounded per wake-up so a connection flood cannot starve established connections.
        for _ in 0..<16 where isOpen && pauseTimer == nil {
            do {
                guard let (connectionFD, peer) = try Syscall.accept(fd) else { return }
                guard let peer else {
                    Syscall.close(connectionFD)
                    continue
                }
                accepted(try TCPConnection.accepted(fd: connectionFD, remote: peer, on: loop))
            } catch {
                switch AcceptErrorPolicy.action(for: error.errno) {
                case .continueAccepting:
                    acceptFailed(error)
                case .pauseAccepting:
                    acceptFailed(error)
                    pause()
                    return
                case .stopListening:
                    acceptFailed(error)
                    close()
                    return
                }
            }
        }
    }

    /// Level-triggered epoll would report the pending connection again at once: take the
    /// socket out of epoll until the pause ends.
    private func pause() {
        loop.park(token)
        pauseTimer = loop.scheduleTimer(after: acceptPause) { [weak self] in
            guard let self, isOpen else { return }
            pauseTimer = nil
            do throws(NetError) {
                try loop.setInterest(.readable, for: token)
            } catch {
                acceptFailed(error)
                close()
            }
        }
    }
}

/// What the listener does after `accept4` fails, by errno. Pure, so the policy is testable
/// without exhausting the process's descriptors.
enum AcceptErrorPolicy: Hashable {
    /// The failure concerned one connection (aborted, network error): accept the next one.
    case continueAccepting
    /// Out of descriptors or memory: accepting again at once would spin the loop.
    case pauseAccepting
    /// The listening socket itself is broken.
    case stopListening

    static func action(for errno: Int32) -> AcceptErrorPolicy {
        switch errno {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            .pauseAccepting
        case ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH,
            EOPNOTSUPP, ENETUNREACH, ETIMEDOUT:
            .continueAccepting
        default:
            .stopListening
        }
    }
}
