import WebProxyCore

/// An outbound proxy the relay connection goes through: `socks5://[user:pass@]host:port`
/// or `http://[user:pass@]host:port` (HTTP CONNECT).
///
/// The password is secret: `description`, `debugDescription` and the mirror hide it.
public struct UpstreamProxy: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The proxy protocol.
    public enum Kind: String, Sendable {
        case socks5, http
    }

    /// A user name and password (RFC 1929 for SOCKS5, Basic for HTTP CONNECT).
    public struct Credentials: Sendable, Equatable {
        public let user: String
        public let password: String
    }

    public let kind: Kind
    public let address: HostAndPort
    public let credentials: Credentials?

    /// RFC 1929 caps user and password at 255 bytes each; HTTP gets the same bound.
    static let maxCredentialLength = 255

    /// Parses the proxy URL. User and password may use percent escapes (`%40` for `@`).
    public init(parsing text: some StringProtocol) throws(ConfigurationValueError) {
        let text = Substring(text)
        guard let schemeEnd = text.firstRange(of: "://") else {
            throw Self.formatError
        }
        guard let kind = Kind(rawValue: text[..<schemeEnd.lowerBound].lowercased()) else {
            throw ConfigurationValueError(
                "The proxy scheme is not supported", hint: "use socks5:// or http://")
        }
        var rest = text[schemeEnd.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var credentials: Credentials?
        if let at = rest.lastIndex(of: "@") {
            credentials = try Self.credentials(rest[..<at])
            rest = rest[rest.index(after: at)...]
        }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            throw ConfigurationValueError(
                "The proxy URL may not have a path, query or fragment", hint: Self.formatHint)
        }
        self.kind = kind
        self.address = try HostAndPort(parsing: rest, what: "proxy address")
        self.credentials = credentials
    }

    /// The URL with the password replaced by `<redacted>`.
    public var description: String {
        let user = credentials.map { Self.percentEncoded($0.user) + ":<redacted>@" } ?? ""
        return "\(kind.rawValue)://\(user)\(address)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:]) }

    private static func credentials(_ text: Substring) throws(ConfigurationValueError) -> Credentials {
        guard let colon = text.firstIndex(of: ":") else {
            throw ConfigurationValueError(
                "The proxy user has no password", hint: "write user:password@host:port")
        }
        guard let user = percentDecoded(text[..<colon]),
              let password = percentDecoded(text[text.index(after: colon)...])
        else {
            throw ConfigurationValueError(
                "The proxy user or password has a malformed percent escape",
                hint: "escape '@' as %40, ':' as %3A and '%' as %25")
        }
        guard !user.isEmpty else {
            throw ConfigurationValueError("The proxy user name is empty", hint: formatHint)
        }
        guard user.utf8.count <= maxCredentialLength, password.utf8.count <= maxCredentialLength else {
            throw ConfigurationValueError("The proxy user and password are limited to 255 bytes each")
        }
        return Credentials(user: user, password: password)
    }

    /// Strict percent-decoding to valid UTF-8; nil when malformed.
    private static func percentDecoded(_ text: Substring) -> String? {
        PercentEncoding.decodedBytes(text).flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// Escapes the characters that would break the URL shape when shown.
    private static func percentEncoded(_ text: String) -> String {
        PercentEncoding.encoded(text) { !"%@:/".utf8.contains($0) }
    }

    private static let formatHint = "write socks5://[user:pass@]host:port or http://[user:pass@]host:port"
    private static let formatError = ConfigurationValueError(
        "The proxy is not a URL", hint: formatHint)
}
