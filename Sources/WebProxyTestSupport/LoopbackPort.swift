#if canImport(Glibc)
import Glibc
#endif

/// Binds the IPv4 stream socket `fd` to 127.0.0.1 on a port the kernel picks, and listens
/// with `backlog` when given; returns the port, or nil (with `errno` set) when a call failed.
public func bindLoopback(_ fd: Int32, listeningWith backlog: Int32? = nil) -> UInt16? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && backlog.map { listen(fd, $0) == 0 } != false
                && getsockname(fd, pointer, &length) == 0
        }
    }
    return bound ? UInt16(bigEndian: address.sin_port) : nil
}

/// A loopback port nothing listens on right now (bound to port 0, then released); 0 if none
/// could be bound.
public func unusedLoopbackPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    return bindLoopback(fd) ?? 0
}
