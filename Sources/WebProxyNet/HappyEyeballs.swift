/// Connection-attempt scheduling of Happy Eyeballs (RFC 8305, simplified), as a pure state
/// machine: addresses are interleaved starting with IPv6; a new attempt starts when the
/// previous one has run for `attemptDelay` or as soon as it fails; the first success wins and
/// the others are cancelled; everything fails at the overall deadline. Time is an input.
public struct HappyEyeballs: Sendable {
    /// What the driver must do.
    public enum Action: Hashable, Sendable {
        /// Start connecting to `address`; report back with `index`.
        case startAttempt(index: Int, address: SocketAddress)
        /// Abandon the attempt `index`.
        case cancelAttempt(index: Int)
        /// Attempt `index` won: hand its connection upward.
        case succeeded(index: Int)
        /// Every attempt failed or the deadline passed.
        case failed(NetError)
    }

    /// The addresses in attempt order.
    public let attemptOrder: [SocketAddress]
    private let attemptDelay: Duration
    private let timeout: Duration
    private var nextIndex = 0
    private var inFlight: Set<Int> = []
    private var lastStart: MonotonicTime?
    private var deadline: MonotonicTime?
    private var lastError: NetError?
    private var finished = false

    /// A machine for `addresses` (in resolver order) that gives up `timeout` after `start`.
    public init(addresses: [SocketAddress], attemptDelay: Duration = .milliseconds(250), timeout: Duration) {
        attemptOrder = Self.interleave(addresses)
        self.attemptDelay = attemptDelay
        self.timeout = timeout
    }

    /// RFC 8305 §4: alternate families, IPv6 first, keeping each family's own order.
    static func interleave(_ addresses: [SocketAddress]) -> [SocketAddress] {
        let v6 = addresses.filter { $0.family == .ipv6 }
        let v4 = addresses.filter { $0.family == .ipv4 }
        var order: [SocketAddress] = []
        order.reserveCapacity(addresses.count)
        for index in 0..<max(v6.count, v4.count) {
            if index < v6.count { order.append(v6[index]) }
            if index < v4.count { order.append(v4[index]) }
        }
        return order
    }

    /// When the driver must call `timerFired`, if anything is pending.
    public var nextTimerDeadline: MonotonicTime? {
        guard !finished, let deadline else { return nil }
        guard nextIndex < attemptOrder.count, let lastStart else { return deadline }
        return min(deadline, lastStart + attemptDelay)
    }

    /// Starts the first attempt.
    public mutating func start(now: MonotonicTime) -> [Action] {
        guard !finished, deadline == nil else { return [] }
        deadline = now + timeout
        guard !attemptOrder.isEmpty else {
            return finish(NetError(.resolution, call: "connect", message: "no address to connect to"))
        }
        return [startNext(now: now)]
    }

    /// Attempt `index` connected.
    public mutating func attemptSucceeded(_ index: Int, now: MonotonicTime) -> [Action] {
        guard !finished, inFlight.remove(index) != nil else { return [] }
        finished = true
        let losers = inFlight.sorted().map { Action.cancelAttempt(index: $0) }
        inFlight.removeAll()
        return losers + [.succeeded(index: index)]
    }

    /// Attempt `index` failed with `error`.
    public mutating func attemptFailed(_ index: Int, error: NetError, now: MonotonicTime) -> [Action] {
        guard !finished, inFlight.remove(index) != nil else { return [] }
        lastError = error
        if nextIndex < attemptOrder.count { return [startNext(now: now)] }
        if inFlight.isEmpty { return finish(error) }
        return []
    }

    /// The driver's timer for `nextTimerDeadline` fired.
    public mutating func timerFired(now: MonotonicTime) -> [Action] {
        guard !finished, let deadline else { return [] }
        if now >= deadline {
            let cancels = inFlight.sorted().map { Action.cancelAttempt(index: $0) }
            inFlight.removeAll()
            let message = lastError.map { "connect timed out (last error: \($0.message))" } ?? "connect timed out"
            return cancels + finish(NetError(.timedOut, call: "connect", message: message))
        }
        if nextIndex < attemptOrder.count, let lastStart, now >= lastStart + attemptDelay {
            return [startNext(now: now)]
        }
        return []
    }

    private mutating func startNext(now: MonotonicTime) -> Action {
        let index = nextIndex
        nextIndex += 1
        inFlight.insert(index)
        lastStart = now
        return .startAttempt(index: index, address: attemptOrder[index])
    }

    private mutating func finish(_ error: NetError) -> [Action] {
        finished = true
        return [.failed(error)]
    }
}

/// Runs `HappyEyeballs` on an event loop with real connects and one loop timer.
public final class HappyEyeballsConnector {
    private let loop: EventLoop
    private let connectTimeout: Duration
    private var machine: HappyEyeballs
    private var attempts: [Int: ConnectAttempt] = [:]
    /// A connection that completed, held until the machine names the winner (same call).
    private var winners: [Int: TCPConnection] = [:]
    private var timer: (id: TimerID, deadline: MonotonicTime)?
    private let completion: OnceCompletion<TCPConnection, NetError>

    private init(
        loop: EventLoop, machine: HappyEyeballs, connectTimeout: Duration,
        completion: @escaping (Result<TCPConnection, NetError>) -> Void
    ) {
        self.loop = loop
        self.machine = machine
        self.connectTimeout = connectTimeout
        self.completion = OnceCompletion(discard: { $0.abort() }, completion)
    }

    /// Races connects to `addresses`; `completion` runs once on the loop (never before this
    /// returns) with the winner, or with the last error or a timeout after `timeout`.
    public static func connect(
        to addresses: [SocketAddress], on loop: EventLoop,
        attemptDelay: Duration = .milliseconds(250), timeout: Duration,
        completion: @escaping (Result<TCPConnection, NetError>) -> Void
    ) -> HappyEyeballsConnector {
        loop.preconditionInEventLoop()
        let connector = HappyEyeballsConnector(
            loop: loop,
            machine: HappyEyeballs(addresses: addresses, attemptDelay: attemptDelay, timeout: timeout),
            connectTimeout: timeout, completion: completion)
        loop.enqueue { [connector] in
            guard connector.completion.isPending else { return }
            connector.perform(connector.machine.start(now: loop.now))
        }
        return connector
    }

    /// Abandons every attempt; the completion will not run.
    public func cancel() {
        loop.preconditionInEventLoop()
        completion.cancel()
        for attempt in attempts.values { attempt.cancel() }
        attempts.removeAll()
        if let timer { loop.cancelTimer(timer.id) }
        timer = nil
    }

    private func perform(_ actions: [HappyEyeballs.Action]) {
        var winner: TCPConnection?
        for action in actions {
            switch action {
            case .startAttempt(let index, let address):
                // Strong captures: the connector lives until it finishes or is cancelled.
                attempts[index] = TCPConnection.connect(to: address, on: loop, timeout: connectTimeout) {
                    [self] result in
                    self.attempts[index] = nil
                    switch result {
                    case .success(let connection):
                        self.winners[index] = connection
                        self.perform(self.machine.attemptSucceeded(index, now: self.loop.now))
                    case .failure(let error):
                        self.perform(self.machine.attemptFailed(index, error: error, now: self.loop.now))
                    }
                }
            case .cancelAttempt(let index):
                attempts.removeValue(forKey: index)?.cancel()
            case .succeeded(let index):
                winner = winners.removeValue(forKey: index)
            case .failed(let error):
                finish(.failure(error))
                return
            }
        }
        if let winner {
            finish(.success(winner))
            return
        }
        rearmTimer()
    }

    private func rearmTimer() {
        let deadline = machine.nextTimerDeadline
        if timer?.deadline == deadline { return }
        if let timer { loop.cancelTimer(timer.id) }
        timer = nil
        guard let deadline else { return }
        let id = loop.scheduleTimer(at: deadline) { [self] in
            self.timer = nil
            self.perform(self.machine.timerFired(now: self.loop.now))
        }
        timer = (id, deadline)
    }

    private func finish(_ result: Result<TCPConnection, NetError>) {
        if let timer { loop.cancelTimer(timer.id) }
        timer = nil
        for attempt in attempts.values { attempt.cancel() }
        attempts.removeAll()
        for connection in winners.values { connection.abort() }
        winners.removeAll()
        completion.complete(result)
    }
}
