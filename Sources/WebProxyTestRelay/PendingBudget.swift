/// A session's pending budget (PROTOCOL.md §4.6): bytes and items buffered for it in either
/// direction, each item charged 256 bytes extra. Uplink DATA that does not fit is refused
/// (503); backend reads pause while the downlink share is full.
struct PendingBudget: Sendable {
    static let itemCharge = 256

    private(set) var bytes = 0
    private(set) var items = 0
    let maxBytes: Int
    let maxItems: Int
    /// Room kept free for one maximum uplink batch and for WINDOW/CLOSE frames.
    let downlinkReserveBytes: Int
    let downlinkReserveItems: Int

    init(limits: RelayLimits) {
        maxBytes = limits.maxPendingBytes
        maxItems = limits.maxPendingItems
        downlinkReserveBytes = limits.maxBodyBytes + 64 << 10
        downlinkReserveItems = limits.maxFramesPerBatch + 64
    }

    /// Whether an uplink batch with `payload` DATA bytes in `count` frames fits.
    func admitsUplink(payload: Int, count: Int) -> Bool {
        bytes + payload + count * Self.itemCharge <= maxBytes && items + count <= maxItems
    }

    /// Whether a backend read of `payload` bytes may be queued toward the client.
    func admitsDownlinkData(_ payload: Int) -> Bool {
        bytes + payload + Self.itemCharge <= maxBytes - downlinkReserveBytes
            && items + 1 <= maxItems - downlinkReserveItems
    }

    mutating func charge(bytes payload: Int, items count: Int) {
        bytes += payload + count * Self.itemCharge
        items += count
    }

    mutating func release(bytes payload: Int, items count: Int) {
        bytes = max(0, bytes - payload - count * Self.itemCharge)
        items = max(0, items - count)
    }
}
