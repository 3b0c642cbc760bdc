import Testing

@testable import WebProxyCore

@Suite struct ReconnectPolicyTests {
    typealias F = CarrierFixtures
    typealias Policy = ReconnectPolicy<F.Instant>

    func delays(_ policy: inout Policy, count: Int, at now: Duration = .zero, random: UInt64) -> [Duration] {
        var rng = F.FixedRandom(value: random)
        return (0..<count).map { _ in policy.sessionFailed(at: F.Instant(offset: now), using: &rng) }
    }

    @Test func rebuildDelaysDoubleFromOneToThirtySeconds() {
        var policy = Policy()
        #expect(
            delays(&policy, count: 8, random: 0) == [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
        var jittered = Policy()
        #expect(
            delays(&jittered, count: 7, random: .max)
                == [1250, 2500, 5000, 10_000, 20_000, 37_500, 37_500].map { Duration.milliseconds($0) })
    }

    @Test func aStableSessionResetsTheBackoff() {
        var policy = Policy()
        _ = delays(&policy, count: 4, random: 0)
        policy.sessionEstablished(at: F.Instant(offset: .seconds(100)))
        #expect(delays(&policy, count: 1, at: .seconds(120), random: 0) == [.seconds(1)])
        #expect(policy.consecutiveFailures == 1)
    }

    @Test func aFailureRightAfterABootstrapKeepsGrowing() {
        var policy = Policy()
        _ = delays(&policy, count: 3, random: 0)
        policy.sessionEstablished(at: F.Instant(offset: .seconds(100)))
        #expect(delays(&policy, count: 1, at: .seconds(119), random: 0) == [.seconds(8)])
        // The uptime is forgotten with the failure: a later failure does not reset either.
        #expect(delays(&policy, count: 1, at: .seconds(500), random: 0) == [.seconds(16)])
    }

    @Test func localConnectionsWaitTenSeconds() {
        let policy = Policy()
        #expect(policy.settings.localConnectionWait == .seconds(10))
        #expect(
            policy.localConnectionDeadline(arrivedAt: F.Instant(offset: .seconds(42)))
                == F.Instant(offset: .seconds(52)))
        #expect(policy.settings == .standard)
        #expect(policy.settings.stablePeriod == .seconds(20))
    }
}
