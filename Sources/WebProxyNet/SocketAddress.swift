import Glibc

/// An IPv4 or IPv6 address with a port, or a unix-domain socket path: what a socket binds,
/// connects or accepts.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: Hashable, Sendable {
        case ipv4, ipv6
        /// A unix-domain stream socket (no IP address, port 0).
        case unix
    }

    fileprivate enum Host: Hashable, Sendable {
        /// `in_addr.s_addr` as stored in memory (network byte order).
        case v4(UInt32)
        /// `in6_addr` bytes as two memory-order words, plus the scope id of link-local addresses.
        case v6(UInt64, UInt64, scope: UInt32)
        /// A filesystem path; empty for an unnamed (or abstract) peer.
        case unix(String)
    }

    fileprivate let host: Host
    /// The port, in host byte order (0 for a unix-domain address).
    public let port: UInt16

    /// Parses an IP literal (`127.0.0.1`, `::1`, without brackets); nil for anything else.
    public init?(ipAddress: String, port: UInt16) {
        var v4 = in_addr()
        if inet_pton(AF_INET, ipAddress, &v4) == 1 {
            self.host = .v4(v4.s_addr)
            self.port = port
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, ipAddress, &v6) == 1 {
            let words = withUnsafeBytes(of: &v6) {
                ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                 $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            self.host = .v6(words.0, words.1, scope: 0)
            self.port = port
            return
        }
        return nil
    }

    /// 127.0.0.1 with `port`.
    public static func loopbackIPv4(port: UInt16) -> SocketAddress {
        SocketAddress(host: .v4(UInt32(INADDR_LOOPBACK).bigEndian), port: port)
    }

    /// ::1 with `port`.
    public static func loopbackIPv6(port: UInt16) -> SocketAddress {
        SocketAddress(host: .v6(0, UInt64(1).bigEndian, scope: 0), port: port)
    }

    /// The unix-domain socket at `path`; nil when the path is empty, holds a NUL byte or
    /// does not fit `sun_path` (107 bytes).
    public static func unix(path: String) -> SocketAddress? {
        guard !path.isEmpty, path.utf8.count < unixPathCapacity, !path.utf8.contains(0) else { return nil }
        return SocketAddress(host: .unix(path), port: 0)
    }

    /// The size of `sockaddr_un.sun_path`, terminating NUL included.
    private static let unixPathCapacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    private init(host: Host, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Reads a kernel-filled, zero-initialised `sockaddr_storage`; nil for families other
    /// than IPv4, IPv6 and unix.
    init?(storage: UnsafeRawPointer) {
        let family = storage.load(as: sockaddr.self).sa_family
        switch Int32(family) {
        case AF_INET:
            let address = storage.loadUnaligned(as: sockaddr_in.self)
            self.init(host: .v4(address.sin_addr.s_addr), port: UInt16(bigEndian: address.sin_port))
        case AF_INET6:
            var address = storage.loadUnaligned(as: sockaddr_in6.self)
            let words = withUnsafeBytes(of: &address.sin6_addr) {
                ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                 $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            self.init(
                host: .v6(words.0, words.1, scope: address.sin6_scope_id),
                port: UInt16(bigEndian: address.sin6_port))
        case AF_UNIX:
            // The storage was zeroed, so the path ends at the first NUL (at once for an
            // unnamed or abstract peer).
            var address = storage.loadUnaligned(as: sockaddr_un.self)
            let path = withUnsafeBytes(of: &address.sun_path) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            self.init(host: .unix(path), port: 0)
        default:
            return nil
        }
    }

    /// The address family.
    public var family: Family {
        switch host {
        case .v4: .ipv4
        case .v6: .ipv6
        case .unix: .unix
        }
    }

    /// The path of a unix-domain address (empty for an unnamed peer); nil for IP addresses.
    public var unixPath: String? {
        if case .unix(let path) = host { path } else { nil }
    }

    /// The address without the port, as `inet_ntop` writes it (no brackets); empty for a
    /// unix-domain address.
    public var ipAddress: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { text in
            let written: UnsafePointer<CChar>? =
                switch host {
                case .v4(let raw):
                    withUnsafeBytes(of: raw) {
                        inet_ntop(AF_INET, $0.baseAddress, text.baseAddress, socklen_t(text.count))
                    }
                case .v6(let high, let low, _):
                    withUnsafeBytes(of: (high, low)) {
                        inet_ntop(AF_INET6, $0.baseAddress, text.baseAddress, socklen_t(text.count))
                    }
                case .unix:
                    nil
                }
            if case .unix = host { return "" }
            return written.map { String(cString: $0) } ?? "?"
        }
    }

    /// `127.0.0.1:443`, `[::1]:443` or `unix:/run/example.sock`.
    public var description: String {
        switch host {
        case .v4: "\(ipAddress):\(port)"
        case .v6: "[\(ipAddress)]:\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }

    /// The `AF_*` constant of the family.
    var addressFamily: Int32 {
        switch family {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
    }

    /// Calls `body` with this address as a `sockaddr` and its length.
    func withSockAddr<R, E: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R
    ) throws(E) -> R {
        var storage = sockaddr_storage()
        let length: socklen_t
        switch host {
        case .v4(let raw):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = raw
            withUnsafeBytes(of: address) { bytes in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        case .v6(let high, let low, let scope):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_scope_id = scope
            withUnsafeMutableBytes(of: &address.sin6_addr) { target in
                withUnsafeBytes(of: (high, low)) { target.copyMemory(from: $0) }
            }
            withUnsafeBytes(of: address) { bytes in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        case .unix(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            // `unix(path:)` checked that the path and its NUL fit.
            withUnsafeMutableBytes(of: &address.sun_path) { target in
                for (index, byte) in path.utf8.prefix(target.count - 1).enumerated() { target[index] = byte }
            }
            withUnsafeBytes(of: address) { bytes in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
            }
            length = socklen_t(MemoryLayout<sockaddr_un>.size)
        }
        return try withUnsafePointer(to: &storage) { pointer throws(E) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(E) -> R in
                try body(address, length)
            }
        }
    }
}

extension SocketAddress {
    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6, none for unix.
    var addressBytes: [UInt8] {
        switch host {
        case .v4(let raw): withUnsafeBytes(of: raw) { Array($0) }
        case .v6(let high, let low, _): withUnsafeBytes(of: (high, low)) { Array($0) }
        case .unix: []
        }
    }
}
