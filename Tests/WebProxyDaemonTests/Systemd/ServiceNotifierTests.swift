#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import WebProxyDaemon

@Suite struct ServiceNotifierTests {
    /// Drives a notifier through start, status updates, watchdog, reload and stop.
    private func exerciseLifecycle(_ notifier: ServiceNotifier) {
        notifier.ready()
        notifier.status("Serving 2 relays", now: .seconds(10))
        notifier.status("Serving 2 relays, 1 session up", now: .milliseconds(10_400))
        notifier.status("Serving 2 relays, 2 sessions up", now: .milliseconds(10_500))
        notifier.flushStatus(now: .milliseconds(10_999))
        notifier.flushStatus(now: .seconds(11))
        notifier.status("Serving 2 relays, 2 sessions up", now: .seconds(20))
        notifier.watchdog()
        notifier.reloading(monotonicNow: .seconds(12) + .microseconds(5))
        notifier.ready()
        notifier.stopping()
    }

    private static let lifecycle = [
        "READY=1",
        "STATUS=Serving 2 relays",
        "STATUS=Serving 2 relays, 2 sessions up",
        "WATCHDOG=1",
        "RELOADING=1\nMONOTONIC_USEC=12000005",
        "READY=1",
        "STOPPING=1",
    ]

    @Test func sendsTheExactSequenceToAPathSocket() throws {
        let scratch = try OperationsScratchDirectory()
        let fake = try FakeNotifySocket(scratch.adopt("notify"))
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": fake.environmentValue])
        #expect(notifier.isEnabled)
        exerciseLifecycle(notifier)
        #expect(fake.receiveAll() == Self.lifecycle)
    }

    @Test func sendsTheExactSequenceToAnAbstractSocket() throws {
        let fake = try FakeNotifySocket("@webproxyd-test-notify-\(getpid())")
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": fake.environmentValue])
        #expect(notifier.socketAddress?.isAbstract == true)
        #expect(notifier.socketAddress?.description == fake.environmentValue)
        exerciseLifecycle(notifier)
        #expect(fake.receiveAll() == Self.lifecycle)
    }

    @Test func pendingStatusDeadlineFollowsTheThrottle() throws {
        let notifier = ServiceNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        notifier.status("a", now: .seconds(5))
        #expect(notifier.pendingStatusDeadline == nil)
        notifier.status("b", now: .seconds(5))
        #expect(notifier.pendingStatusDeadline == .seconds(6))
        notifier.flushStatus(now: .seconds(6))
        #expect(notifier.pendingStatusDeadline == nil)
    }

    @Test func statusThrottleCoalescesAndSkipsRepeats() {
        var throttle = StatusThrottle()
        #expect(throttle.offer("one", now: .zero) == "one")
        #expect(throttle.offer("one", now: .seconds(3)) == nil)
        #expect(throttle.offer("two", now: .milliseconds(3_100)) == "two")
        #expect(throttle.offer("three", now: .milliseconds(3_200)) == nil)
        #expect(throttle.offer("four", now: .milliseconds(3_300)) == nil)
        #expect(throttle.pending == "four")
        #expect(throttle.flush(now: .milliseconds(4_099)) == nil)
        #expect(throttle.flush(now: .milliseconds(4_100)) == "four")
        #expect(throttle.flush(now: .seconds(9)) == nil)
        // Offering the status already shown drops a pending one.
        #expect(throttle.offer("five", now: .milliseconds(4_200)) == nil)
        #expect(throttle.offer("four", now: .milliseconds(4_300)) == nil)
        #expect(throttle.pending == nil)
    }

    @Test func watchdogIntervalComesFromTheEnvironment() throws {
        let scratch = try OperationsScratchDirectory()
        let fake = try FakeNotifySocket(scratch.adopt("notify"))
        let base = ["NOTIFY_SOCKET": fake.environmentValue, "WATCHDOG_USEC": "30000000"]
        let ours = ServiceNotifier(environment: base.merging(["WATCHDOG_PID": "\(getpid())"]) { $1 })
        #expect(ours.watchdogTimeout == .seconds(30))
        #expect(ours.watchdogPingInterval == .seconds(15))
        #expect(ServiceNotifier(environment: base).watchdogTimeout == .seconds(30))
        #expect(ServiceNotifier(environment: base.merging(["WATCHDOG_PID": "1"]) { $1 }).watchdogTimeout == nil)
        #expect(ServiceNotifier(environment: base.merging(["WATCHDOG_USEC": "0"]) { $1 }).watchdogTimeout == nil)
        #expect(ServiceNotifier(environment: base.merging(["WATCHDOG_USEC": "x"]) { $1 }).watchdogTimeout == nil)
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "30000000"]).watchdogTimeout == nil)
    }

    @Test(arguments: ["", "relative/path", "@", "/" + String(repeating: "x", count: 108), "/a\0b"])
    func unusableSocketAddressesDisableNotifications(value: String) {
        #expect(NotifySocketAddress(parsing: value) == nil)
        #expect(!ServiceNotifier(environment: ["NOTIFY_SOCKET": value]).isEnabled)
    }

    @Test func processEnvironmentMatchesGetenv() throws {
        let environment = ProcessEnvironment.current()
        let path = try #require(getenv("PATH"))
        #expect(environment["PATH"] == String(cString: path))
        #expect(environment.count > 1)
    }

    @Test func monotonicClockIsMonotonicMicroseconds() {
        let first = MonotonicClock.now(), second = MonotonicClock.now()
        #expect(second >= first && first > .zero)
        #expect(ServiceNotifier.microseconds(.seconds(2) + .nanoseconds(1_999)) == 2_000_001)
    }
}
