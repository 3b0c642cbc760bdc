/// The caller's completion of a one-shot operation (a lookup, a dial, a handshake, an
/// upgrade, a request): the first result reaches the caller and nothing after it does.
///
/// A connection that completes when nobody waits any more (the operation was cancelled,
/// or another result came first) goes to `discard`, which closes it, so a late winner
/// never leaks. A class, not a struct: the caller's code runs inside `complete` and may
/// cancel or finish the same operation again, which a mutating struct method could not
/// allow (exclusive access). Loop-confined, like the operations that hold it.
final class OnceCompletion<Value, Failure: Error> {
    private var body: ((Result<Value, Failure>) -> Void)?
    private let discard: (Value) -> Void

    /// A completion that runs `body` once; a success that finds no caller goes to `discard`.
    init(discard: @escaping (Value) -> Void = { _ in }, _ body: @escaping (Result<Value, Failure>) -> Void) {
        self.body = body
        self.discard = discard
    }

    /// Whether a caller still waits: neither completed nor cancelled.
    var isPending: Bool { body != nil }

    /// Forgets the caller: no result will reach it.
    func cancel() {
        body = nil
    }

    /// Hands `result` to the caller if one still waits; otherwise a success is discarded.
    func complete(_ result: Result<Value, Failure>) {
        guard let body else {
            if case .success(let value) = result { discard(value) }
            return
        }
        self.body = nil
        body(result)
    }
}
