import Testing

@testable import WebProxyDaemon

/// The pacer against a simulated path: a bottleneck of `bytesPerMillisecond`, then a fixed
/// round trip before the relay's WINDOW comes back. Every millisecond the sender fills what
/// the pacer allows in flight, in chunks of 64 KiB, as the session does.
@Suite struct UplinkPacerTests {
    struct Path {
        var bytesPerMillisecond: Int
        var roundTripMilliseconds: Int
        var pacer = UplinkPacer()
        var sent = 0
        var acknowledged = 0
        /// When the bottleneck finishes what it holds, in ms.
        var linkFree = 0.0
        /// (end of a chunk in the sent total, when its WINDOW arrives), in order.
        var inFlight: [(end: Int, arrives: Double)] = []
        /// The longest a chunk waited at the bottleneck in the last run, in ms.
        var worstQueueing = 0.0

        init(bytesPerMillisecond: Int, roundTripMilliseconds: Int) {
            self.bytesPerMillisecond = bytesPerMillisecond
            self.roundTripMilliseconds = roundTripMilliseconds
        }

        mutating func run(milliseconds: Range<Int>) {
            worstQueueing = 0
            for ms in milliseconds {
                let now = MonotonicInstant(sinceStart: .milliseconds(ms))
                while let first = inFlight.first, first.arrives <= Double(ms) {
                    acknowledged = first.end
                    inFlight.removeFirst()
                }
                pacer.acknowledged(total: acknowledged, at: now)
                while pacer.target > sent - acknowledged {
                    let chunk = min(pacer.target - (sent - acknowledged), 64 << 10)
                    sent += chunk
                    pacer.sent(total: sent, acknowledged: acknowledged, at: now)
                    let start = max(Double(ms), linkFree)
                    worstQueueing = max(worstQueueing, start - Double(ms))
                    linkFree = start + Double(chunk) / Double(bytesPerMillisecond)
                    inFlight.append((sent, linkFree + Double(roundTripMilliseconds)))
                }
            }
        }

        var bandwidthDelayProduct: Int { bytesPerMillisecond * roundTripMilliseconds }
    }

    @Test func startsAtItsFloor() {
        #expect(UplinkPacer().target == UplinkPacer.floor)
        #expect(UplinkPacer().roundTrip == nil)
    }

    /// 20 Mbit/s and a 50 ms round trip (the WAN benchmark's path): from the floor, the target
    /// grows to between one and two bandwidth-delay products (a 64 KiB chunk's WINDOW comes
    /// only after the whole chunk, so the link needs a chunk more than the product). The link
    /// stays busy and no chunk waits at the bottleneck a round trip, where a full 4 MiB window
    /// would make it wait seconds.
    @Test func settlesBetweenOneAndTwoBandwidthDelayProducts() {
        var path = Path(bytesPerMillisecond: 2500, roundTripMilliseconds: 50)
        path.run(milliseconds: 0..<3000)
        let before = path.acknowledged
        path.run(milliseconds: 3000..<5000)
        let bdp = path.bandwidthDelayProduct
        #expect(path.pacer.target > bdp && path.pacer.target < 2 * bdp, "target \(path.pacer.target)")
        #expect(path.pacer.roundTrip.map { $0 >= .milliseconds(50) && $0 < .milliseconds(80) } == true)
        #expect(Double(path.acknowledged - before) >= 0.95 * 2500 * 2000, "\(path.acknowledged - before) bytes in 2 s")
        #expect(path.worstQueueing < 50, "worst queueing \(path.worstQueueing) ms")
    }

    /// A path that slows to a fifth (4 Mbit/s): once the rate window has passed, the target
    /// is back at its floor (the path's bandwidth-delay product is below it) and a chunk
    /// waits less than two round trips.
    @Test func followsASlowerPathDown() {
        var path = Path(bytesPerMillisecond: 2500, roundTripMilliseconds: 50)
        path.run(milliseconds: 0..<3000)
        path.bytesPerMillisecond = 500
        path.run(milliseconds: 3000..<3000 + 6000)
        path.run(milliseconds: 9000..<12000)
        #expect(path.pacer.target < 2 * path.bandwidthDelayProduct + UplinkPacer.floor, "target \(path.pacer.target)")
        #expect(path.worstQueueing < 100, "worst queueing \(path.worstQueueing) ms")
    }

    /// A fast path where the relay's processing sets the round trip (1 GB/s, 2 ms before each
    /// WINDOW, as on loopback): the pacer grows out of the way and the link stays busy.
    @Test func staysOutOfTheWayOfAFastPath() {
        var path = Path(bytesPerMillisecond: 1_000_000, roundTripMilliseconds: 2)
        path.run(milliseconds: 0..<500)
        let before = path.acknowledged
        path.run(milliseconds: 500..<1000)
        #expect(Double(path.acknowledged - before) >= 0.9 * 1_000_000 * 500, "\(path.acknowledged - before) bytes in 0.5 s")
    }
}
