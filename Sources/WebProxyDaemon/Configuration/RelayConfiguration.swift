import WebProxyCore

/// Everything one `[relay NAME]` section (or the quick `run --link` flags) says: which
/// relay to reach, how, and where the local MTProxy listener binds.
///
/// Equatable so that a reload can tell changed relays from unchanged ones; the secret is
/// compared in constant time. `description` never shows the secret or a proxy password.
public struct RelayConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The section name: the journal's `WEBPROXY_RELAY` and the socket unit's `FileDescriptorName=`.
    public var name: String
    /// The relay's canonical hostname.
    public var host: RelayHost
    /// The relay's base path; nil when it is mounted at the root.
    public var basePath: BasePath?
    /// The relay's MTProxy secret (also what local clients must use).
    public var secret: ProxySecret
    /// Where the local MTProxy listener binds.
    public var listen: ListenAddress
    /// Whether `listen` may be a non-loopback address.
    public var allowNonLoopback: Bool
    /// Follow the relay's carrier mode, or require one.
    public var carrier: CarrierChoice
    /// A PEM bundle to trust instead of the system CAs.
    public var caFile: String?
    /// SPKI SHA-256 pins; when non-empty, the relay's chain must contain one of them.
    public var pins: [SPKIPin]
    /// Connect TCP here instead of the relay host (SNI and Host stay the relay host).
    public var connectTo: HostAndPort?
    /// An outbound proxy to reach the relay through.
    public var proxy: UpstreamProxy?
    /// The most streams opened at once on this relay's session.
    public var maxStreams: Int
    /// The User-Agent of every request; nil for Chromium's (`BrowserHeaders`).
    public var userAgent: String?
    /// Whether the https carriers offer h2 (a browser does). Off, every request goes over
    /// HTTP/1.1, whose lanes each get a TCP flow of their own.
    public var http2: Bool
    /// Whether Telegram's file transfers (media-cluster connections, and a DC's connections
    /// beside its chat) get relay sessions of their own, and with them their own TCP flows, so
    /// chat does not queue behind them (`SessionRole`). Not used on websocket-lanes, whose
    /// streams have a flow each.
    public var mediaSession: Bool
    /// Whether the websocket carrier paces bulk uploads (`UplinkPacer`): chat stays quick
    /// beside them, at a third of the upload rate on a congested path. Off by default.
    public var paceUploads: Bool

    /// The relay's `max_streams_per_session`: the default and the upper bound.
    public static let maxStreamsLimit = 128
    /// The relay name the quick `run --link` flags use.
    public static let quickRelayName = "default"
    /// The longest relay name (it becomes a file descriptor name and a journal value).
    static let maxNameLength = 64

    public init(name: String, host: RelayHost, basePath: BasePath?, secret: ProxySecret,
                listen: ListenAddress, allowNonLoopback: Bool = false,
                carrier: CarrierChoice = .follow, caFile: String? = nil, pins: [SPKIPin] = [],
                connectTo: HostAndPort? = nil, proxy: UpstreamProxy? = nil,
                maxStreams: Int = RelayConfiguration.maxStreamsLimit, userAgent: String? = nil,
                http2: Bool = true, mediaSession: Bool = true, paceUploads: Bool = false) {
        self.name = name
        self.host = host
        self.basePath = basePath
        self.secret = secret
        self.listen = listen
        self.allowNonLoopback = allowNonLoopback
        self.carrier = carrier
        self.caFile = caFile
        self.pins = pins
        self.connectTo = connectTo
        self.proxy = proxy
        self.maxStreams = maxStreams
        self.userAgent = userAgent
        self.http2 = http2
        self.mediaSession = mediaSession
        self.paceUploads = paceUploads
    }

    /// The browser whose requests the relay sees.
    public var browser: BrowserHeaders { userAgent.map(BrowserHeaders.init(userAgent:)) ?? .chromium }

    /// The longest User-Agent accepted (Chromium's is 101 characters).
    static let maxUserAgentLength = 512

    /// A User-Agent must fit in one header line: visible ASCII and inner spaces.
    static func parseUserAgent(_ text: String) throws(ConfigurationValueError) -> String {
        guard !text.isEmpty, text.utf8.count <= maxUserAgentLength,
              text.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else {
            throw ConfigurationValueError(
                "user-agent must be 1 to \(maxUserAgentLength) printable ASCII characters",
                hint: "e.g. the User-Agent of your own browser, from its about:version page")
        }
        return text
    }

    /// The relay of the quick flags `run --link LINK --listen HOST:PORT` (and `check --link`),
    /// named `default`, with the optional `--ca-file`, `--connect-to`, `--proxy`,
    /// `--pin-sha256` (comma-separated) and `--carrier` that the file's keys of the same
    /// names set. Errors name the flag at fault.
    public init(quickLink link: String, listen: String, caFile: String? = nil,
                connectTo: String? = nil, proxy: String? = nil, pins: String? = nil,
                carrier: String? = nil) throws(ConfigurationError) {
        var diagnostics: [ConfigurationDiagnostic] = []
        func attempt<T>(_ flag: String, _ body: () throws(ConfigurationValueError) -> T) -> T? {
            do {
                return try body()
            } catch {
                diagnostics.append(ConfigurationDiagnostic(
                    .error, file: "command line", line: nil, "\(flag): \(error.message)",
                    hint: error.hint))
                return nil
            }
        }
        let parsedLink = attempt("--link") { () throws(ConfigurationValueError) in
            try parseProxyLink(link)
        }
        let address = attempt("--listen") { () throws(ConfigurationValueError) in
            let address = try ListenAddress(parsing: listen)
            try checkLoopback(address, allowed: false, key: "--listen")
            return address
        }
        let ca = caFile.flatMap { path in
            attempt("--ca-file") { () throws(ConfigurationValueError) in
                try checkCAFile(path)
                return path
            }
        }
        let target = connectTo.flatMap { text in
            attempt("--connect-to") { () throws(ConfigurationValueError) in
                try HostAndPort(parsing: text, what: "connect-to address")
            }
        }
        let upstream = proxy.flatMap { text in
            attempt("--proxy") { () throws(ConfigurationValueError) in try UpstreamProxy(parsing: text) }
        }
        let spkiPins = (pins?.split(separator: ",") ?? []).compactMap { piece in
            attempt("--pin-sha256") { () throws(ConfigurationValueError) in
                try SPKIPin(parsing: String(ConfigurationParser.trimmed(piece)))
            }
        }
        let choice = carrier.flatMap { text in
            attempt("--carrier") { () throws(ConfigurationValueError) in try CarrierChoice(parsingCarrier: text) }
        }
        guard diagnostics.isEmpty, let parsedLink, let address else {
            throw ConfigurationError(diagnostics)
        }
        self.init(name: Self.quickRelayName, host: parsedLink.host, basePath: parsedLink.basePath,
                  secret: parsedLink.secret, listen: address, carrier: choice ?? .follow, caFile: ca,
                  pins: spkiPins, connectTo: target, proxy: upstream)
    }

    /// The optional flags that go with `--link`: the file's keys of the same names.
    public static let quickOptionalFlags = ["--ca-file", "--connect-to", "--proxy", "--pin-sha256", "--carrier"]

    /// The quick relay from parsed command-line flags (`--link`, `--listen` and
    /// `quickOptionalFlags`).
    init(quickLink link: String, listen: String, flags: [String: String]) throws(ConfigurationError) {
        try self.init(
            quickLink: link, listen: listen, caFile: flags["--ca-file"], connectTo: flags["--connect-to"],
            proxy: flags["--proxy"], pins: flags["--pin-sha256"], carrier: flags["--carrier"])
    }

    /// The relay's WEB proxy link (contains the secret: never log it).
    public var link: ProxyLink { ProxyLink(host: host, basePath: basePath, secret: secret) }

    public var description: String {
        var text = "relay '\(name)' \(host.name)\(basePath.map { "/" + $0.value } ?? "")"
        text += " on \(listen), carrier \(carrier)"
        if let connectTo { text += ", connect-to \(connectTo)" }
        if let proxy { text += ", via \(proxy)" }
        return text
    }
}

/// Parses a WEB proxy link, keeping only the message of an identity error.
func parseProxyLink(_ text: String) throws(ConfigurationValueError) -> ProxyLink {
    try keepingMessage { () throws(IdentityError) in try ProxyLink(parsing: text) }
}

/// Runs an identity parser, turning its error into a configuration error with the same
/// message (identity messages never repeat the input).
func keepingMessage<T>(_ body: () throws(IdentityError) -> T) throws(ConfigurationValueError) -> T {
    do {
        return try body()
    } catch {
        throw ConfigurationValueError(error.message)
    }
}

/// Refuses a non-loopback listener unless the operator opted in.
func checkLoopback(_ address: ListenAddress, allowed: Bool, key: String)
    throws(ConfigurationValueError)
{
    guard !address.isLoopback, !allowed else { return }
    throw ConfigurationValueError(
        "\(address) is not a loopback address; anyone who can reach it could use the relay",
        hint: key.hasPrefix("--")
            ? "listen on 127.0.0.1 or [::1]"
            : "listen on 127.0.0.1 or [::1], or set allow-non-loopback = yes")
}
