import Dispatch
import Glibc
internal import CWebProxyLinux
import Synchronization

/// One thread running a level-triggered epoll loop that owns every descriptor registered with
/// it: sockets, an eventfd for cross-thread wake-ups, a timerfd for the timer heap and
/// signalfds for signals. Everything but `execute`, `stop`, `waitUntilStopped`, `now` and
/// `inEventLoop` must be called on the loop thread (asserted in debug builds).
///
/// Timers use one timerfd armed with the earliest absolute CLOCK_MONOTONIC deadline rather
/// than epoll_wait's timeout: the timeout is relative and in whole milliseconds, so it would
/// be recomputed and rounded on every iteration (waking early and spinning, or late), while
/// the timerfd keeps nanosecond deadlines and is re-armed only when the earliest one changes.
///
/// Usage:
/// ```swift
/// try ProcessSignal.prepareProcess()            // in main, before any thread starts
/// let loop = try EventLoop(name: "net")
/// let resolver = try Resolver()
/// loop.execute {
///     do {
///         let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
///             connection.delegate = MyStreamHandler()   // reading starts once a delegate is set
///         }
///         try loop.watchSignals(ProcessSignal.daemonSignals) { _ in loop.stop() }
///         _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
///             if case .success(let connection) = result { try? connection.write([1, 2, 3]) }
///         }
///         // By name, with Happy Eyeballs and an optional upstream proxy:
///         _ = Dialer(proxy: nil).dial(DialTarget("relay.example.com:443")!, on: loop, resolver: resolver) { _ in }
///     } catch {
///         loop.stop()
///     }
/// }
/// loop.waitUntilStopped()                       // stop() closed every descriptor the loop owned
/// resolver.shutdown()
/// ```
///
/// `@unchecked Sendable` because the class is shared across threads only through `execute`,
/// `stop` and the atomically read thread id (guarded by a `Mutex` and an `Atomic`); every
/// other stored property is touched only on the loop thread, which the debug asserts check.
public final class EventLoop: @unchecked Sendable {
    /// Interest in readiness, as a set.
    struct Interest: OptionSet, Hashable {
        let rawValue: UInt32
        static let readable = Interest(rawValue: 1)
        static let writable = Interest(rawValue: 2)
    }

    /// What epoll reported for one descriptor.
    struct Readiness {
        let readable: Bool
        let writable: Bool
        /// EPOLLHUP: both directions are closed.
        let hangup: Bool
        /// EPOLLERR: the socket has a pending error (read it with SO_ERROR).
        let error: Bool
    }

    private struct Registration {
        let fd: Int32
        var interest: Interest
        /// false while removed from epoll (see `park`).
        var inEpoll: Bool
        let handler: (Readiness) -> Void
        /// Runs when the loop stops with the descriptor still registered, so its owner can
        /// let go of what it holds (delegates) without being called back.
        let onShutdown: (() -> Void)?
    }

    private struct CrossThread {
        var tasks: [@Sendable () -> Void] = []
        var stopRequested = false
        /// Set when the loop closed its eventfd; later `execute` calls are dropped.
        var closed = false
    }

    /// The size of the loop's shared read buffer, and so the largest chunk one read delivers.
    public static let readChunkSize = 64 * 1024

    private static let wakeToken: UInt64 = 0
    private static let timerToken: UInt64 = 1

    private let name: String
    private let epollFD: Int32
    private let wakeFD: Int32
    private let timerFD: Int32
    private let crossThread = Mutex(CrossThread())
    private let loopThreadID = Atomic<UInt>(0)
    private let joinable = Mutex<pthread_t?>(nil)

    // Loop-thread state.
    private var registrations: [UInt64: Registration] = [:]
    private var nextToken: UInt64 = 2
    private var timers = TimerHeap<() -> Void>()
    private var armedDeadline: MonotonicTime?
    /// `enqueue`d work for the end of the current iteration.
    private var enqueued: [() -> Void] = []
    /// Reused by every read on this loop: one read runs at a time.
    let readBuffer: UnsafeMutableRawBufferPointer

    /// Creates the loop's descriptors and starts its thread.
    public init(name: String = "event-loop") throws(NetError) {
        self.name = name
        epollFD = try Syscall.retrying("epoll_create1") { cwpl_epoll_create() }
        do {
            wakeFD = try Syscall.retrying("eventfd") { cwpl_eventfd_create() }
        } catch {
            Syscall.close(epollFD)
            throw error
        }
        do {
            timerFD = try Syscall.retrying("timerfd_create") { cwpl_timerfd_create() }
        } catch {
            Syscall.close(wakeFD)
            Syscall.close(epollFD)
            throw error
        }
        readBuffer = .allocate(byteCount: Self.readChunkSize, alignment: 16)
        do {
            let (epollFD, wakeFD, timerFD) = (epollFD, wakeFD, timerFD)
            _ = try Syscall.retrying("epoll_ctl") {
                cwpl_epoll_ctl(epollFD, CWPL_EPOLL_CTL_ADD, wakeFD, CWPL_EPOLLIN, Self.wakeToken)
            }
            _ = try Syscall.retrying("epoll_ctl") {
                cwpl_epoll_ctl(epollFD, CWPL_EPOLL_CTL_ADD, timerFD, CWPL_EPOLLIN, Self.timerToken)
            }
            let thread = try Syscall.spawnThread(name: name) { [self] in run() }
            joinable.withLock { $0 = thread }
        } catch {
            Syscall.close(timerFD)
            Syscall.close(wakeFD)
            Syscall.close(epollFD)
            readBuffer.deallocate()
            throw error
        }
    }

    deinit {
        readBuffer.deallocate()
    }

    /// True on this loop's thread.
    public var inEventLoop: Bool {
        loopThreadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// CLOCK_MONOTONIC now. Readable from any thread.
    public var now: MonotonicTime { .now() }

    /// What this loop has done since it started; on the loop thread.
    public var counters: LoopCounters {
        preconditionInEventLoop()
        return tally
    }

    /// Where the runtime counts, from code that already runs on the loop.
    var tally = LoopCounters()

    // MARK: cross-thread

    /// Runs `task` on the loop thread soon, in submission order. Callable from any thread.
    /// Returns false, and drops `task`, once a stop was requested; a task it accepted runs.
    @discardableResult
    public func execute(_ task: @escaping @Sendable () -> Void) -> Bool {
        crossThread.withLock { state in
            // The loop runs every task taken with the stop request (see `runTasks`), so
            // refusing from then on means no accepted task is ever dropped.
            guard !state.closed, !state.stopRequested else { return false }
            let wasEmpty = state.tasks.isEmpty
            state.tasks.append(task)
            if wasEmpty { wake() }
            return true
        }
    }

    /// Runs `body` on the loop and blocks the calling thread until it has returned, as
    /// `DispatchQueue.sync` does; throws `NetError.closed` if a stop was requested first.
    /// Never call it on the loop's own thread. `body` need not be `Sendable`: its caller is
    /// blocked while it runs, so nothing else touches what it captures.
    public func submitAndWait<T>(_ body: @escaping () throws -> T) throws -> T {
        precondition(!inEventLoop, "submitAndWait on the loop thread would deadlock")
        let handoff = Handoff<T>()
        nonisolated(unsafe) let body = body
        guard execute({ handoff.finish(Result { try body() }) }) else {
            throw NetError(.closed, call: "submitAndWait", message: "the event loop has stopped")
        }
        return try handoff.wait().get()
    }

    /// Asks the loop to stop: it runs the tasks already submitted, then closes every descriptor
    /// it owns (without calling delegates or completions) and ends its thread.
    public func stop() {
        crossThread.withLock { state in
            guard !state.closed, !state.stopRequested else { return }
            state.stopRequested = true
            wake()
        }
    }

    /// Blocks until the loop thread has ended. Call from any thread but the loop's.
    public func waitUntilStopped() {
        precondition(!inEventLoop, "waitUntilStopped() on the loop thread would deadlock")
        guard let thread = joinable.withLock({ state in defer { state = nil }; return state }) else {
            return
        }
        pthread_join(thread, nil)
    }

    /// Called with the cross-thread lock held, so the eventfd is never closed under us.
    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    // MARK: timers (loop thread)

    /// Runs `body` on the loop at `deadline` (or on the next iteration if it has passed).
    @discardableResult
    public func scheduleTimer(at deadline: MonotonicTime, _ body: @escaping () -> Void) -> TimerID {
        preconditionInEventLoop()
        return timers.schedule(at: deadline, body)
    }

    /// Runs `body` on the loop after `delay`.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> TimerID {
        scheduleTimer(at: now + delay, body)
    }

    /// Runs `body` on the loop once the current event's handlers (and the timers and tasks due
    /// with them) have run, in the order enqueued: for a completion that must not run inside
    /// the call that caused it. Loop thread only; dropped if the loop stops first.
    public func enqueue(_ body: @escaping () -> Void) {
        preconditionInEventLoop()
        enqueued.append(body)
    }

    /// Cancels a timer; false if it already fired or was cancelled.
    @discardableResult
    public func cancelTimer(_ timer: TimerID) -> Bool {
        preconditionInEventLoop()
        return timers.cancel(timer)
    }

    // MARK: signals (loop thread)

    /// Delivers `signals` to `handler` on the loop through a signalfd. The signals are blocked
    /// in the loop thread; call `ProcessSignal.prepareProcess()` first so that no other thread
    /// takes them with the default action.
    public func watchSignals(
        _ signals: Set<ProcessSignal>, _ handler: @escaping (ProcessSignal) -> Void
    ) throws(NetError) {
        preconditionInEventLoop()
        let numbers = signals.map(\.rawValue).sorted()
        _ = try Syscall.retrying("pthread_sigmask") {
            numbers.withUnsafeBufferPointer { cwpl_block_signals($0.baseAddress, Int32($0.count)) }
        }
        let fd = try Syscall.retrying("signalfd") {
            numbers.withUnsafeBufferPointer { cwpl_signalfd_create($0.baseAddress, Int32($0.count)) }
        }
        do {
            _ = try register(fd: fd, interest: .readable) { _ in
                while true {
                    let number = cwpl_signalfd_read(fd)
                    guard number > 0 else { return }
                    handler(ProcessSignal(rawValue: number))
                }
            }
        } catch {
            Syscall.close(fd)
            throw error
        }
    }

    // MARK: descriptors (loop thread, internal)

    /// Starts watching `fd`, which the loop now owns; returns its token.
    func register(
        fd: Int32, interest: Interest, onShutdown: (() -> Void)? = nil,
        _ handler: @escaping (Readiness) -> Void
    ) throws(NetError) -> UInt64 {
        preconditionInEventLoop()
        let token = nextToken
        nextToken += 1
        _ = try Syscall.retrying("epoll_ctl") {
            cwpl_epoll_ctl(epollFD, CWPL_EPOLL_CTL_ADD, fd, Self.mask(interest), token)
        }
        registrations[token] = Registration(
            fd: fd, interest: interest, inEpoll: true, handler: handler, onShutdown: onShutdown)
        return token
    }

    /// Changes what `token`'s descriptor is watched for; re-adds it if it was parked.
    func setInterest(_ interest: Interest, for token: UInt64) throws(NetError) {
        preconditionInEventLoop()
        guard var registration = registrations[token] else { return }
        if registration.inEpoll && registration.interest == interest { return }
        let op = registration.inEpoll ? CWPL_EPOLL_CTL_MOD : CWPL_EPOLL_CTL_ADD
        _ = try Syscall.retrying("epoll_ctl") {
            cwpl_epoll_ctl(epollFD, op, registration.fd, Self.mask(interest), token)
        }
        registration.interest = interest
        registration.inEpoll = true
        registrations[token] = registration
    }

    /// Takes `token`'s descriptor out of epoll until the next `setInterest`. Needed because
    /// epoll reports EPOLLHUP whatever the interest, which would spin a paused reader.
    func park(_ token: UInt64) {
        preconditionInEventLoop()
        guard var registration = registrations[token], registration.inEpoll else { return }
        _ = cwpl_epoll_ctl(epollFD, CWPL_EPOLL_CTL_DEL, registration.fd, 0, token)
        registration.inEpoll = false
        registrations[token] = registration
    }

    /// Stops watching and closes `token`'s descriptor.
    func close(_ token: UInt64) {
        preconditionInEventLoop()
        guard let registration = registrations.removeValue(forKey: token) else { return }
        if registration.inEpoll {
            _ = cwpl_epoll_ctl(epollFD, CWPL_EPOLL_CTL_DEL, registration.fd, 0, token)
        }
        Syscall.close(registration.fd)
    }

    /// How many descriptors are registered (not counting the loop's own).
    var registeredCount: Int {
        preconditionInEventLoop()
        return registrations.count
    }

    /// Stops the process when called off the loop thread, in release builds too (as NIO's
    /// check does): a socket or `SSL*` touched from two threads would corrupt silently. It
    /// costs an atomic load and `pthread_self` per call, on entry points only, not per byte.
    func preconditionInEventLoop(_ file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "called off the event loop thread", file: file, line: line)
    }

    private static func mask(_ interest: Interest) -> UInt32 {
        (interest.contains(.readable) ? CWPL_EPOLLIN : 0) | (interest.contains(.writable) ? CWPL_EPOLLOUT : 0)
    }

    // MARK: the loop

    private func run() {
        loopThreadID.store(UInt(pthread_self()), ordering: .releasing)
        let capacity: Int32 = 64
        guard let events = cwpl_epoll_events_alloc(capacity) else {
            fatalError("cannot allocate epoll events")
        }
        defer { cwpl_epoll_events_free(events) }
        while true {
            armTimer()
            // Work that enqueued work left for this iteration: poll, do not block.
            let count = cwpl_epoll_wait(epollFD, events, capacity, enqueued.isEmpty ? -1 : 0)
            if count < 0 {
                let error = errno
                if error == EINTR { continue }
                fatalError("epoll_wait failed: \(NetError.syscall("epoll_wait", errno: error))")
            }
            if count > 0 { tally.wakeups += 1 }
            var tasksPending = false
            for index in 0..<count {
                let token = cwpl_epoll_event_token(events, index)
                let mask = cwpl_epoll_event_mask(events, index)
                switch token {
                case Self.wakeToken:
                    var value: UInt64 = 0
                    _ = Glibc.read(wakeFD, &value, 8)
                    tasksPending = true
                case Self.timerToken:
                    var expirations: UInt64 = 0
                    _ = Glibc.read(timerFD, &expirations, 8)
                default:
                    // A handler earlier in this batch may have closed this one.
                    guard let registration = registrations[token] else { continue }
                    registration.handler(
                        Readiness(
                            readable: mask & CWPL_EPOLLIN != 0, writable: mask & CWPL_EPOLLOUT != 0,
                            hangup: mask & CWPL_EPOLLHUP != 0, error: mask & CWPL_EPOLLERR != 0))
                }
            }
            fireDueTimers()
            if tasksPending && !runTasks() { break }
            runEnqueued()
        }
        shutDown()
    }

    /// Runs what was enqueued before this call; what those enqueue waits for the next iteration,
    /// so a chain of them cannot starve the sockets.
    private func runEnqueued() {
        guard !enqueued.isEmpty else { return }
        let batch = enqueued
        enqueued.removeAll(keepingCapacity: true)
        for body in batch { body() }
    }

    private func fireDueTimers() {
        let now = self.now
        while let (_, body) = timers.popDue(at: now) { body() }
    }

    /// Runs the submitted tasks; false once a stop was requested.
    private func runTasks() -> Bool {
        let (tasks, stopRequested) = crossThread.withLock { state in
            defer { state.tasks.removeAll(keepingCapacity: true) }
            return (state.tasks, state.stopRequested)
        }
        for task in tasks { task() }
        return !stopRequested
    }

    private func armTimer() {
        let next = timers.nextDeadline()
        guard next != armedDeadline else { return }
        // A deadline of 0 would disarm; anything due is due now, so 1 ns fires at once.
        let deadline = next.map { max($0.nanoseconds, 1) } ?? 0
        if cwpl_timerfd_arm(timerFD, deadline) == 0 { armedDeadline = next }
    }

    private func shutDown() {
        let releases = registrations.values.compactMap(\.onShutdown)
        for token in Array(registrations.keys) { close(token) }
        timers.removeAll()
        for release in releases { release() }
        enqueued.removeAll()
        crossThread.withLock { state in
            state.closed = true
            state.tasks.removeAll()
            Syscall.close(wakeFD)
        }
        Syscall.close(timerFD)
        Syscall.close(epollFD)
    }
}

/// Carries `submitAndWait`'s result from the loop thread to the blocked caller; the
/// semaphore orders the write before the read.
private final class Handoff<T>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<T, any Error>?

    func finish(_ result: Result<T, any Error>) {
        self.result = result
        done.signal()
    }

    func wait() -> Result<T, any Error> {
        done.wait()
        guard let result else { preconditionFailure("signalled without a result") }
        return result
    }
}
