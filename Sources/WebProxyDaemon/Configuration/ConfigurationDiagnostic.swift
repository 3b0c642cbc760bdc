/// One problem found in the configuration: where it is, what is wrong, and how to fix it.
///
/// Messages never repeat a value that could be a secret or a password.
public struct ConfigurationDiagnostic: Sendable, Equatable, CustomStringConvertible {
    /// Whether the daemon refuses the configuration (`error`) or only reports it.
    public enum Severity: String, Sendable {
        case error, warning
    }

    public let severity: Severity
    /// The configuration file, or `command line` for the quick flags.
    public let file: String
    /// 1-based line number; nil when the problem has no single line (a missing file).
    public let line: Int?
    /// What is wrong.
    public let message: String
    /// What to do about it, e.g. "did you mean 'ca-file'?".
    public let hint: String?

    public init(_ severity: Severity, file: String, line: Int?, _ message: String,
                hint: String? = nil) {
        self.severity = severity
        self.file = file
        self.line = line
        self.message = message
        self.hint = hint
    }

    /// `file:line: error: message (hint)`, the compiler-style form editors understand.
    public var description: String {
        var text = file
        if let line { text += ":\(line)" }
        text += ": \(severity.rawValue): \(message)"
        if let hint { text += " (\(hint))" }
        return text
    }
}

/// The configuration was refused; `diagnostics` lists every error found (at least one),
/// in file order.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let diagnostics: [ConfigurationDiagnostic]

    public init(_ diagnostics: [ConfigurationDiagnostic]) {
        self.diagnostics = diagnostics
    }

    /// One diagnostic per line.
    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}
