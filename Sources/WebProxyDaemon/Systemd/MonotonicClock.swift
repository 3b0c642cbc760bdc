#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC as a `Duration` since boot: the time base of rate limits and of
/// `MONOTONIC_USEC=` (the clock systemd itself uses). Pure code takes these values as
/// inputs; only the daemon's edges read the clock.
public enum MonotonicClock {
    /// The current CLOCK_MONOTONIC reading.
    @Sendable public static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
