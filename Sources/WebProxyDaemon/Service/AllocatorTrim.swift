/// When the daemon gives the allocator's free pages back: in the first quiet second after a
/// transfer. glibc keeps the pages a burst freed, so RSS stayed up to 12 MiB above idle after
/// one; `malloc_trim(0)` then returns them (Docs/PERFORMANCE.md). Asked once a second with
/// the bytes moved so far; a transfer is at least `burstBytes`, so chat alone trims at most
/// once per `burstBytes` it adds up to.
struct AllocatorTrim {
    static let burstBytes = 4 << 20

    private var lastTotal = 0
    private var movedSinceTrim = 0

    /// Whether to trim now, given every byte the relays have moved so far.
    mutating func shouldTrim(totalBytesMoved total: Int) -> Bool {
        // A relay removed by a reload takes its count with it.
        let moved = max(0, total - lastTotal)
        lastTotal = total
        movedSinceTrim += moved
        guard moved == 0, movedSinceTrim >= Self.burstBytes else { return false }
        movedSinceTrim = 0
        return true
    }
}
