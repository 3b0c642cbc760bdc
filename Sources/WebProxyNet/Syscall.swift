import Glibc
internal import CWebProxyLinux

/// The outcome of a non-blocking I/O call: bytes moved, or the kernel asked us to wait.
public enum IOResult: Hashable, Sendable {
    /// The call moved this many bytes (0 on a read means end of stream).
    case processed(Int)
    /// The call would have blocked (EAGAIN/EWOULDBLOCK); wait for readiness.
    case wouldBlock
}

/// Thin wrappers over the system calls the loop makes: EINTR is retried, would-block is a
/// value, and every other failure throws a `NetError` carrying errno and the call's name.
enum Syscall {
    /// Runs `body` until it stops failing with EINTR.
    @inline(__always)
    static func retrying<T: FixedWidthInteger>(
        _ call: StaticString, _ body: () -> T
    ) throws(NetError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let error = errno
            if error == EINTR { continue }
            throw NetError.syscall("\(call)", errno: error)
        }
    }

    /// Like `retrying`, but EAGAIN/EWOULDBLOCK become `.wouldBlock`.
    @inline(__always)
    static func nonBlocking(_ call: StaticString, _ body: () -> Int) throws(NetError) -> IOResult {
        while true {
            let result = body()
            if result != -1 { return .processed(result) }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            throw NetError.syscall("\(call)", errno: error)
        }
    }

    /// Closes `fd`. EINTR is not retried: Linux has released the descriptor either way.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> IOResult {
        try nonBlocking("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes the buffers with one `sendmsg(MSG_NOSIGNAL)`: writev that never raises SIGPIPE.
    static func sendv(_ fd: Int32, _ buffers: UnsafeBufferPointer<iovec>) throws(NetError) -> IOResult {
        try nonBlocking("sendmsg") { cwpl_sendv(fd, buffers.baseAddress, Int32(buffers.count)) }
    }

    /// Writes `bytes` with one `sendmsg(MSG_NOSIGNAL)`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(NetError) -> IOResult {
        var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return try nonBlocking("sendmsg") { cwpl_sendv(fd, &vector, 1) }
    }

    /// Accepts one connection; nil when none is pending.
    static func accept(_ fd: Int32) throws(NetError) -> (fd: Int32, peer: SocketAddress?)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try nonBlocking("accept4") { Int(cwpl_accept(fd, &storage, &length)) }
        switch result {
        case .wouldBlock:
            return nil
        case .processed(let accepted):
            let peer = withUnsafeBytes(of: &storage) { SocketAddress(storage: $0.baseAddress!) }
            return (Int32(accepted), peer)
        }
    }

    /// A non-blocking, close-on-exec TCP socket for `family`.
    static func tcpSocket(_ family: Int32) throws(NetError) -> Int32 {
        try retrying("socket") { cwpl_tcp_socket(family) }
    }

    /// A non-blocking, close-on-exec stream socket for `address`: TCP for an IP address,
    /// a unix-domain stream socket otherwise.
    static func streamSocket(for address: SocketAddress) throws(NetError) -> Int32 {
        guard address.family == .unix else { return try tcpSocket(address.addressFamily) }
        return try retrying("socket") {
            socket(AF_UNIX, CWPL_SOCK_STREAM | CWPL_SOCK_NONBLOCK | CWPL_SOCK_CLOEXEC, 0)
        }
    }

    /// Starts a connect; true if it completed at once, false if it is in progress.
    static func connect(_ fd: Int32, to address: SocketAddress) throws(NetError) -> Bool {
        let result = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result == 0 { return true }
        let error = errno
        // EINTR on a non-blocking connect means the attempt goes on asynchronously.
        if error == EINPROGRESS || error == EINTR { return false }
        throw NetError.syscall("connect", errno: error)
    }

    static func bind(_ fd: Int32, to address: SocketAddress) throws(NetError) {
        _ = try retrying("bind") { address.withSockAddr { Glibc.bind(fd, $0, $1) } }
    }

    static func listen(_ fd: Int32, backlog: Int32) throws(NetError) {
        _ = try retrying("listen") { Glibc.listen(fd, backlog) }
    }

    static func localAddress(_ fd: Int32) throws(NetError) -> SocketAddress {
        try address(of: fd, "getsockname", Glibc.getsockname)
    }

    static func peerAddress(_ fd: Int32) throws(NetError) -> SocketAddress {
        try address(of: fd, "getpeername", Glibc.getpeername)
    }

    private static func address(
        of fd: Int32, _ call: StaticString,
        _ query: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(NetError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try retrying(call) {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(fd, $0, &length) }
            }
        }
        guard let address = withUnsafeBytes(of: &storage, { SocketAddress(storage: $0.baseAddress!) })
        else { throw NetError.syscall("\(call)", errno: EAFNOSUPPORT) }
        return address
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ call: StaticString)
        throws(NetError)
    {
        _ = try retrying(call) { cwpl_setsockopt_int(fd, level, name, value) }
    }

    /// Reads and clears the socket's pending error (0 if none).
    static func socketError(_ fd: Int32) throws(NetError) -> Int32 {
        var error: Int32 = 0
        _ = try retrying("getsockopt(SO_ERROR)") { cwpl_socket_error(fd, &error) }
        return error
    }

    static func shutdownWrite(_ fd: Int32) throws(NetError) {
        _ = try retrying("shutdown") { Glibc.shutdown(fd, CWPL_SHUT_WR) }
    }

    static func setLingerZero(_ fd: Int32) throws(NetError) {
        _ = try retrying("setsockopt(SO_LINGER)") { cwpl_set_linger_zero(fd) }
    }
}

extension Syscall {
    /// Starts a POSIX thread named `name` running `body`. Used for event loops
    /// and the resolver worker, which must not run on the Swift cooperative pool.
    static func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) throws(NetError) -> pthread_t {
        let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let start = Unmanaged<ThreadStart>.fromOpaque(argument).takeRetainedValue()
            cwpl_set_thread_name(start.name)
            start.body()
            return nil
        }, start)
        if result != 0 {
            Unmanaged<ThreadStart>.fromOpaque(start).release()
            throw NetError.syscall("pthread_create", errno: result)
        }
        return thread
    }
}

/// What a new thread runs, passed through `pthread_create`'s context pointer.
private final class ThreadStart: Sendable {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
