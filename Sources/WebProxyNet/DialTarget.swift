/// Where to open a TCP connection: a host name or IP literal and a port. This is only the
/// address dialled (a `connect-to` override may differ from the logical host); naming the
/// peer (SNI, Host) is the upper layers' business.
public struct DialTarget: Hashable, Sendable, CustomStringConvertible {
    /// A DNS name or an IP literal, without brackets.
    public let host: String
    /// The TCP port.
    public let port: UInt16

    /// A target, or nil if `host` is empty, longer than 255 bytes, or holds characters no
    /// host name or IP literal has (whitespace, controls, `/`, `@`, brackets…).
    public init?(host: String, port: UInt16) {
        guard !host.isEmpty, host.utf8.count <= 255,
            host.utf8.allSatisfy({ DialTarget.isHostByte($0) })
        else { return nil }
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[ipv6]:port`.
    public init?(_ text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"),
                text[text.index(after: close)...].hasPrefix(":")
            else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            guard host.contains(":") else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { return nil }
        }
        guard let port = UInt16(portText), port != 0 else { return nil }
        self.init(host: String(host), port: port)
    }

    /// True when the host is an IPv4 or IPv6 literal.
    public var isIPLiteral: Bool { SocketAddress(ipAddress: host, port: port) != nil }

    /// `host:port`, with brackets around an IPv6 literal.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "%"):
            true
        default:
            false
        }
    }
}
