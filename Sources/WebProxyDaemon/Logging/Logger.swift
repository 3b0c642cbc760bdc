import Synchronization
import WebProxyCore

/// The daemon's logger: a cheap-to-copy value with a level, default fields (such as the
/// relay), a backend, a shared rate limiter for repeated warnings and errors, and the
/// secrets to scrub from every message.
///
/// ```swift
/// let log = Logger(backend: StandardErrorLogBackend()).with(relay: "home")
/// log.notice("session up", LogFields(event: .sessionUp, carrier: "websocket"))
/// ```
public struct Logger: Sendable {
    /// Records below this level are dropped before their message is built. Every copy made
    /// from one logger shares it, so a reload that sets it reaches every relay's logger.
    public var level: LogLevel {
        get { threshold.level }
        nonmutating set { threshold.level = newValue }
    }
    /// Fields added to every record (a record's own fields take precedence).
    public var fields: LogFields

    private let threshold: SharedLevel
    private let backend: any LogBackend
    private let limiter: SharedRateLimiter?
    private var redactor: SecretRedactor

    /// A logger writing to `backend`. Warnings and errors go through `rateLimiter`
    /// (nil: no limit) timed by `clock`.
    public init(backend: any LogBackend, level: LogLevel = .info,
                rateLimiter: LogRateLimiter? = LogRateLimiter(),
                clock: @escaping @Sendable () -> Duration = MonotonicClock.now) {
        self.backend = backend
        self.threshold = SharedLevel(level)
        self.fields = LogFields()
        self.limiter = rateLimiter.map { SharedRateLimiter($0, clock: clock) }
        self.redactor = SecretRedactor(secrets: [])
    }

    /// A copy whose records carry `WEBPROXY_RELAY=name`.
    public func with(relay name: String) -> Logger {
        var copy = self
        copy.fields.relay = name
        return copy
    }

    /// A copy that replaces any spelling of these secrets (hex, base64, link form) in
    /// messages and string fields with `<redacted>`.
    public func redacting(_ secrets: [ProxySecret]) -> Logger {
        var copy = self
        copy.redactor = SecretRedactor(secrets: redactor.secrets + secrets)
        return copy
    }

    /// Logs `message` at `level`; the message is only built when the level is enabled.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String,
                    _ fields: LogFields = LogFields(), file: String = #fileID,
                    line: UInt = #line, function: String = #function) {
        guard level >= self.level else { return }
        let merged = self.fields.merging(fields).mapStrings(redactor.redacted)
        var record = LogRecord(level: level, message: redactor.redacted(message()),
                               fields: merged, file: file, line: line, function: function)
        if level >= .warning, let limiter {
            let key = [level.rawValue, merged.relay ?? "", merged.event?.name ?? "",
                       merged.error ?? "", record.message].joined(separator: "\u{1F}")
            switch limiter.admit(key) {
            case .suppress:
                return
            case .emit(let suppressed) where suppressed > 0:
                record.message += " (suppressed \(suppressed) identical messages)"
            case .emit:
                break
            }
        }
        backend.write(record)
    }

    public func debug(_ message: @autoclosure () -> String, _ fields: LogFields = LogFields(),
                      file: String = #fileID, line: UInt = #line, function: String = #function) {
        log(.debug, message(), fields, file: file, line: line, function: function)
    }

    public func info(_ message: @autoclosure () -> String, _ fields: LogFields = LogFields(),
                     file: String = #fileID, line: UInt = #line, function: String = #function) {
        log(.info, message(), fields, file: file, line: line, function: function)
    }

    public func notice(_ message: @autoclosure () -> String, _ fields: LogFields = LogFields(),
                       file: String = #fileID, line: UInt = #line, function: String = #function) {
        log(.notice, message(), fields, file: file, line: line, function: function)
    }

    public func warning(_ message: @autoclosure () -> String, _ fields: LogFields = LogFields(),
                        file: String = #fileID, line: UInt = #line, function: String = #function) {
        log(.warning, message(), fields, file: file, line: line, function: function)
    }

    public func error(_ message: @autoclosure () -> String, _ fields: LogFields = LogFields(),
                      file: String = #fileID, line: UInt = #line, function: String = #function) {
        log(.error, message(), fields, file: file, line: line, function: function)
    }
}

/// The rate limiter every copy of a logger shares, with its clock.
private final class SharedRateLimiter: Sendable {
    private let state: Mutex<LogRateLimiter>
    private let clock: @Sendable () -> Duration

    init(_ limiter: LogRateLimiter, clock: @escaping @Sendable () -> Duration) {
        self.state = Mutex(limiter)
        self.clock = clock
    }

    func admit(_ key: String) -> LogRateLimiter.Decision {
        let now = clock()
        return state.withLock { $0.admit(key, now: now) }
    }
}

/// The level all copies of one logger share.
private final class SharedLevel: Sendable {
    private let index: Atomic<Int>

    init(_ level: LogLevel) { index = Atomic(LogLevel.allCases.firstIndex(of: level) ?? 0) }

    var level: LogLevel {
        get { LogLevel.allCases[index.load(ordering: .relaxed)] }
        set { index.store(LogLevel.allCases.firstIndex(of: newValue) ?? 0, ordering: .relaxed) }
    }
}
