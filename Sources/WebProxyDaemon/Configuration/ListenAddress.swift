#if canImport(Glibc)
import Glibc
#endif

/// The local address a relay's MTProxy listener (or the metrics endpoint) binds:
/// an IP literal and a port, written `127.0.0.1:8443` or `[::1]:8443`.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family, which decides the socket to open.
    public enum Family: Sendable {
        case ipv4, ipv6
    }

    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public let addressBytes: [UInt8]
    /// The TCP port, 1...65535.
    public let port: UInt16

    /// Parses `IPV4:PORT` or `[IPV6]:PORT`. Host names are refused: a listener binds an
    /// address, and resolving names at start-up would make the bind depend on DNS.
    public init(parsing text: some StringProtocol) throws(ConfigurationValueError) {
        let (host, port) = try splitHostPort(Substring(text), what: "listen address")
        if let bytes = parseIPAddress(host.text, family: host.bracketed ? AF_INET6 : AF_INET) {
            addressBytes = bytes
        } else if host.bracketed {
            throw ConfigurationValueError(
                "The address in brackets is not an IPv6 address", hint: "e.g. [::1]:8443")
        } else {
            throw ConfigurationValueError(
                "A listen address must be an IP address, not a host name",
                hint: "use 127.0.0.1:PORT or [::1]:PORT; IPv6 goes in brackets")
        }
        self.port = port
    }

    public var family: Family { addressBytes.count == 4 ? .ipv4 : .ipv6 }

    /// The address alone, without brackets or port: `127.0.0.1`, `::1`.
    public var host: String { formatIPAddress(addressBytes) }

    /// True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8.
    public var isLoopback: Bool {
        if family == .ipv4 { return addressBytes[0] == 127 }
        if addressBytes == Self.ipv6Loopback { return true }
        return addressBytes.prefix(12) == Self.ipv4MappedPrefix[...] && addressBytes[12] == 127
    }

    /// True for the wildcard addresses `0.0.0.0` and `::`.
    public var isUnspecified: Bool { addressBytes.allSatisfy { $0 == 0 } }

    /// True when both cannot be bound at once: same port, and the same address or a
    /// wildcard on either side.
    public func conflicts(with other: ListenAddress) -> Bool {
        port == other.port
            && (addressBytes == other.addressBytes || isUnspecified || other.isUnspecified)
    }

    public var description: String {
        family == .ipv4 ? "\(host):\(port)" : "[\(host)]:\(port)"
    }

    private static let ipv6Loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
    private static let ipv4MappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
}

/// The host part of `HOST:PORT`, and whether it was written in brackets.
struct HostText {
    var text: Substring
    var bracketed: Bool
}

/// Splits `HOST:PORT` or `[HOST]:PORT`; the port must be decimal 1...65535.
func splitHostPort(_ text: Substring, what: String)
    throws(ConfigurationValueError) -> (HostText, UInt16)
{
    let host: HostText
    let portText: Substring
    if text.hasPrefix("[") {
        guard let close = text.firstIndex(of: "]"),
              text[text.index(after: close)...].hasPrefix(":")
        else {
            throw ConfigurationValueError(
                "The \(what) has an unclosed bracket or no port after it", hint: "e.g. [::1]:8443")
        }
        host = HostText(text: text[text.index(after: text.startIndex)..<close], bracketed: true)
        portText = text[text.index(close, offsetBy: 2)...]
    } else {
        guard let colon = text.lastIndex(of: ":") else {
            throw ConfigurationValueError(
                "The \(what) has no port", hint: "write HOST:PORT, e.g. 127.0.0.1:8443")
        }
        host = HostText(text: text[..<colon], bracketed: false)
        guard !host.text.contains(":") else {
            throw ConfigurationValueError(
                "An IPv6 address must be written in brackets", hint: "e.g. [::1]:8443")
        }
        portText = text[text.index(after: colon)...]
    }
    guard !host.text.isEmpty else {
        throw ConfigurationValueError("The \(what) has no host before the port")
    }
    guard let port = parsePort(portText) else {
        throw ConfigurationValueError(
            "The port of the \(what) must be a number from 1 to 65535")
    }
    return (host, port)
}

/// A decimal port 1...65535 (digits only, at most 5 of them).
func parsePort(_ text: Substring) -> UInt16? {
    guard (1...5).contains(text.utf8.count),
          text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
          let value = UInt16(text), value > 0
    else { return nil }
    return value
}

/// The network-order bytes of an IP literal of the given family, or nil.
func parseIPAddress(_ text: Substring, family: Int32) -> [UInt8]? {
    var bytes = [UInt8](repeating: 0, count: family == AF_INET ? 4 : 16)
    let status = bytes.withUnsafeMutableBytes { inet_pton(family, String(text), $0.baseAddress) }
    return status == 1 ? bytes : nil
}

/// The canonical text of 4 or 16 network-order address bytes.
func formatIPAddress(_ bytes: [UInt8]) -> String {
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    let family = bytes.count == 4 ? AF_INET : AF_INET6
    let text = bytes.withUnsafeBytes { raw in
        inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
    }
    guard text != nil else { return "?" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
