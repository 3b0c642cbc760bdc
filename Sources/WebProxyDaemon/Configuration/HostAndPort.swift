#if canImport(Glibc)
import Glibc
#endif

/// A host (DNS name or IP literal) and a port: the target of `connect-to` and the
/// address of an upstream proxy.
public struct HostAndPort: Hashable, Sendable, CustomStringConvertible {
    /// A lowercase DNS name, or an IP literal (IPv6 without brackets).
    public let host: String
    public let port: UInt16

    static let maxHostLength = 253

    /// Parses `NAME:PORT`, `IPV4:PORT` or `[IPV6]:PORT`.
    public init(parsing text: some StringProtocol, what: String = "address")
        throws(ConfigurationValueError)
    {
        let (hostText, port) = try splitHostPort(Substring(text), what: what)
        if hostText.bracketed {
            guard let bytes = parseIPAddress(hostText.text, family: AF_INET6) else {
                throw ConfigurationValueError(
                    "The \(what) in brackets is not an IPv6 address", hint: "e.g. [2001:db8::1]:443")
            }
            host = formatIPAddress(bytes)
        } else {
            host = try Self.validatedName(hostText.text, what: what)
        }
        self.port = port
    }

    /// True when `host` is an IPv6 literal (and needs brackets next to a port).
    public var isIPv6: Bool { host.contains(":") }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A DNS name of letters, digits, hyphens and dots (IPv4 literals pass too), lowercased.
    private static func validatedName(_ text: Substring, what: String)
        throws(ConfigurationValueError) -> String
    {
        let valid = text.utf8.count <= maxHostLength
            && text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
                !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.utf8.allSatisfy {
                        switch $0 {
                        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                            true
                        default:
                            false
                        }
                    }
            }
        guard valid else {
            throw ConfigurationValueError(
                "The host of the \(what) is not a valid host name or IP address",
                hint: "use an ASCII name such as relay.example.net, an IPv4 address, or [IPv6]")
        }
        return text.lowercased()
    }
}
