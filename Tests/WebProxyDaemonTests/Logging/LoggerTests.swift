import Synchronization
import Testing
import WebProxyCore
@testable import WebProxyDaemon

/// A clock the test moves by hand.
final class ManualMonotonicClock: Sendable {
    private let current = Mutex(Duration.seconds(1000))

    var read: @Sendable () -> Duration { { self.current.withLock { $0 } } }

    func advance(by duration: Duration) { current.withLock { $0 += duration } }
}

@Suite struct LoggerTests {
    @Test func recordsCarryFieldsAndTheCallSite() {
        let memory = MemoryLogBackend()
        let log = Logger(backend: memory, level: .debug).with(relay: "home")
        log.notice("session up", LogFields(event: .sessionUp, carrier: "websocket", streams: 0)); let line = #line
        #expect(memory.records == [LogRecord(
            level: .notice, message: "session up",
            fields: LogFields(relay: "home", event: .sessionUp, carrier: "websocket", streams: 0),
            file: "WebProxyDaemonTests/LoggerTests.swift", line: UInt(line),
            function: "recordsCarryFieldsAndTheCallSite()")])
    }

    @Test func recordFieldsOverrideTheLoggersFields() {
        let memory = MemoryLogBackend()
        Logger(backend: memory).with(relay: "home").info("x", LogFields(relay: "work", stage: "hello"))
        #expect(memory.records.map(\.fields) == [LogFields(relay: "work", stage: "hello")])
    }

    @Test func levelsBelowTheThresholdAreNeverBuilt() {
        let memory = MemoryLogBackend()
        let log = Logger(backend: memory, level: .notice)
        let built = Mutex(0)
        func expensive() -> String { built.withLock { $0 += 1 }; return "built" }
        log.debug(expensive())
        log.info(expensive())
        log.notice(expensive())
        log.warning(expensive())
        log.error(expensive())
        #expect(built.withLock { $0 } == 3)
        #expect(memory.records.map(\.level) == [.notice, .warning, .error])
    }

    /// A reload sets the level once on the daemon's logger; every relay's copy follows.
    @Test func copiesShareTheLevel() {
        let memory = MemoryLogBackend()
        let root = Logger(backend: memory, level: .warning)
        let relay = root.with(relay: "home").redacting([])
        relay.debug("before")
        root.level = .debug
        relay.debug("after")
        #expect(memory.records.map(\.message) == ["after"])
        #expect(relay.level == .debug)
    }

    @Test func repeatedErrorsAreRateLimitedWithASummary() {
        let memory = MemoryLogBackend()
        let clock = ManualMonotonicClock()
        let log = Logger(backend: memory, rateLimiter: LogRateLimiter(burst: 3, window: .seconds(30)),
                         clock: clock.read).with(relay: "home")
        let fields = LogFields(event: .relayUnreachable, error: "connection refused")
        for _ in 0..<7 { log.error("relay unreachable", fields) }
        log.error("another problem")
        log.info("relay unreachable", fields)
        #expect(memory.records.map(\.message) == [
            "relay unreachable", "relay unreachable", "relay unreachable", "another problem",
            "relay unreachable",
        ])
        clock.advance(by: .seconds(29))
        log.error("relay unreachable", fields)
        #expect(memory.records.count == 5)
        clock.advance(by: .seconds(1))
        log.error("relay unreachable", fields)
        log.error("relay unreachable", fields)
        #expect(memory.records.suffix(2).map(\.message) == [
            "relay unreachable (suppressed 5 identical messages)", "relay unreachable",
        ])
    }

    @Test func rateLimiterWindowsAndKeyBound() {
        var limiter = LogRateLimiter(burst: 1, window: .seconds(10), maxKeys: 2)
        #expect(limiter.admit("a", now: .seconds(0)) == .emit(suppressed: 0))
        #expect(limiter.admit("a", now: .seconds(5)) == .suppress)
        #expect(limiter.admit("b", now: .seconds(6)) == .emit(suppressed: 0))
        // A third key evicts the expired window of "a" (its suppressed count is lost).
        #expect(limiter.admit("c", now: .seconds(11)) == .emit(suppressed: 0))
        #expect(limiter.admit("b", now: .seconds(12)) == .suppress)
        // The table is full of live windows: a new key passes untracked, every time.
        #expect(limiter.admit("a", now: .seconds(12)) == .emit(suppressed: 0))
        #expect(limiter.admit("a", now: .seconds(12)) == .emit(suppressed: 0))
        #expect(limiter.admit("b", now: .seconds(16)) == .emit(suppressed: 1))
    }

    @Test func messageIDsAreFixed128BitHexAndDistinct() {
        let ids = LogEvent.withMessageIDs.compactMap(\.messageID)
        #expect(ids.count == 4 && Set(ids).count == 4)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy { "0123456789abcdef".contains($0) } })
        #expect(LogEvent.sessionLost.messageID == "693e825d20474ada96029e0c53af0e85")
        #expect(LogEvent("stream-opened").messageID == nil)
    }
}
