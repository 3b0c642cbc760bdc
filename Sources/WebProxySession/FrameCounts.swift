import WebProxyCore

/// Relay frames a session has carried: sent in uplink batches, received in downlink
/// batches and messages. Counted where batches are built and decoded, for the metrics.
public struct FrameCounts: Hashable, Sendable {
    /// Frames in the batches handed to the carrier (a retried body counts once).
    public var sent = 0
    /// Frames decoded from the relay's batches.
    public var received = 0

    public init(sent: Int = 0, received: Int = 0) {
        self.sent = sent
        self.received = received
    }

    public mutating func add(_ other: FrameCounts) {
        sent += other.sent
        received += other.received
    }

    /// How many frames an encoded batch of ours holds: a walk over the frame headers, each
    /// of which carries its payload length. Our batches are well formed; a truncated tail
    /// would end the walk.
    static func frames(inBatch batch: [UInt8]) -> Int {
        var count = 0
        var offset = 0
        while batch.count - offset >= Frame.headerLength {
            let length =
                Int(batch[offset + 4]) << 24 | Int(batch[offset + 5]) << 16 | Int(batch[offset + 6]) << 8
                | Int(batch[offset + 7])
            offset += Frame.headerLength + length
            count += 1
        }
        return count
    }
}
