/// The numbers of `ReconnectPolicy`.
public struct ReconnectSettings: Hashable, Sendable {
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var jitterPercent: Int
    /// Uptime after which a session counts as stable and the backoff starts over.
    public var stablePeriod: Duration
    /// How long a local connection that arrives while the session is being rebuilt may
    /// wait for it before it is closed.
    public var localConnectionWait: Duration

    public init(
        initialDelay: Duration, maximumDelay: Duration, jitterPercent: Int, stablePeriod: Duration,
        localConnectionWait: Duration
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.jitterPercent = jitterPercent
        self.stablePeriod = stablePeriod
        self.localConnectionWait = localConnectionWait
    }

    /// 1 s doubling to 30 s, 25 % jitter, stable after 20 s, local connections wait 10 s.
    /// (With 60 s, a relay that restarts every minute drove the backoff to 30 s: the soak
    /// run saw 30–40 s outages. 20 s still catches sessions that die right after bootstrap.)
    public static let standard = ReconnectSettings(
        initialDelay: .seconds(1), maximumDelay: .seconds(30), jitterPercent: 25, stablePeriod: .seconds(20),
        localConnectionWait: .seconds(10))
}
