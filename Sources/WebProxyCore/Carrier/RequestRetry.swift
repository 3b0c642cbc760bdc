/// Why an attempt of a request did not succeed, as far as retrying is concerned.
public enum RequestFailure: Hashable, Sendable {
    /// No HTTP response: connection error, reset, or the request's abort timer fired.
    case noResponse
    /// `503`, with its `Retry-After` if readable.
    case serviceUnavailable(RetryAfter?)
}

/// What to do after a failed attempt.
public enum RetryDecision: Hashable, Sendable {
    /// Send the identical request (same sequence, cursor and bytes) again after this wait.
    case retry(after: Duration)
    /// Stop: the session is over.
    case giveUp(CarrierError)
}

/// Retry bookkeeping for one operation (one logical request and its repeats), per
/// PROTOCOL.md §6.1. Statuses other than 503 are fatal and never reach it; a success
/// simply ends it. Never reads a clock: `now` and the wall clock are inputs.
public struct RequestRetry<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public let policy: RetryPolicy
    /// When the first attempt was sent; the operation budget counts from here.
    public let firstAttempt: Instant
    /// Attempts that got no response so far.
    public private(set) var failedAttempts = 0
    private var backoffSteps = 0

    public init(policy: RetryPolicy = .relayDefault, firstAttempt: Instant) {
        self.policy = policy
        self.firstAttempt = firstAttempt
    }

    /// Records a failed attempt observed at `now` and decides whether to retry.
    /// `wallClockSeconds` (Unix time) resolves a `Retry-After` HTTP-date; `random` draws
    /// the backoff jitter.
    public mutating func attemptFailed(
        _ failure: RequestFailure, now: Instant, wallClockSeconds: Int64,
        using random: inout some RandomNumberGenerator
    ) -> RetryDecision {
        let wait: Duration
        switch failure {
        case .noResponse:
            failedAttempts += 1
            guard failedAttempts < policy.maximumFailedAttempts else {
                return .giveUp(
                    CarrierError.noResponse.detailed(
                        "no response from the relay after \(failedAttempts) attempts"))
            }
            wait = nextBackoff(using: &random)
        case .serviceUnavailable(let retryAfter?):
            wait = min(retryAfter.delay(wallClockSeconds: wallClockSeconds), policy.retryAfterCap)
        case .serviceUnavailable(nil):
            wait = nextBackoff(using: &random)
        }
        guard firstAttempt.duration(to: now) + wait <= policy.operationBudget else {
            return .giveUp(
                CarrierError.retryBudgetExhausted.detailed(
                    "the relay did not take the request within its \(policy.operationBudget.components.seconds) s retry budget"
                ))
        }
        return .retry(after: wait)
    }

    private mutating func nextBackoff(using random: inout some RandomNumberGenerator) -> Duration {
        defer { backoffSteps += 1 }
        return Backoff.delay(
            step: backoffSteps, initial: policy.initialBackoff, maximum: policy.maximumBackoff,
            jitterPercent: policy.jitterPercent, using: &random)
    }
}
