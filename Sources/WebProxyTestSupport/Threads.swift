import Dispatch
import Synchronization
import WebProxyNet

// No Foundation here: the webproxyd binary links this module (through the demo's relay),
// and Foundation with ICU adds about 6 MiB to the daemon's idle RSS.

/// Runs `body(index)` for each index on a thread of its own (never on Swift's cooperative
/// pool) and waits for all, at most `limit` (nil: without a bound); a result is nil when its
/// thread did not finish in time.
public func onThreads<T: Sendable>(
    _ count: Int, within limit: Duration? = nil, _ body: @escaping @Sendable (Int) -> T
) -> [T?] {
    let results = Mutex<[T?]>(Array(repeating: nil, count: count))
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        do {
            try BlockingWork.detach(name: "on-threads-\(index)") {
                let value = body(index)
                results.withLock { $0[index] = value }
                group.leave()
            }
        } catch {
            fatalError("onThreads could not start a thread: \(error)")
        }
    }
    if let limit {
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        _ = group.wait(timeout: .now() + seconds)
    } else {
        group.wait()
    }
    return results.withLock { $0 }
}
