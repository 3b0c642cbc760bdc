/// A point on the daemon's monotonic clock: the time elapsed since the daemon started.
/// The I/O shell converts its clock readings into these; the session machines never read a
/// clock themselves.
public struct MonotonicInstant: InstantProtocol, Sendable, CustomStringConvertible {
    /// Time since the daemon's clock origin.
    public var sinceStart: Duration

    /// The instant `sinceStart` after the clock origin.
    public init(sinceStart: Duration) {
        self.sinceStart = sinceStart
    }

    /// The clock origin.
    public static let start = MonotonicInstant(sinceStart: .zero)

    public func advanced(by duration: Duration) -> MonotonicInstant {
        MonotonicInstant(sinceStart: sinceStart + duration)
    }

    public func duration(to other: MonotonicInstant) -> Duration {
        other.sinceStart - sinceStart
    }

    public static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.sinceStart < b.sinceStart }

    public var description: String { "t+\(sinceStart)" }
}
