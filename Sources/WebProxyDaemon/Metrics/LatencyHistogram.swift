/// Durations counted into fixed buckets, as a Prometheus histogram exposes them.
struct LatencyHistogram: Equatable, Sendable {
    /// Upper bounds in seconds (`le`), ascending; `+Inf` is implied. `/down` long polls
    /// last up to 25 s, so the buckets reach past that.
    static let bounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// Observations per bucket (not cumulative); the last entry is `+Inf`.
    private(set) var bucketCounts = [Int](repeating: 0, count: LatencyHistogram.bounds.count + 1)
    /// Sum of every observation, in seconds.
    private(set) var sum: Double = 0
    /// Number of observations.
    private(set) var count = 0

    mutating func observe(_ duration: Duration) {
        let seconds = Self.seconds(duration)
        let index = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        bucketCounts[index] += 1
        sum += seconds
        count += 1
    }

    /// Observations at or below each bound, then the total (`+Inf`).
    var cumulativeCounts: [Int] {
        var running = 0
        return bucketCounts.map { count in
            running += count
            return running
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
