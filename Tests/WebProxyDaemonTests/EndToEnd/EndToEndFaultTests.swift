#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

@testable import WebProxyDaemon
@testable import WebProxySession

/// End-to-end and fault-injection cases (issues 4 and 6): the real daemon in front of our test
/// relay over real TLS and sockets. Each nested suite holds one theme; everything runs one
/// case at a time so the cases do not compete for the 2 cores or for file descriptors.
/// Sizes are scaled down in debug builds; waits are bounded; timings are printed, not asserted.
/// Docs/FAILURES.md tabulates the cases, what they expect and what was measured.
@Suite(.serialized) enum EndToEndFaultTests {
    #if DEBUG
    static let isDebug = true
    #else
    static let isDebug = false
    #endif

    /// Session settings that fail fast: quick request retries and a short admission wait, so
    /// cases that expect failure finish in about a second.
    static var failFastSettings: SessionSettings {
        var settings = SessionSettings()
        settings.retry = RetryPolicy(
            initialBackoff: .milliseconds(50), maximumBackoff: .milliseconds(200), jitterPercent: 25,
            maximumFailedAttempts: 3, retryAfterCap: .seconds(2), operationBudget: .seconds(5),
            requestTimeout: .seconds(5))
        settings.requestDeadline = .seconds(5)
        settings.reconnect.localConnectionWait = .milliseconds(800)
        return settings
    }

    /// Echo bytes counted by the relay's backend so far.
    static func echoedBytes(_ harness: RelayServerHarness) async throws -> Int {
        try await onRelayLoop(harness.loop) { done in done(.success(harness.echo?.echoedByteCount ?? -1)) }
    }

    /// Echo bytes counted by the relay's backend so far, read from a blocking caller (-1 on
    /// timeout).
    static func echoedBytesNow(_ harness: RelayServerHarness) -> Int {
        onRelayLoopNow(harness) { harness.echo?.echoedByteCount ?? -1 }
    }

    /// DATA bytes the relay received from the daemon so far, read from a blocking caller.
    static func relayUplinkBytesNow(_ harness: RelayServerHarness) -> Int {
        onRelayLoopNow(harness) { harness.relay?.uplinkDataBytes ?? -1 }
    }

    /// Reads a count on the relay's loop and waits for it (the loop thread does the work, so
    /// no pool thread waits for the pool); -1 when the loop does not answer within 5 s.
    private static func onRelayLoopNow(_ harness: RelayServerHarness, _ read: @escaping @Sendable () -> Int) -> Int {
        let count = Mutex<Int>(-1)
        let done = DispatchSemaphore(value: 0)
        harness.loop.execute {
            count.withLock { $0 = read() }
            done.signal()
        }
        guard done.wait(timeout: .now() + 5) == .success else { return -1 }
        return count.withLock { $0 }
    }

    /// Connects new clients until one echoes `payload` intact (the daemon serves again);
    /// returns how long that took, nil when it never did within `limit`.
    static func timeUntilServing(_ rig: EndToEndRig, since start: ContinuousClock.Instant, within limit: Duration = .seconds(15))
        -> Duration?
    {
        let clock = ContinuousClock()
        let payload = testPayloads(count: 1, size: 16 << 10, seed: 99)[0]
        while clock.now - start < limit {
            if let client = rig.connect(timeoutSeconds: 5) {
                defer { client.close() }
                if client.send(payload), client.receive(count: payload.count) == payload { return clock.now - start }
            }
            usleep(20_000)
        }
        return nil
    }

    /// Whether `bytes` is an unchanged prefix of `payload` (nothing corrupted or duplicated).
    static func isPrefix(_ bytes: [UInt8], of payload: [UInt8]) -> Bool {
        bytes.count <= payload.count && payload[..<bytes.count].elementsEqual(bytes)
    }
}
