/// A WEB proxy link: `tg://webproxy?server=…&secret=…` or `https://t.me/webproxy?…`.
///
/// Root relays: `server=H&secret=<hex>`. Relays under a base path P:
/// `server=H%2FP&secret=base64url_nopad(0x70 || S)` (the 0x70 marker makes older clients
/// refuse the link). `host=` is an alias of `server=`. WEB relays are always HTTPS on 443,
/// so a port is refused unless it is exactly 443, which is dropped. Unknown parameters are
/// ignored; duplicates, fragments and user names are refused. Percent escapes must be
/// exact (`%` and two hex digits, valid UTF-8); `+` is a literal plus, not a space.
///
/// A rendered link contains the secret: `description` shows only host and path.
public struct ProxyLink: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The relay's canonical hostname.
    public var host: RelayHost
    /// The relay's base path; nil when it is mounted at the root.
    public var basePath: BasePath?
    /// The relay's secret.
    public var secret: ProxySecret

    /// The two spellings of a WEB proxy link.
    public enum Form: Sendable, CaseIterable {
        /// `tg://webproxy?…`, opened directly by Telegram apps.
        case deepLink
        /// `https://t.me/webproxy?…`, the shareable web form.
        case shareLink
    }

    public init(host: RelayHost, basePath: BasePath?, secret: ProxySecret) {
        self.host = host
        self.basePath = basePath
        self.secret = secret
    }

    /// Parses a `tg://webproxy` or `https://t.me/webproxy` link (surrounding white space
    /// ignored).
    public init(parsing input: some StringProtocol) throws(IdentityError) {
        let text = input.trimmingWhitespace
        guard !text.utf8.contains(UInt8(ascii: "#")) else {
            throw Self.linkError("The link has a fragment ('#…'); copy the link again without it.")
        }
        guard let query = try Self.query(of: text) else {
            throw Self.linkError("""
                This is not a WEB proxy link: expected tg://webproxy?server=…&secret=… or \
                https://t.me/webproxy?server=…&secret=….
                """)
        }
        var server: String?
        var secretText: String?
        var seen: Set<String> = []
        for piece in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.percentDecoded(parts[0])
            let value = try Self.percentDecoded(parts.count > 1 ? parts[1] : "")
            let key = name == "host" ? "server" : name
            guard ["server", "secret", "port"].contains(key) else { continue }
            guard seen.insert(key).inserted else {
                throw Self.linkError("""
                    The link repeats the '\(key)' parameter (host= counts as server=); keep \
                    exactly one.
                    """)
            }
            switch key {
            case "server": server = value
            case "secret": secretText = value
            default: if value != "443" { throw Self.portError }
            }
        }
        guard let server, !server.isEmpty else {
            throw Self.linkError("The link has no server= parameter naming the relay host.")
        }
        guard let secretText else {
            throw Self.linkError("The link has no secret= parameter.")
        }
        var hostText = Substring(server)
        var pathText: Substring?
        if let slash = server.firstIndex(of: "/") {
            hostText = server[..<slash]
            pathText = server[server.index(after: slash)...]
        }
        if let colon = hostText.firstIndex(of: ":") {
            let port = hostText[hostText.index(after: colon)...]
            let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
            guard !port.isEmpty, port.utf8.allSatisfy(digits.contains) else {
                throw Self.linkError("The server parameter of the link is not a valid hostname.")
            }
            guard port == "443" else { throw Self.portError }
            hostText = hostText[..<colon]
        }
        host = try RelayHost(hostText)
        basePath = try pathText.map(Self.canonicalBasePath)
        if basePath == nil {
            secret = try ProxySecret(parsing: secretText)
        } else {
            secret = try ProxySecret(basePathLinkValue: secretText)
        }
    }

    /// The link in the given form. Contains the secret: never log it.
    public func rendered(_ form: Form) -> String {
        var server = host.name
        var secretValue = secret.hex
        if let basePath {
            server += "/" + basePath.value
            secretValue = secret.basePathLinkValue
        }
        let prefix = form == .deepLink ? "tg://webproxy?" : "https://t.me/webproxy?"
        return prefix + "server=" + PercentEncoding.encoded(server) + "&secret=" + secretValue
    }

    /// The ordinary MTProxy link Telegram should use to reach the local webproxyd listener:
    /// `tg://proxy?server=<server>&port=<port>&secret=<lowercase hex of the same secret>`.
    /// Contains the secret: never log it.
    public static func localProxyLink(server: String, port: UInt16, secret: ProxySecret) -> String {
        "tg://proxy?server=" + PercentEncoding.encoded(server) + "&port=" + String(port)
            + "&secret=" + secret.hex
    }

    public var description: String {
        let path = basePath.map { "/" + $0.value } ?? ""
        return "ProxyLink(\(host.name)\(path), \(secret))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:]) }

    public static func == (lhs: ProxyLink, rhs: ProxyLink) -> Bool {
        lhs.host == rhs.host && lhs.basePath == rhs.basePath && lhs.secret == rhs.secret
    }

    /// The raw query of a `tg://webproxy?` or `https://t.me/webproxy?` link; nil for any
    /// other scheme or target.
    private static func query(of text: Substring) throws(IdentityError) -> Substring? {
        let question = text.firstIndex(of: "?") ?? text.endIndex
        let target = text[..<question].lowercased()
        if target.hasPrefix("https://"), target.dropFirst("https://".count).contains("@") {
            throw linkError("The link contains a user name ('…@'); copy the link again.")
        }
        guard target == "tg://webproxy" || target == "https://t.me/webproxy" else { return nil }
        return question == text.endIndex ? "" : text[text.index(after: question)...]
    }

    /// The base path after `H/` in a link: already canonical (no extra slashes or blanks).
    private static func canonicalBasePath(_ text: Substring) throws(IdentityError) -> BasePath {
        let path = try BasePath(text)
        guard path.value == text else {
            throw IdentityError(.invalidBasePath, """
                The base path in the link's server parameter must be host/path with no extra \
                slashes or spaces.
                """)
        }
        return path
    }

    /// Strict percent-decoding to valid UTF-8.
    private static func percentDecoded(_ text: Substring) throws(IdentityError) -> String {
        guard let bytes = PercentEncoding.decodedBytes(text) else {
            throw linkError("The link has a malformed percent escape; copy the link again.")
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw linkError("The link has percent escapes that are not valid UTF-8.")
        }
        return decoded
    }

    private static func linkError(_ message: String) -> IdentityError {
        IdentityError(.invalidLink, message)
    }

    private static let portError = IdentityError(.unsupportedPort, """
        WEB relays are always reached over HTTPS on port 443; remove the port from the link \
        (only :443 is accepted).
        """)
}
