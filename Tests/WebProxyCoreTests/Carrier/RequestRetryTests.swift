import Testing
import WebProxyTestSupport

@testable import WebProxyCore

@Suite struct RequestRetryTests {
    typealias F = CarrierFixtures
    typealias Retry = RequestRetry<F.Instant>

    /// Feeds `failures` at the given offsets and collects the decisions.
    func run(
        _ failures: [(RequestFailure, Duration)], random: UInt64, wallClock: Int64 = 1_796_020_809
    ) -> [RetryDecision] {
        var retry = Retry(firstAttempt: .zero)
        var rng = F.FixedRandom(value: random)
        return failures.map { failure, at in
            retry.attemptFailed(failure, now: F.Instant(offset: at), wallClockSeconds: wallClock, using: &rng)
        }
    }

    func networkFailures(_ count: Int) -> [(RequestFailure, Duration)] {
        Array(repeating: (.noResponse, .seconds(1)), count: count)
    }

    @Test func backoffWithoutJitterDoublesToFiveSecondsAndGivesUpAtTheNinthFailure() {
        let decisions = run(networkFailures(9), random: 0)
        #expect(
            Array(decisions.dropLast()) == [
                .retry(after: .milliseconds(250)), .retry(after: .milliseconds(500)), .retry(after: .seconds(1)),
                .retry(after: .seconds(2)), .retry(after: .seconds(4)), .retry(after: .seconds(5)),
                .retry(after: .seconds(5)), .retry(after: .seconds(5)),
            ])
        #expect(decisions.last == .giveUp(.noResponse))
        if case .giveUp(let error) = decisions.last {
            #expect(error.description == "no response from the relay after 9 attempts")
        }
    }

    @Test func fullJitterAddsAQuarter() {
        let decisions = run(networkFailures(8), random: .max)
        #expect(
            decisions == [
                .retry(after: .microseconds(312_500)), .retry(after: .microseconds(625_000)),
                .retry(after: .milliseconds(1250)), .retry(after: .milliseconds(2500)),
                .retry(after: .seconds(5)), .retry(after: .milliseconds(6250)),
                .retry(after: .milliseconds(6250)), .retry(after: .milliseconds(6250)),
            ])
    }

    @Test func seededJitterStaysWithinAQuarter() {
        var retry = Retry(firstAttempt: .zero)
        var rng = SplitMix64(seed: 42)
        let bases: [Duration] = [
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5),
            .seconds(5),
        ]
        var sawJitter = false
        for base in bases {
            guard case .retry(let wait) = retry.attemptFailed(.noResponse, now: .zero, wallClockSeconds: 0, using: &rng)
            else {
                Issue.record("gave up early")
                return
            }
            #expect(wait >= base && wait <= base + base / 4)
            sawJitter = sawJitter || wait > base
        }
        #expect(sawJitter)
        #expect(retry.failedAttempts == 8)
    }

    @Test func serviceUnavailableDoesNotCountAgainstTheAttempts() {
        var failures: [(RequestFailure, Duration)] = []
        for second in 0..<8 {
            failures.append((.noResponse, .seconds(second * 3)))
            failures.append((.serviceUnavailable(.seconds(1)), .seconds(second * 3 + 1)))
            failures.append((.serviceUnavailable(.seconds(1)), .seconds(second * 3 + 2)))
        }
        failures.append((.noResponse, .seconds(30)))
        let decisions = run(failures, random: 0)
        #expect(decisions.dropLast().allSatisfy { if case .retry = $0 { true } else { false } })
        #expect(decisions.last == .giveUp(.noResponse))
    }

    @Test func retryAfterIsHonouredAndCappedAtThirtySeconds() {
        let decisions = run(
            [
                (.serviceUnavailable(.seconds(0)), .zero), (.serviceUnavailable(.seconds(1)), .zero),
                (.serviceUnavailable(.seconds(29)), .zero), (.serviceUnavailable(.seconds(120)), .zero),
                (.serviceUnavailable(.seconds(9_999_999_999)), .zero),
            ], random: .max)
        #expect(
            decisions == [
                .retry(after: .zero), .retry(after: .seconds(1)), .retry(after: .seconds(29)),
                .retry(after: .seconds(30)), .retry(after: .seconds(30)),
            ])
    }

    @Test func retryAfterDatesUseTheInjectedWallClock() {
        let wallClock: Int64 = 1_796_020_809
        let decisions = run(
            [
                (.serviceUnavailable(.date(unixSeconds: wallClock + 7)), .zero),
                (.serviceUnavailable(.date(unixSeconds: wallClock - 60)), .zero),
                (.serviceUnavailable(.date(unixSeconds: wallClock + 3600)), .zero),
            ], random: 0, wallClock: wallClock)
        #expect(decisions == [.retry(after: .seconds(7)), .retry(after: .zero), .retry(after: .seconds(30))])
    }

    @Test func serviceUnavailableWithoutRetryAfterFallsBackToTheBackoff() {
        let decisions = run(
            [(.serviceUnavailable(nil), .zero), (.serviceUnavailable(nil), .zero), (.noResponse, .zero)], random: 0)
        #expect(
            decisions == [
                .retry(after: .milliseconds(250)), .retry(after: .milliseconds(500)), .retry(after: .seconds(1)),
            ])
    }

    @Test func theOperationHasANinetySecondBudget() {
        var retry = Retry(firstAttempt: F.Instant(offset: .seconds(1000)))
        var rng = F.FixedRandom(value: 0)
        // 503 + Retry-After: 1, answered at once, for as long as the budget allows.
        var now = Duration.seconds(1000)
        var retries = 0
        while case .retry(let wait) = retry.attemptFailed(
            .serviceUnavailable(.seconds(1)), now: F.Instant(offset: now), wallClockSeconds: 0, using: &rng)
        {
            retries += 1
            now += wait
            if retries > 200 { break }
        }
        // Failures at 0...89 s retry (the last one lands exactly on 90 s); the one at 90 s does not.
        #expect(retries == 90)
        #expect(now == .seconds(1090))
        #expect(retry.failedAttempts == 0)
        let last = retry.attemptFailed(
            .serviceUnavailable(.seconds(1)), now: F.Instant(offset: now), wallClockSeconds: 0, using: &rng)
        #expect(last == .giveUp(.retryBudgetExhausted))
        if case .giveUp(let error) = last {
            #expect(error.description == "the relay did not take the request within its 90 s retry budget")
        }
    }

    @Test func theBudgetAlsoBoundsNetworkRetries() {
        // A request that hung until its 90 s abort timer leaves no budget for a retry.
        let decisions = run([(.noResponse, .milliseconds(89_800))], random: 0)
        #expect(decisions == [.giveUp(.retryBudgetExhausted)])
        #expect(run([(.noResponse, .milliseconds(89_750))], random: 0) == [.retry(after: .milliseconds(250))])
    }

    @Test func policyDefaultsMatchTheContract() {
        let policy = RetryPolicy.relayDefault
        #expect(policy.initialBackoff == .milliseconds(250))
        #expect(policy.maximumBackoff == .seconds(5))
        #expect(policy.jitterPercent == 25)
        #expect(policy.maximumFailedAttempts == 9)
        #expect(policy.retryAfterCap == .seconds(30))
        #expect(policy.operationBudget == .seconds(90))
        #expect(policy.requestTimeout == .seconds(90))
    }

    @Test func backoffSaturatesOnHugeSteps() {
        var rng = F.FixedRandom(value: .max)
        let delay = Backoff.delay(
            step: .max, initial: .milliseconds(250), maximum: .seconds(5), jitterPercent: 25, using: &rng)
        #expect(delay == .milliseconds(6250))
        #expect(Backoff.nanoseconds(.seconds(Int64.max)) == .max)
        #expect(Backoff.nanoseconds(.seconds(-1)) == 0)
    }
}
