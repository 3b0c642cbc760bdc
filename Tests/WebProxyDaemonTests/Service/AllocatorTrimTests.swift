import Testing

@testable import WebProxyDaemon

@Suite struct AllocatorTrimTests {
    /// Totals sampled once a second; which samples trim.
    private func trims(_ totals: [Int]) -> [Int] {
        var trim = AllocatorTrim()
        return totals.indices.filter { trim.shouldTrim(totalBytesMoved: totals[$0]) }
    }

    @Test func aTransferTrimsOnceInItsFirstQuietSecond() {
        let mib = 1 << 20
        #expect(trims([0, 3 * mib, 6 * mib, 6 * mib, 6 * mib]) == [3])
    }

    @Test func chatNeverTrimsUntilItAddsUpToATransfer() {
        // 64 KiB a second with quiet seconds between: the trim waits for 4 MiB in all.
        let totals = (0..<140).map { ($0 / 2) * (64 << 10) }
        #expect(trims(totals) == [129])
    }

    @Test func aRelayRemovedByAReloadDoesNotCountAsTraffic() {
        let mib = 1 << 20
        // 8 MiB moved and trimmed; a reload removes the relay that moved them.
        #expect(trims([8 * mib, 8 * mib, 0, 0, 1 * mib, 1 * mib]) == [1])
    }
}
