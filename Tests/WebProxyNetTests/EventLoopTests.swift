import Glibc
import Synchronization
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

@Suite struct EventLoopTests {
    @Test func executeFromOtherThreadsWakesTheLoopInSubmissionOrder() async throws {
        try await withLoop { loop in
            let seen: [[Int]] = try await onLoop(loop) { done in
                // Touched only by tasks, which all run on the loop thread.
                let state = LoopBound((perThread: [[Int]](repeating: [], count: 2), done: done), loop: loop)
                for thread in 0..<2 {
                    let submitter = try Syscall.spawnThread(name: "submitter-\(thread)") {
                        for value in 0..<200 {
                            loop.execute {
                                #expect(loop.inEventLoop)
                                state.value.perThread[thread].append(value)
                                let lists = state.value.perThread
                                if lists[0].count + lists[1].count == 400 { state.value.done(lists) }
                            }
                        }
                    }
                    // Nothing joins it: its tasks report through `done`.
                    pthread_detach(submitter)
                }
            }
            #expect(seen == [Array(0..<200), Array(0..<200)])
        }
    }

    @Test func submitAndWaitRunsOnTheLoopAndReturnsOrRethrows() throws {
        let loop = try EventLoop(name: "submit-loop")
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        // A non-Sendable value, read back after the body ran: the caller was blocked meanwhile.
        final class Counter { var value = 0 }
        let counter = Counter()
        let ranOnLoop = try loop.submitAndWait {
            counter.value += 41
            return loop.inEventLoop
        }
        #expect(ranOnLoop)
        #expect(try loop.submitAndWait { counter.value + 1 } == 42)
        struct Refused: Error {}
        #expect(throws: Refused.self) { try loop.submitAndWait { throw Refused() } }
    }

    @Test func everyAcceptedTaskRunsAndNoneIsAcceptedOnceAStopWasRequested() throws {
        let loop = try EventLoop(name: "stop-loop")
        let ran = Atomic<Int>(0)
        var accepted = 0
        for _ in 0..<1000 where loop.execute({ ran.add(1, ordering: .relaxed) }) { accepted += 1 }
        loop.stop()
        #expect(!loop.execute {})
        #expect(throws: NetError.self) { try loop.submitAndWait { 1 } }
        loop.waitUntilStopped()
        #expect(accepted == 1000)
        #expect(ran.load(ordering: .relaxed) == accepted)
        #expect(!loop.execute {})
    }

    @Test func loopBoundStateIsReadAndChangedOnItsLoop() throws {
        let loop = try EventLoop(name: "bound-loop")
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        let counts = LoopBound(handingOver: [String: Int](), loop: loop)
        try loop.submitAndWait { counts.value["a", default: 0] += 2 }
        let madeOnTheLoop = try loop.submitAndWait { LoopBound(counts.value["a"] ?? 0, loop: loop) }
        #expect(try loop.submitAndWait { counts.value } == ["a": 2])
        #expect(try loop.submitAndWait { madeOnTheLoop.value } == 2)
    }

    @Test func inEventLoopIsFalseElsewhere() async throws {
        try await withLoop { loop in
            #expect(!loop.inEventLoop)
            let inside: Bool = try await onLoop(loop) { done in done(loop.inEventLoop) }
            #expect(inside)
        }
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesDoNot() async throws {
        try await withLoop { loop in
            let fired: [String] = try await onLoop(loop) { done in
                var fired: [String] = []
                let start = loop.now
                func record(_ name: String, _ deadline: MonotonicTime) {
                    #expect(loop.now >= deadline)
                    fired.append(name)
                }
                let c = start + .milliseconds(30)
                loop.scheduleTimer(at: c) {
                    record("c", c)
                    done(fired)
                }
                let ab = start + .milliseconds(10)
                loop.scheduleTimer(at: ab) { record("a", ab) }
                loop.scheduleTimer(at: ab) { record("b", ab) }
                let cancelled = loop.scheduleTimer(at: start + .milliseconds(20)) { record("x", start) }
                loop.scheduleTimer(at: start) { record("first", start) }
                let first = loop.cancelTimer(cancelled)
                let second = loop.cancelTimer(cancelled)
                #expect(first && !second)
            }
            #expect(fired == ["first", "a", "b", "c"])
        }
    }

    @Test func timerScheduledFromATimerForThePastFiresOnTheNextIteration() async throws {
        try await withLoop { loop in
            let order: [Int] = try await onLoop(loop) { done in
                var order: [Int] = []
                loop.scheduleTimer(after: .zero) {
                    order.append(1)
                    loop.scheduleTimer(at: MonotonicTime(nanoseconds: 0)) {
                        order.append(2)
                        done(order)
                    }
                }
            }
            #expect(order == [1, 2])
        }
    }

    /// `enqueue` runs its work after the call that enqueued it returned, in order; work
    /// enqueued by enqueued work runs too, on a later iteration (the loop polls instead of
    /// blocking while any is left).
    @Test func enqueuedWorkRunsAfterTheCallerInOrder() async throws {
        try await withLoop { loop in
            let order: [String] = try await onLoop(loop) { done in
                var order: [String] = []
                loop.enqueue { order.append("first") }
                loop.enqueue {
                    order.append("second")
                    loop.enqueue {
                        order.append("chained")
                        done(order)
                    }
                }
                order.append("caller")
            }
            #expect(order == ["caller", "first", "second", "chained"])
        }
    }

    @Test func signalArrivesThroughSignalfd() async throws {
        try await withLoop { loop in
            let signal: ProcessSignal = try await onLoop(loop) { done in
                // watchSignals blocks SIGHUP in the loop thread before the thread-directed raise,
                // so the signal waits for the signalfd and never reaches the test runner.
                try loop.watchSignals([.hangup]) { done($0) }
                try ProcessSignal.hangup.raiseInCurrentThread()
            }
            #expect(signal == .hangup)
            #expect(signal.description == "SIGHUP")
        }
    }

    @Test func stopClosesEveryDescriptorTheLoopOwns() async throws {
        let loop = try EventLoop(name: "stopping")
        let port: UInt16 = try await onLoop(loop) { done in
            let listener = try startEchoServer(on: .loopbackIPv4(port: 0), loop: loop)
            #expect(loop.registeredCount == 1)
            done(listener.localAddress.port)
        }
        loop.stop()
        loop.waitUntilStopped()
        loop.execute { Issue.record("a task submitted after stop must not run") }

        // The listening socket is gone: a fresh loop's connect is refused.
        try await withLoop { other in
            let result: Result<SocketAddress, NetError> = try await onLoop(other) { done in
                _ = TCPConnection.connect(to: .loopbackIPv4(port: port), on: other, timeout: .seconds(5)) {
                    done($0.map(\.remoteAddress))
                }
            }
            #expect(result.failure?.errno == ECONNREFUSED)
        }
    }

    @Test func monotonicTimeArithmeticSaturates() {
        let t = MonotonicTime(nanoseconds: 1_000)
        #expect((t + .nanoseconds(500)).nanoseconds == 1_500)
        #expect((t + .seconds(-1)).nanoseconds == 1_000)
        #expect((MonotonicTime(nanoseconds: .max - 1) + .seconds(1)).nanoseconds == .max)
        #expect(MonotonicTime(nanoseconds: 3_000_000_001) - t == .nanoseconds(2_999_999_001))
        #expect(t - MonotonicTime(nanoseconds: 5_000) == .zero)
    }
}

@Suite struct TimerHeapTests {
    @Test func popsByDeadlineThenSchedulingOrder() {
        var heap = TimerHeap<String>()
        _ = heap.schedule(at: MonotonicTime(nanoseconds: 30), "c")
        _ = heap.schedule(at: MonotonicTime(nanoseconds: 10), "a")
        _ = heap.schedule(at: MonotonicTime(nanoseconds: 10), "b")
        let x = heap.schedule(at: MonotonicTime(nanoseconds: 5), "x")
        let cancelled = heap.cancel(x)
        #expect(cancelled)
        #expect(heap.nextDeadline() == MonotonicTime(nanoseconds: 10))
        #expect(heap.popDue(at: MonotonicTime(nanoseconds: 9)) == nil)
        var popped: [String] = []
        while let (_, name) = heap.popDue(at: MonotonicTime(nanoseconds: 100)) { popped.append(name) }
        #expect(popped == ["a", "b", "c"])
        #expect(heap.count == 0)
        #expect(heap.nextDeadline() == nil)
    }

    @Test func manyCancellationsKeepOrderAfterRebuild() {
        var heap = TimerHeap<Int>()
        var kept: [Int] = []
        var generator = SplitMix64(seed: 42)
        for value in 0..<1_000 {
            let deadline = MonotonicTime(nanoseconds: generator.next() % 10_000)
            let id = heap.schedule(at: deadline, value)
            if value % 10 == 0 { kept.append(value) } else { heap.cancel(id) }
        }
        #expect(heap.count == kept.count)
        var last = MonotonicTime(nanoseconds: 0)
        var popped: [Int] = []
        while let deadline = heap.nextDeadline(), let (_, value) = heap.popDue(at: deadline) {
            #expect(deadline >= last)
            last = deadline
            popped.append(value)
        }
        #expect(popped.sorted() == kept)
    }
}
