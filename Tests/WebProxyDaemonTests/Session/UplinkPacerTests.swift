import Testing

@testable import WebProxyDaemon
@testable import WebProxySession

/// The pacer against a simulated path: a bottleneck of `bytesPerMillisecond`, then a fixed
/// round trip before the relay's WINDOW comes back. Every millisecond the sender fills what
/// the pacer allows one bulk stream in flight (the target and a batch more), a batch at a
/// time, as the session does.
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
                while pacer.target + pacer.batchBulkBytes > sent - acknowledged {
                    let chunk = min(pacer.target + pacer.batchBulkBytes - (sent - acknowledged), pacer.batchBulkBytes)
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
    /// grows to between one and two bandwidth-delay products, and a batch is about 5 ms of the
    /// link (12 KiB). The link stays busy and no batch waits at the bottleneck a round trip,
    /// where a full 4 MiB window would make it wait seconds.
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
        #expect((8 << 10...16 << 10).contains(path.pacer.batchBulkBytes), "batch \(path.pacer.batchBulkBytes)")
    }

    /// A path that slows to a fifth (4 Mbit/s): once the rate window has passed, the target
    /// is back near its floor (the path's bandwidth-delay product is below it), batches are
    /// small, and a batch waits less than two round trips.
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
        #expect(path.pacer.batchBulkBytes == 64 << 10)
    }
}
