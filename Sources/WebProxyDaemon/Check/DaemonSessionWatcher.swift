import Dispatch
import Synchronization

/// A log backend for the check's in-process daemon: it waits for the first session-up or
/// relay failure event and remembers a later session loss. Records stay in memory only.
final class DaemonSessionWatcher: LogBackend {
    /// The first decisive event.
    enum Outcome: Equatable, Sendable {
        /// A session is up on this carrier.
        case up(String)
        /// The relay was unreachable or refused us: the daemon's message.
        case failed(String)
    }

    private struct State {
        var outcome: Outcome?
        var lost: String?
    }

    private let state = Mutex(State())
    private let decided = DispatchSemaphore(value: 0)

    func write(_ record: LogRecord) {
        guard let event = record.fields.event else { return }
        let message = record.fields.error.map { "\(record.message): \($0)" } ?? record.message
        let signal = state.withLock { state -> Bool in
            switch event {
            case .sessionUp where state.outcome == nil:
                state.outcome = .up(record.fields.carrier ?? "unknown carrier")
                return true
            case .relayUnreachable, .relayRejected:
                guard state.outcome == nil else { return false }
                state.outcome = .failed(message)
                return true
            case .sessionLost:
                state.lost = state.lost ?? message
                return false
            default:
                return false
            }
        }
        if signal { decided.signal() }
    }

    /// Blocks until the first decisive event, or nil after `timeout`.
    func wait(timeout: Duration) -> Outcome? {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        _ = decided.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        return state.withLock { $0.outcome }
    }

    /// Why an established session was lost, if it was.
    var lostMessage: String? { state.withLock { $0.lost } }
}
