/// A carrier body or WebSocket message: one or more complete frames back to back.
public enum FrameBatch {
    /// Decodes one complete carrier body / WebSocket message: non-empty, <= maxFrames, no
    /// trailing partial frame. Payloads are slices of `body`, not copies.
    ///
    /// Once `maxFrames` frames are decoded, any further byte fails with `tooManyFrames`
    /// without being decoded.
    public static func decode(
        _ body: ArraySlice<UInt8>,
        direction: FrameDirection,
        maxFrames: Int = FrameLimits.maxFramesPerBatch
    ) throws(FrameError) -> [Frame] {
        guard !body.isEmpty else { throw .emptyBatch }
        var decoder = FrameDecoder(direction: direction)
        decoder.append(body)
        var frames: [Frame] = []
        frames.reserveCapacity(min(max(maxFrames, 0), body.count / Frame.headerLength))
        while true {
            if frames.count >= maxFrames, decoder.bufferedByteCount > 0 { throw .tooManyFrames }
            guard let frame = try decoder.nextFrame() else { break }
            frames.append(frame)
        }
        try decoder.finish()
        return frames
    }
}
