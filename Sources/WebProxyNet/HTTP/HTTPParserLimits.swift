/// Bounds on what the HTTP parsers buffer for one message.
public struct HTTPParserLimits: Hashable, Sendable {
    /// Start line plus header fields plus the empty line, in bytes.
    public var maxHeadBytes: Int
    /// Header fields per head.
    public var maxHeaderCount: Int
    /// Body bytes per message, however framed.
    public var maxBodyBytes: Int
    /// One chunk-size line (with any ignored extensions), in bytes.
    public var maxChunkLineBytes: Int
    /// The whole trailer section after the last chunk, in bytes.
    public var maxTrailerBytes: Int

    public init(
        maxHeadBytes: Int = 16 << 10, maxHeaderCount: Int = 100, maxBodyBytes: Int = 4 << 20,
        maxChunkLineBytes: Int = 1024, maxTrailerBytes: Int = 4096
    ) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}
