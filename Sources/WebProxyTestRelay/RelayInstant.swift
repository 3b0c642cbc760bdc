/// A point on the shell's monotonic clock, in nanoseconds. The engine never reads a clock:
/// every event carries `now`.
public struct RelayInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary origin chosen by the shell.
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// An instant `milliseconds` after the origin (handy for tests and transcripts).
    public static func milliseconds(_ milliseconds: UInt64) -> RelayInstant {
        RelayInstant(
            nanoseconds: milliseconds.multipliedReportingOverflow(by: 1_000_000).partialValue)
    }

    /// This instant moved forward by `duration` (negative durations count as zero; saturates).
    public func advanced(by duration: Duration) -> RelayInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.relayNanoseconds)
        return RelayInstant(nanoseconds: overflow ? .max : sum)
    }

    public static func < (a: RelayInstant, b: RelayInstant) -> Bool {
        a.nanoseconds < b.nanoseconds
    }

    public var description: String { "\(nanoseconds / 1_000_000) ms" }
}

extension Duration {
    /// Whole nanoseconds, clamped to 0...UInt64.max.
    var relayNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflow2) = whole.addingReportingOverflow(
            UInt64(max(attoseconds, 0) / 1_000_000_000))
        return overflow2 ? .max : sum
    }
}
