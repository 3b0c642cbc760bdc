/// What the demo workload measured through one carrier.
public struct DemoCarrierReport: Sendable {
    /// Payload bytes that went up and came back, checked by length and hash.
    public var echoedBytes: Int
    /// From the first bulk byte sent to the last echoed byte received.
    public var bulkDuration: Duration
    /// One entry per verified round trip of a small message, in order.
    public var roundTripTimes: [Duration]
    /// Why the run failed; nil when every byte came back unchanged.
    public var failure: DemoFailure?

    public init(
        echoedBytes: Int = 0, bulkDuration: Duration = .zero, roundTripTimes: [Duration] = [],
        failure: DemoFailure? = nil
    ) {
        self.echoedBytes = echoedBytes
        self.bulkDuration = bulkDuration
        self.roundTripTimes = roundTripTimes
        self.failure = failure
    }

    /// Echoed payload per second, in MiB (each byte crossed the carrier up and down).
    public var echoMiBPerSecond: Double {
        let seconds = Double(bulkDuration.components.seconds)
            + Double(bulkDuration.components.attoseconds) * 1e-18
        return seconds > 0 ? Double(echoedBytes) / 1_048_576 / seconds : 0
    }

    /// The nearest-rank `percent` percentile of the round trips (nil without any).
    public func roundTrip(percentile percent: Int) -> Duration? {
        guard !roundTripTimes.isEmpty else { return nil }
        let sorted = roundTripTimes.sorted()
        let rank = (percent * sorted.count + 99) / 100
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
