#if canImport(Glibc)
import Glibc
#endif

/// A filesystem path as a `sockaddr_un`, for the control socket's two ends.
struct UnixSocketAddress {
    let path: String

    /// Nil for a path too long for `sun_path` (107 bytes) or holding a NUL byte.
    init?(path: String) {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard !path.isEmpty, path.utf8.count < capacity, !path.utf8.contains(0) else { return nil }
        self.path = path
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { target in
            for (index, byte) in path.utf8.enumerated() { target[index] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// Whether something listens at this path now. Never blocks: a non-blocking connect to
    /// a unix socket succeeds, is refused or finds the backlog full (`EAGAIN`) at once.
    func isAnswered() -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return withSockaddr { Glibc.connect(fd, $0, $1) } == 0 || errno == EAGAIN
    }

    /// A blocking, close-on-exec stream socket connected to this path, whose connect, sends
    /// and receives each give up after `timeoutSeconds`; nil with errno set.
    func connect(timeoutSeconds: Int) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withSockaddr { Glibc.connect(fd, $0, $1) }
        guard result == 0 else {
            let error = errno
            close(fd)
            errno = error
            return nil
        }
        return fd
    }
}
