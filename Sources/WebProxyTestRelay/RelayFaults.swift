/// Faults the test relay injects on purpose, set by tests, the demo or benchmarks.
public struct RelayFaults: Sendable, Equatable {
    /// Apply the next N API requests, then reset their connections instead of answering.
    public var dropResponses = 0
    /// Answer the next N API requests with 503 + `Retry-After: 1` without applying them.
    public var unavailableResponses = 0
    /// How long the shell should hold every response before writing it (the shell's job).
    public var responseDelay: Duration = .zero
    /// Damage the next downlink batch or message.
    public var corruptNextDownlink: DownlinkCorruption?

    public init() {}

    /// How `corruptNextDownlink` damages a batch.
    public enum DownlinkCorruption: Sendable, Equatable {
        /// Append the first 5 bytes of a frame header (an incomplete trailing frame).
        case truncatedFrame
        /// Append a DATA frame whose payload is one byte over `maxFramePayload`.
        case oversizedFrame
        /// Append a 4-byte DATA frame for stream 0xFFFFF0, which no client opened.
        case unknownStream
    }
}
