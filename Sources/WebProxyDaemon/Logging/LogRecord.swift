/// One log message with its level, fields and the source location that emitted it.
public struct LogRecord: Sendable, Equatable {
    public var level: LogLevel
    public var message: String
    public var fields: LogFields
    /// `#fileID` of the call site (journald `CODE_FILE`).
    public var file: String
    /// `#line` of the call site (journald `CODE_LINE`).
    public var line: UInt
    /// `#function` of the call site (journald `CODE_FUNC`).
    public var function: String

    public init(level: LogLevel, message: String, fields: LogFields = LogFields(),
                file: String, line: UInt, function: String) {
        self.level = level
        self.message = message
        self.fields = fields
        self.file = file
        self.line = line
        self.function = function
    }
}

/// Where log records go: journald, standard error, or memory in tests.
public protocol LogBackend: Sendable {
    /// Writes one record; must not block for long and must not fail loudly.
    func write(_ record: LogRecord)
}
