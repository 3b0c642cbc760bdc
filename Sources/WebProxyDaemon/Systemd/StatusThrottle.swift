/// Keeps `STATUS=` updates to at most one per `minimumInterval`: a status offered too soon
/// waits as pending and goes out on the next offer or flush once the interval has passed.
/// Repeating the status last sent is a no-op. Time is an input.
public struct StatusThrottle: Sendable, Equatable {
    public let minimumInterval: Duration
    private var lastSentAt: Duration?
    private var lastSent: String?
    /// The newest status not sent yet.
    public private(set) var pending: String?

    public init(minimumInterval: Duration = .seconds(1)) {
        self.minimumInterval = minimumInterval
    }

    /// Offers a new status; returns the status to send now, if any.
    public mutating func offer(_ status: String, now: Duration) -> String? {
        pending = status == lastSent ? nil : status
        return flush(now: now)
    }

    /// Returns the pending status if it may be sent at `now`.
    public mutating func flush(now: Duration) -> String? {
        guard let status = pending else { return nil }
        if let lastSentAt, now - lastSentAt < minimumInterval { return nil }
        pending = nil
        lastSent = status
        lastSentAt = now
        return status
    }

    /// When a pending status may go out; nil when nothing is pending.
    public var pendingDeadline: Duration? {
        guard pending != nil else { return nil }
        return lastSentAt.map { $0 + minimumInterval }
    }
}
