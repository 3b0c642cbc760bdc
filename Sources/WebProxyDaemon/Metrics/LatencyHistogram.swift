/// Durations counted into fixed buckets, as a Prometheus histogram exposes them.
struct LatencyHistogram: Equatable, Sendable {
    /// Upper bounds in seconds (`le`), ascending; `+Inf` is implied. `/down` long polls
    /// last up to 25 s, so the buckets reach past that.
    static let bounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// Observations per bucket (not cumulative); the last entry is `+Inf`.
    private(set) var bucketCounts = [Int](repeating: 0, count: LatencyHistogram.bounds.count + 1)
    /// Sum of every observation, in nanoseconds (an integer, so the sum is exact).
    private(set) var sumNanoseconds: Int64 = 0
    /// Number of observations.
    private(set) var count = 0

    mutating func observe(_ duration: Duration) {
        let seconds = Self.seconds(duration)
        let index = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        bucketCounts[index] += 1
        let (whole, attoseconds) = duration.components
        sumNanoseconds &+= whole &* 1_000_000_000 &+ attoseconds / 1_000_000_000
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

    /// The sum in seconds, in decimal without trailing zeros: `0.34`, `56`.
    var sumText: String {
        let whole = sumNanoseconds / 1_000_000_000
        var fraction = String(sumNanoseconds % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return fraction.isEmpty ? "\(whole)" : "\(whole).\(fraction)"
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
