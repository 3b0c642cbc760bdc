/// When to rebuild a session after it failed (PROTOCOL.md §6.2: the relay has no
/// resume, so recovery is a new bridge page and a new session).
///
/// Delays grow 1 s, 2 s, 4 s ... up to 30 s, each plus 0–25 % jitter. They start over
/// only after a session stayed up for `stablePeriod`; a session that dies right after a
/// successful bootstrap keeps the backoff growing, so a relay that accepts and then drops
/// every session is not hammered. Never reads a clock: instants are inputs.
public struct ReconnectPolicy<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public let settings: ReconnectSettings
    /// Failures since the last stable session; the exponent of the next delay.
    public private(set) var consecutiveFailures = 0
    private var establishedAt: Instant?

    public init(settings: ReconnectSettings = .standard) {
        self.settings = settings
    }

    /// Records that a session answered WELCOME at `now`.
    public mutating func sessionEstablished(at now: Instant) {
        establishedAt = now
    }

    /// Records that the session (or an attempt to bootstrap one) failed at `now`, and
    /// returns how long to wait before fetching a new bridge page.
    public mutating func sessionFailed(at now: Instant, using random: inout some RandomNumberGenerator) -> Duration {
        if let establishedAt, establishedAt.duration(to: now) >= settings.stablePeriod {
            consecutiveFailures = 0
        }
        establishedAt = nil
        defer { consecutiveFailures += 1 }
        return Backoff.delay(
            step: consecutiveFailures, initial: settings.initialDelay, maximum: settings.maximumDelay,
            jitterPercent: settings.jitterPercent, using: &random)
    }

    /// The moment a local connection that arrived at `arrival` during a rebuild gives up.
    public func localConnectionDeadline(arrivedAt arrival: Instant) -> Instant {
        arrival.advanced(by: settings.localConnectionWait)
    }
}
