#if canImport(Glibc)
import Glibc
#endif
import WebProxyNet

/// The whole `/etc/webproxyd/webproxyd.conf`: daemon settings and the relays, in file order.
public struct DaemonConfiguration: Sendable, Equatable {
    /// Where the Prometheus metrics endpoint listens; nil when it is off.
    public var metrics: ListenAddress?
    /// The least important level that is logged.
    public var logLevel: LogLevel
    /// One entry per `[relay NAME]` section.
    public var relays: [RelayConfiguration]

    /// The default configuration path.
    public static let defaultPath = "/etc/webproxyd/webproxyd.conf"
    /// A configuration file is a few kilobytes; refuse anything absurd before parsing.
    static let maxFileSize = 1 << 20

    public init(metrics: ListenAddress? = nil, logLevel: LogLevel = .info,
                relays: [RelayConfiguration]) {
        self.metrics = metrics
        self.logLevel = logLevel
        self.relays = relays
    }

    /// Reads and parses a configuration file. `environment` supplies
    /// `CREDENTIALS_DIRECTORY` for `secret-credential`.
    public static func load(path: String, environment: [String: String])
        throws(ConfigurationError) -> LoadedConfiguration
    {
        let file: SmallFile
        do {
            file = try SmallFile(path: path, limit: maxFileSize, what: "configuration file")
        } catch {
            throw ConfigurationError([ConfigurationDiagnostic(
                .error, file: path, line: nil, error.message, hint: error.hint)])
        }
        return try parse(file.text, file: path, environment: environment,
                         fileReadableByOthers: file.mode & 0o044 != 0)
    }

    /// Parses configuration text. `file` only labels diagnostics;
    /// `fileReadableByOthers` turns secrets written in the file into warnings.
    public static func parse(_ text: String, file: String, environment: [String: String],
                             fileReadableByOthers: Bool = false)
        throws(ConfigurationError) -> LoadedConfiguration
    {
        var parser = ConfigurationParser(
            file: file, environment: environment, fileReadableByOthers: fileReadableByOthers)
        let configuration = parser.parse(text)
        guard let configuration, parser.errors.isEmpty else {
            throw ConfigurationError(inFileOrder(parser.errors))
        }
        return LoadedConfiguration(configuration: configuration, warnings: inFileOrder(parser.warnings))
    }

    /// Sorted by line (a section's checks run after its lines are read, so a duplicate
    /// section can be reported before the problems inside the first one); stable, and
    /// file-wide problems (no line) first.
    private static func inFileOrder(_ diagnostics: [ConfigurationDiagnostic]) -> [ConfigurationDiagnostic] {
        diagnostics.sorted { ($0.line ?? 0) < ($1.line ?? 0) }
    }

    /// The relay with this section name.
    public func relay(named name: String) -> RelayConfiguration? {
        relays.first { $0.name == name }
    }

    /// What a reload changes, relay by relay (names in file order).
    public func changes(from previous: DaemonConfiguration) -> RelayChanges {
        var changes = RelayChanges()
        for relay in relays {
            switch previous.relay(named: relay.name) {
            case nil: changes.added.append(relay.name)
            case relay?: changes.unchanged.append(relay.name)
            case _?: changes.changed.append(relay.name)
            }
        }
        changes.removed = previous.relays.map(\.name).filter { relay(named: $0) == nil }
        return changes
    }
}

/// A parsed configuration and the warnings to log about it.
public struct LoadedConfiguration: Sendable, Equatable {
    public let configuration: DaemonConfiguration
    /// Accepted but worth fixing (a secret file others can read, a non-loopback listener).
    public let warnings: [ConfigurationDiagnostic]
}

/// Relay names grouped by what a reload must do with them.
public struct RelayChanges: Sendable, Equatable {
    /// New sections: start them.
    public var added: [String] = []
    /// Gone sections: drain and stop them.
    public var removed: [String] = []
    /// Sections whose settings differ: restart them.
    public var changed: [String] = []
    /// Identical sections: leave them running.
    public var unchanged: [String] = []

    public init(added: [String] = [], removed: [String] = [], changed: [String] = [],
                unchanged: [String] = []) {
        self.added = added
        self.removed = removed
        self.changed = changed
        self.unchanged = unchanged
    }
}

/// Refuses a CA file that is not an absolute path to a readable regular file.
/// Loads `path` as a relay's trust store, exactly as `run` will, so a file that holds no
/// usable PEM CA certificate is reported with its line instead of failing at start.
func checkCAFile(_ path: String) throws(ConfigurationValueError) {
    try checkReadableFile(path)
    do {
        _ = try TLSContext(client: TLSConfiguration.Client(trust: .caFile(path: path)))
    } catch {
        throw ConfigurationValueError(
            "\(path) holds no usable PEM CA certificate (OpenSSL: \(error.openSSLErrors.first ?? error.message))",
            hint: "ca-file takes a PEM bundle of CA certificates, '-----BEGIN CERTIFICATE-----' blocks")
    }
}

func checkReadableFile(_ path: String) throws(ConfigurationValueError) {
    try requireAbsolutePath(path)
    var status = stat()
    guard stat(path, &status) == 0 else {
        throw ConfigurationValueError("Cannot find \(path): \(String(cString: strerror(errno)))")
    }
    guard status.st_mode & S_IFMT == S_IFREG else {
        throw ConfigurationValueError("\(path) is not a regular file")
    }
    guard access(path, R_OK) == 0 else {
        throw ConfigurationValueError("Cannot read \(path): \(String(cString: strerror(errno)))")
    }
}
