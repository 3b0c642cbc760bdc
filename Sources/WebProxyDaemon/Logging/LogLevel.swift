/// How important a log record is. The names are the configuration's `log-level` values.
public enum LogLevel: String, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case debug, info, notice, warning, error

    /// The syslog priority journald stores in `PRIORITY=` (RFC 5424 numbering).
    public var syslogPriority: Int {
        switch self {
        case .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.syslogPriority > rhs.syslogPriority
    }

    public var description: String { rawValue }
}
