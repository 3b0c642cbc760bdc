import WebProxyNet

/// A caller waited longer than its bound for a loop to answer (a safety bound, not a speed
/// assertion).
public struct LoopTimeout: Error, CustomStringConvertible {
    /// How long the caller waited.
    public let limit: Duration

    public var description: String { "the loop did not answer within \(limit)" }
}

/// Runs `body` on `loop` and waits (without blocking a pool thread) until it calls `done`,
/// or fails with `LoopTimeout` after `timeout`. An error `body` throws is rethrown.
public func onLoop<T: Sendable>(
    _ loop: EventLoop, timeout: Duration = .seconds(10),
    _ body: @escaping @Sendable (_ done: @escaping (T) -> Void) throws -> Void
) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        loop.execute {
            var finished = false
            let guardTimer = loop.scheduleTimer(after: timeout) {
                guard !finished else { return }
                finished = true
                continuation.resume(throwing: LoopTimeout(limit: timeout))
            }
            do {
                try body { value in
                    guard !finished else { return }
                    finished = true
                    loop.cancelTimer(guardTimer)
                    continuation.resume(returning: value)
                }
            } catch {
                guard !finished else { return }
                finished = true
                loop.cancelTimer(guardTimer)
                continuation.resume(throwing: error)
            }
        }
    }
}
