/// The bridge's request retry rules (PROTOCOL.md §6.1), as numbers.
public struct RetryPolicy: Hashable, Sendable {
    /// First backoff after a failed attempt.
    public var initialBackoff: Duration
    /// Backoff doubles up to this.
    public var maximumBackoff: Duration
    /// Jitter added to a backoff, as a percentage of it (0–`jitterPercent` %).
    public var jitterPercent: Int
    /// Attempts without an HTTP response before giving up (503s do not count).
    public var maximumFailedAttempts: Int
    /// Longest wait a `Retry-After` may impose.
    public var retryAfterCap: Duration
    /// Time from an operation's first attempt after which no retry is scheduled.
    public var operationBudget: Duration
    /// Abort timer for one HTTP request; its expiry counts as a failure without response.
    public var requestTimeout: Duration

    public init(
        initialBackoff: Duration, maximumBackoff: Duration, jitterPercent: Int, maximumFailedAttempts: Int,
        retryAfterCap: Duration, operationBudget: Duration, requestTimeout: Duration
    ) {
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.jitterPercent = jitterPercent
        self.maximumFailedAttempts = maximumFailedAttempts
        self.retryAfterCap = retryAfterCap
        self.operationBudget = operationBudget
        self.requestTimeout = requestTimeout
    }

    /// 250 ms doubling to 5 s plus 0–25 % jitter, 9 attempts, Retry-After capped at 30 s,
    /// a 90 s budget per operation and a 90 s abort timer per request.
    public static let relayDefault = RetryPolicy(
        initialBackoff: .milliseconds(250), maximumBackoff: .seconds(5), jitterPercent: 25,
        maximumFailedAttempts: 9, retryAfterCap: .seconds(30), operationBudget: .seconds(90),
        requestTimeout: .seconds(90))
}

/// Exponential backoff with proportional jitter, shared by request retries and session
/// rebuilds.
enum Backoff {
    /// `initial * 2^step`, at most `maximum`, plus up to `jitterPercent` % of that: one draw
    /// of `random` scales it (0 adds nothing, `UInt64.max` adds the whole percentage).
    static func delay(
        step: Int, initial: Duration, maximum: Duration, jitterPercent: Int,
        using random: inout some RandomNumberGenerator
    ) -> Duration {
        let cap = nanoseconds(maximum)
        var base = min(nanoseconds(initial), cap)
        var doublings = step
        while doublings > 0, base < cap {
            let (doubled, overflow) = base.multipliedReportingOverflow(by: 2)
            base = overflow ? cap : min(doubled, cap)
            doublings -= 1
        }
        let percent = UInt64(min(max(jitterPercent, 0), 100))
        let spread = UInt64(100).dividingFullWidth(UInt64(base).multipliedFullWidth(by: percent)).quotient
        let jitter = UInt64.max.dividingFullWidth(spread.multipliedFullWidth(by: random.next())).quotient
        return .nanoseconds(base) + .nanoseconds(Int64(jitter))
    }

    /// `duration` in whole nanoseconds, clamped to 0...Int64.max.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (total, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? .max : total
    }
}
