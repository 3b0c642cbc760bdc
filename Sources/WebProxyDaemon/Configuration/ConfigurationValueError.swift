/// A single configuration value was refused: what is wrong and, when there is one, a fix.
///
/// The message never repeats the value, which may be a secret or a password.
public struct ConfigurationValueError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let hint: String?

    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    public var description: String {
        hint.map { "\(message) (\($0))" } ?? message
    }
}
