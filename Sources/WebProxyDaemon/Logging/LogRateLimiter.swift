/// Limits repeats of identical warnings and errors: at most `burst` per key in each
/// `window`; the first record let through after a suppression reports how many were
/// dropped. Time is an input (monotonic `Duration`s), so the limiter is a pure value.
public struct LogRateLimiter: Sendable {
    /// What to do with one record.
    public enum Decision: Sendable, Equatable {
        /// Write it; `suppressed` identical records were dropped before it.
        case emit(suppressed: Int)
        /// Drop it.
        case suppress
    }

    public let burst: Int
    public let window: Duration
    /// Bounds memory when many distinct messages repeat (e.g. errors naming ports).
    public let maxKeys: Int

    private struct Window {
        var start: Duration
        var emitted: Int
        var suppressed: Int
    }

    private var windows: [String: Window] = [:]

    public init(burst: Int = 5, window: Duration = .seconds(30), maxKeys: Int = 1024) {
        self.burst = burst
        self.window = window
        self.maxKeys = maxKeys
    }

    /// Decides about one record identified by `key` at time `now`.
    public mutating func admit(_ key: String, now: Duration) -> Decision {
        if var current = windows[key], now - current.start < window {
            guard current.emitted >= burst else {
                current.emitted += 1
                windows[key] = current
                return .emit(suppressed: 0)
            }
            current.suppressed += 1
            windows[key] = current
            return .suppress
        }
        let suppressed = windows[key]?.suppressed ?? 0
        if windows[key] == nil, windows.count >= maxKeys {
            windows = windows.filter { now - $0.value.start < window }
            // Still full of live windows: let this one through untracked rather than
            // forget the counts of the others.
            if windows.count >= maxKeys { return .emit(suppressed: 0) }
        }
        windows[key] = Window(start: now, emitted: 1, suppressed: 0)
        return .emit(suppressed: suppressed)
    }
}
