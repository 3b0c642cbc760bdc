import WebProxyCore

/// The HTTP requests one machine has in flight or waiting for a retry, with what each is
/// for. Retries resend the stored request unchanged (same sequence, cursor and bytes)
/// under a new attempt id, as `RequestRetry` decides.
struct HTTPExchanges: Sendable {
    struct Exchange: Sendable {
        let operation: HTTPOperation
        let request: CarrierRequest
        let deadline: Duration
        var retry: RequestRetry<MonotonicInstant>
    }

    private var inFlight: [RequestID: Exchange] = [:]
    /// Failed attempts waiting for their `.retry` timer.
    private var waiting: [RequestID: Exchange] = [:]
    let policy: RetryPolicy
    /// How long a sent request's connection may move nothing (long polls excepted).
    let silenceBound: Duration

    init(policy: RetryPolicy, silenceBound: Duration) {
        self.policy = policy
        self.silenceBound = silenceBound
    }

    var isEmpty: Bool { inFlight.isEmpty && waiting.isEmpty }

    /// Whether `id` is an attempt in flight here.
    func isInFlight(_ id: RequestID) -> Bool { inFlight[id] != nil }

    /// Whether `id` is a failed attempt waiting for its retry timer here.
    func isWaiting(_ id: RequestID) -> Bool { waiting[id] != nil }

    /// The operations in flight and waiting for a retry, for a state report.
    var summary: String {
        let flying = inFlight.keys.sorted().compactMap { inFlight[$0]?.operation.description }
        let retrying = waiting.keys.sorted().compactMap { waiting[$0]?.operation.description }
        return "in flight [\(flying.joined(separator: ", "))], awaiting retry [\(retrying.joined(separator: ", "))]"
    }

    /// Sends a new operation.
    @discardableResult
    mutating func send(
        _ operation: HTTPOperation, _ request: CarrierRequest, deadline: Duration, step: inout SessionStep
    ) -> RequestID {
        let exchange = Exchange(
            operation: operation, request: request, deadline: deadline,
            retry: RequestRetry(policy: policy, firstAttempt: step.now))
        return dispatch(exchange, step: &step)
    }

    /// Takes the exchange an answer belongs to (nil: an abandoned attempt).
    mutating func take(_ id: RequestID) -> Exchange? { inFlight.removeValue(forKey: id) }

    /// Records a failed attempt of `exchange` (whose id was `id`): schedules its retry, or
    /// returns the error that ends the operation.
    mutating func failed(
        _ exchange: Exchange, id: RequestID, _ failure: RequestFailure, wallClockSeconds: Int64,
        step: inout SessionStep
    ) -> CarrierError? {
        var exchange = exchange
        switch exchange.retry.attemptFailed(failure, now: step.now, wallClockSeconds: wallClockSeconds, using: &step.random) {
        case .giveUp(let error):
            return error
        case .retry(let wait):
            waiting[id] = exchange
            step.emit(.log(.requestRetry(exchange.operation, failedAttempts: exchange.retry.failedAttempts, after: wait)))
            step.emit(.schedule(.retry(id), at: step.now.advanced(by: wait)))
            return nil
        }
    }

    /// The retry timer of failed attempt `id` fired: resend. False when `id` is not waiting here.
    mutating func retryTimerFired(_ id: RequestID, step: inout SessionStep) -> Bool {
        guard let exchange = waiting.removeValue(forKey: id) else { return false }
        dispatch(exchange, step: &step)
        return true
    }

    /// Resends at once, under new attempt ids, the attempts of `operation` in flight now: a
    /// sibling request of theirs got no answer, so the path under their connections is
    /// suspect too (a silent connection would hold them until their deadline). The old
    /// attempts are cancelled; a retry waiting for its timer is left alone.
    mutating func resendInFlight(_ operation: HTTPOperation, step: inout SessionStep) {
        for id in inFlight.keys.sorted() where inFlight[id]?.operation == operation {
            guard let exchange = inFlight.removeValue(forKey: id) else { continue }
            step.emit(.cancelHTTP(id))
            dispatch(exchange, step: &step)
        }
    }

    /// Abandons everything: cancels requests in flight and pending retry timers.
    mutating func cancelAll(step: inout SessionStep) {
        for id in inFlight.keys.sorted() { step.emit(.cancelHTTP(id)) }
        for id in waiting.keys.sorted() { step.emit(.cancelTimer(.retry(id))) }
        inFlight = [:]
        waiting = [:]
    }

    @discardableResult
    private mutating func dispatch(_ exchange: Exchange, step: inout SessionStep) -> RequestID {
        let id = step.ids.request()
        inFlight[id] = exchange
        step.emit(
            .sendHTTP(
                id, exchange.operation, exchange.request, deadline: step.now.advanced(by: exchange.deadline),
                silence: exchange.operation.isLongPoll ? nil : silenceBound))
        return id
    }
}
