import WebProxyCore

/// The strict INI parser behind `DaemonConfiguration.parse`: it collects every error (with
/// file, line and hint) instead of stopping at the first, and builds typed values.
struct ConfigurationParser {
    let file: String
    let environment: [String: String]
    let fileReadableByOthers: Bool
    private(set) var errors: [ConfigurationDiagnostic] = []
    private(set) var warnings: [ConfigurationDiagnostic] = []

    init(file: String, environment: [String: String], fileReadableByOthers: Bool) {
        self.file = file
        self.environment = environment
        self.fileReadableByOthers = fileReadableByOthers
    }

    /// The keys a `[relay NAME]` section accepts.
    static let relayKeys = [
        "link", "host", "base-path", "secret", "secret-file", "secret-credential", "listen",
        "allow-non-loopback", "carrier", "ca-file", "pin-sha256", "connect-to", "proxy",
        "max-streams", "user-agent", "http2", "media-session", "pace-uploads",
    ]
    /// The keys the `[daemon]` section accepts.
    static let daemonKeys = ["metrics", "log-level", "allow-non-loopback"]
    /// Keys that may appear more than once in a section; their values accumulate.
    static let repeatableKeys: Set = ["pin-sha256"]

    private struct Entry {
        let key: String
        let value: String
        let line: Int
    }

    private enum Kind: Equatable {
        case daemon
        case relay(String)
    }

    private struct Section {
        let kind: Kind
        let line: Int
        var entries: [Entry] = []

        func first(_ key: String) -> Entry? { entries.first { $0.key == key } }
        func all(_ key: String) -> [Entry] { entries.filter { $0.key == key } }
    }

    /// The configuration, or nil when nothing usable was found; check `errors` too.
    mutating func parse(_ text: String) -> DaemonConfiguration? {
        let sections = scan(text)
        var configuration = DaemonConfiguration(relays: [])
        var daemonSection: Section?
        var listenLines: [(address: ListenAddress, relay: String, line: Int)] = []
        for section in sections {
            switch section.kind {
            case .daemon:
                daemonSection = section
                buildDaemon(section, into: &configuration)
            case .relay(let name):
                guard let relay = buildRelay(name: name, section) else { continue }
                let line = section.first("listen")?.line ?? section.line
                if let clash = listenLines.first(where: { $0.address.conflicts(with: relay.listen) }) {
                    error(line, "Relay '\(name)' listens on \(relay.listen), which relay '\(clash.relay)' (line \(clash.line)) already uses",
                          hint: "give every relay its own port")
                }
                listenLines.append((relay.listen, name, line))
                configuration.relays.append(relay)
            }
        }
        if let metrics = configuration.metrics,
           let clash = listenLines.first(where: { $0.address.conflicts(with: metrics) })
        {
            error(daemonSection?.first("metrics")?.line,
                  "metrics listens on \(metrics), which relay '\(clash.relay)' (line \(clash.line)) already uses",
                  hint: "use another port, e.g. 9464")
        }
        if !sections.contains(where: { $0.kind != .daemon }) && errors.isEmpty {
            error(nil, "The configuration has no [relay NAME] section",
                  hint: "add one per relay; see webproxyd.conf.example")
        }
        return errors.isEmpty ? configuration : nil
    }

    // MARK: - Lines into sections

    private mutating func scan(_ text: String) -> [Section] {
        var sections: [Section] = []
        /// True after a broken section header: its keys are skipped, not reported.
        var skipping = false
        // "\r\n" is one Character in Swift, so it is a separator of its own.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            let line = Self.trimmed(rawLine)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                if let section = header(line, number: number, existing: sections) {
                    sections.append(section)
                    skipping = false
                } else {
                    skipping = true
                }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                error(number, "Expected 'key = value', a [section] header or a comment",
                      hint: "comments start with # or ; at the beginning of a line")
                continue
            }
            let key = String(Self.trimmed(line[..<equals]))
            let value = String(Self.trimmed(line[line.index(after: equals)...]))
            if skipping { continue }
            guard var section = sections.popLast() else {
                error(number, "'\(key)' is outside any section",
                      hint: "put it under [relay NAME] or [daemon]")
                skipping = true
                continue
            }
            defer { sections.append(section) }
            let known = section.kind == .daemon ? Self.daemonKeys : Self.relayKeys
            let other = section.kind == .daemon ? Self.relayKeys : Self.daemonKeys
            guard known.contains(key) else {
                if key.isEmpty {
                    error(number, "A line starts with '=' and has no key")
                } else if other.contains(key) {
                    error(number, "'\(key)' belongs in \(section.kind == .daemon ? "a [relay NAME]" : "the [daemon]") section")
                } else {
                    let suggestion = KeySuggestion.closest(to: key, among: known)
                    error(number, "Unknown key '\(key)' in \(Self.name(of: section.kind))",
                          hint: suggestion.map { "did you mean '\($0)'?" }
                              ?? "known keys: \(known.joined(separator: ", "))")
                }
                continue
            }
            if let previous = section.first(key), !Self.repeatableKeys.contains(key) {
                error(number, "'\(key)' is set twice in \(Self.name(of: section.kind)) (first on line \(previous.line))",
                      hint: "keep one")
                continue
            }
            guard !value.isEmpty else {
                error(number, "'\(key)' has no value", hint: "remove the line or give a value")
                continue
            }
            section.entries.append(Entry(key: key, value: value, line: number))
        }
        return sections
    }

    /// A `[daemon]` or `[relay NAME]` header; nil (after reporting) when malformed.
    private mutating func header(_ line: Substring, number: Int, existing: [Section]) -> Section? {
        guard line.hasSuffix("]") else {
            error(number, "A section header must end with ']'", hint: "write [relay NAME] or [daemon]")
            return nil
        }
        let words = line.dropFirst().dropLast().split(whereSeparator: { $0 == " " || $0 == "\t" })
        let kind: Kind
        switch (words.first, words.count) {
        case ("daemon"?, 1):
            kind = .daemon
        case ("relay"?, 2):
            let name = String(words[1])
            guard Self.isValidRelayName(name) else {
                error(number, "The relay name must be 1 to \(RelayConfiguration.maxNameLength) letters, digits, '-', '_' or '.', starting with a letter or digit",
                      hint: "it is also the socket unit's FileDescriptorName=")
                return nil
            }
            kind = .relay(name)
        case ("relay"?, 1):
            error(number, "A relay section needs a name", hint: "write [relay NAME], e.g. [relay home]")
            return nil
        case ("daemon"?, _), ("relay"?, _):
            error(number, "Too many words in the section header", hint: "write [relay NAME] or [daemon]")
            return nil
        default:
            let word = words.first.map(String.init) ?? ""
            let suggestion = KeySuggestion.closest(to: word, among: ["relay", "daemon"])
            error(number, "Unknown section '[\(words.joined(separator: " "))]'",
                  hint: suggestion.map { "did you mean '[\($0)\($0 == "relay" ? " NAME" : "")]'?" }
                      ?? "write [relay NAME] or [daemon]")
            return nil
        }
        if let previous = existing.first(where: { $0.kind == kind }) {
            error(number, "\(Self.name(of: kind)) appears twice (first on line \(previous.line))",
                  hint: kind == .daemon ? "merge the two [daemon] sections" : "give every relay its own name")
            return nil
        }
        return Section(kind: kind, line: number)
    }

    // MARK: - Sections into values

    private mutating func buildDaemon(_ section: Section, into configuration: inout DaemonConfiguration) {
        if let level = value(section, "log-level", { text throws(ConfigurationValueError) in
            guard let level = LogLevel(rawValue: text) else {
                throw ConfigurationValueError(
                    "Unknown log level",
                    hint: KeySuggestion.closest(to: text, among: LogLevel.allCases.map(\.rawValue))
                        .map { "did you mean '\($0)'?" }
                        ?? "use one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return level
        }) {
            configuration.logLevel = level
        }
        let allowNonLoopback = value(section, "allow-non-loopback", Self.parseBool) ?? false
        configuration.metrics = value(section, "metrics") { text throws(ConfigurationValueError) in
            let address = try ListenAddress(parsing: text)
            try checkLoopback(address, allowed: allowNonLoopback, key: "metrics")
            return address
        }
        if allowNonLoopback, let metrics = configuration.metrics, !metrics.isLoopback {
            warning(section.first("metrics")?.line,
                    "metrics listens on non-loopback address \(metrics); relay names and traffic counts are visible to the network",
                    hint: "firewall the port if that is not intended")
        }
    }

    private mutating func buildRelay(name: String, _ section: Section) -> RelayConfiguration? {
        let errorCount = errors.count
        let identity = relayIdentity(name: name, section)

        let allowNonLoopback = value(section, "allow-non-loopback", Self.parseBool) ?? false
        let listen = value(section, "listen") { text throws(ConfigurationValueError) in
            let address = try ListenAddress(parsing: text)
            try checkLoopback(address, allowed: allowNonLoopback, key: "listen")
            return address
        }
        if section.first("listen") == nil {
            error(section.line, "Relay '\(name)' has no 'listen' address",
                  hint: "add e.g. listen = 127.0.0.1:8443")
        }
        if allowNonLoopback, let listen, !listen.isLoopback {
            warning(section.first("listen")?.line,
                    "Relay '\(name)' listens on non-loopback address \(listen): anyone who can reach it and knows the secret can use the relay",
                    hint: "firewall the port to the clients you mean")
        }
        let carrier = value(section, "carrier") { text throws(ConfigurationValueError) in
            try CarrierChoice(parsingCarrier: text)
        } ?? .follow
        let caFile = value(section, "ca-file") { path throws(ConfigurationValueError) in
            try checkCAFile(path)
            return path
        }
        var pins: [SPKIPin] = []
        for entry in section.all("pin-sha256") {
            for piece in entry.value.split(separator: ",") {
                if let pin = attempt(entry.line, { () throws(ConfigurationValueError) in
                    try SPKIPin(parsing: Self.trimmed(piece))
                }) {
                    pins.append(pin)
                }
            }
        }
        let connectTo = value(section, "connect-to") { text throws(ConfigurationValueError) in
            try HostAndPort(parsing: text, what: "connect-to address")
        }
        let proxy = value(section, "proxy") { text throws(ConfigurationValueError) in
            try UpstreamProxy(parsing: text)
        }
        let maxStreams = value(section, "max-streams") { text throws(ConfigurationValueError) in
            let limit = RelayConfiguration.maxStreamsLimit
            guard let number = Int(text), (1...limit).contains(number) else {
                throw ConfigurationValueError("max-streams must be a whole number from 1 to \(limit)")
            }
            return number
        } ?? RelayConfiguration.maxStreamsLimit
        let userAgent = value(section, "user-agent", RelayConfiguration.parseUserAgent)
        let http2 = value(section, "http2", Self.parseBool) ?? true
        let mediaSession = value(section, "media-session", Self.parseBool) ?? true
        let paceUploads = value(section, "pace-uploads", Self.parseBool) ?? false

        guard errors.count == errorCount, let identity, let listen else { return nil }
        return RelayConfiguration(
            name: name, host: identity.host, basePath: identity.basePath, secret: identity.secret,
            listen: listen, allowNonLoopback: allowNonLoopback, carrier: carrier, caFile: caFile,
            pins: pins, connectTo: connectTo, proxy: proxy, maxStreams: maxStreams, userAgent: userAgent,
            http2: http2, mediaSession: mediaSession, paceUploads: paceUploads)
    }

    /// Host, base path and secret: from `link`, or from `host` (+ `base-path`) and exactly
    /// one secret source.
    private mutating func relayIdentity(name: String, _ section: Section) -> ProxyLink? {
        let secretKeys = ["secret", "secret-file", "secret-credential"]
        if let linkEntry = section.first("link") {
            for entry in section.entries where ["host", "base-path"].contains(entry.key) || secretKeys.contains(entry.key) {
                error(entry.line, "'\(entry.key)' cannot be combined with 'link' (line \(linkEntry.line))",
                      hint: "the link already names the host, base path and secret; keep one form")
            }
            warnIfExposed(linkEntry)
            return value(section, "link", parseProxyLink)
        }
        let host = value(section, "host") { text throws(ConfigurationValueError) in
            try keepingMessage { () throws(IdentityError) in try RelayHost(text) }
        }
        if section.first("host") == nil {
            error(section.line, "Relay '\(name)' has neither 'link' nor 'host'",
                  hint: "add link = tg://webproxy?... or host = relay.example.com with a secret")
        }
        let basePath = value(section, "base-path") { text throws(ConfigurationValueError) in
            try keepingMessage { () throws(IdentityError) in try BasePath(text) }
        }
        let sources = section.entries.filter { secretKeys.contains($0.key) }
        guard let sourceEntry = sources.first else {
            error(section.line, "Relay '\(name)' has no secret",
                  hint: "add exactly one of secret, secret-file or secret-credential")
            return nil
        }
        for extra in sources.dropFirst() {
            error(extra.line, "'\(extra.key)' conflicts with '\(sourceEntry.key)' (line \(sourceEntry.line))",
                  hint: "give exactly one of secret, secret-file or secret-credential")
        }
        guard sources.count == 1 else { return nil }
        let source: SecretSource = switch sourceEntry.key {
        case "secret": .inline(sourceEntry.value)
        case "secret-file": .file(path: sourceEntry.value)
        default: .credential(name: sourceEntry.value)
        }
        if case .inline = source { warnIfExposed(sourceEntry) }
        let environment = self.environment
        guard let loaded = attempt(sourceEntry.line, { () throws(ConfigurationValueError) in
            try source.load(environment: environment)
        }) else { return nil }
        if let warning = loaded.warning {
            self.warning(sourceEntry.line, warning.message, hint: warning.hint)
        }
        guard let host else { return nil }
        return ProxyLink(host: host, basePath: basePath, secret: loaded.secret)
    }

    /// Warns when a secret is written into a configuration file others can read.
    private mutating func warnIfExposed(_ entry: Entry) {
        guard fileReadableByOthers else { return }
        warning(entry.line, "'\(entry.key)' puts the relay secret in a file other users can read",
                hint: "use secret-credential with LoadCredential=, or chmod 600 the file")
    }

    // MARK: - Helpers

    /// The parsed value of `key`, or nil when absent or refused (the refusal is recorded).
    private mutating func value<T>(
        _ section: Section, _ key: String,
        _ parse: (String) throws(ConfigurationValueError) -> T
    ) -> T? {
        guard let entry = section.first(key) else { return nil }
        return attempt(entry.line) { () throws(ConfigurationValueError) in
            try parse(entry.value)
        }
    }

    private mutating func attempt<T>(_ line: Int, _ body: () throws(ConfigurationValueError) -> T) -> T? {
        do {
            return try body()
        } catch {
            self.error(line, error.message, hint: error.hint)
            return nil
        }
    }

    private static func parseBool(_ text: String) throws(ConfigurationValueError) -> Bool {
        switch text {
        case "yes", "true": return true
        case "no", "false": return false
        default: throw ConfigurationValueError("Expected yes or no", hint: "write yes or no")
        }
    }

    private static func isValidRelayName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= RelayConfiguration.maxNameLength else {
            return false
        }
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        return isAlphanumeric(first)
            && name.utf8.allSatisfy { isAlphanumeric($0) || "-_.".utf8.contains($0) }
    }

    private static func name(of kind: Kind) -> String {
        switch kind {
        case .daemon: "[daemon]"
        case .relay(let name): "[relay \(name)]"
        }
    }

    /// Without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }),
              let last = text.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return text[first...last]
    }

    private mutating func error(_ line: Int?, _ message: String, hint: String? = nil) {
        errors.append(ConfigurationDiagnostic(.error, file: file, line: line, message, hint: hint))
    }

    private mutating func warning(_ line: Int?, _ message: String, hint: String? = nil) {
        warnings.append(ConfigurationDiagnostic(.warning, file: file, line: line, message, hint: hint))
    }
}
