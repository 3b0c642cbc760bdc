/// Credit for one direction of one stream (PROTOCOL.md §4.5): starts at 4 MiB, grows by WINDOW
/// deltas with saturation at 2^32−1, shrinks by the DATA bytes it covers.
///
/// Kept as `UInt64` so a sum of deltas never overflows before it is clamped.
public struct FlowWindow: Hashable, Sendable {
    /// Every stream starts with this much credit in each direction; there is no negotiation.
    public static let initialCredit: UInt64 = 4_194_304
    /// Credit never grows beyond what a u32 WINDOW total can express.
    public static let maximumCredit: UInt64 = 0xFFFF_FFFF

    /// Bytes that may still be sent under this window.
    public private(set) var credit: UInt64

    /// A window holding `credit` bytes, clamped to `maximumCredit`.
    public init(credit: UInt64 = FlowWindow.initialCredit) {
        self.credit = min(credit, FlowWindow.maximumCredit)
    }

    /// `credit` as an `Int`, for sizing reads and buffers.
    public var available: Int { Int(clamping: credit) }

    /// Adds a WINDOW delta, saturating at `maximumCredit`.
    public mutating func grant(_ delta: UInt32) {
        credit = min(credit + UInt64(delta), FlowWindow.maximumCredit)
    }

    /// Takes `count` bytes of credit; returns false and changes nothing when there is not
    /// that much (or `count` is negative).
    public mutating func consume(_ count: Int) -> Bool {
        guard count >= 0, UInt64(count) <= credit else { return false }
        credit -= UInt64(count)
        return true
    }
}
