/// Incremental, strict RFC 6455 frame parser. Every header is checked as soon as its bytes
/// are in, before any payload is buffered; a payload is handed out once complete and unmasked.
public struct WebSocketFrameParser: Sendable {
    /// The role of the receiving side: a client takes only unmasked frames, a server only masked ones.
    public let role: WebSocketRole
    /// Largest data-frame payload accepted from the next header on; bigger is `messageTooBig`.
    public var maxDataPayload: Int
    private var queue = ByteQueue()
    private var failure: WebSocketError?

    public init(role: WebSocketRole, maxDataPayload: Int) {
        self.role = role
        self.maxDataPayload = maxDataPayload
    }

    /// Appends received bytes.
    public mutating func receive(_ bytes: [UInt8]) { queue.append(bytes) }

    /// Appends received bytes.
    public mutating func receive(_ bytes: ArraySlice<UInt8>) { queue.append(bytes) }

    /// Appends received bytes, copied straight from the caller's buffer.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) { queue.append(bytes) }

    /// Whether a frame has been partly received.
    public var hasPartialFrame: Bool { !queue.isEmpty }

    /// The next complete frame, or nil until more bytes arrive. Errors are final.
    public mutating func next() throws(WebSocketError) -> WebSocketFrame? {
        if let failure { throw failure }
        do {
            return try parseFrame()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parseFrame() throws(WebSocketError) -> WebSocketFrame? {
        guard queue.count >= 2 else { return nil }
        let first = queue[offset: 0]
        let second = queue[offset: 1]
        guard first & 0x70 == 0 else { throw .reservedBits }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { throw .unknownOpcode }
        let fin = first & 0x80 != 0
        if opcode.isControl && !fin { throw .fragmentedControlFrame }
        let masked = second & 0x80 != 0
        switch role {
        case .client: if masked { throw .maskedFrame }
        case .server: if !masked { throw .unmaskedFrame }
        }
        let shortLength = Int(second & 0x7F)
        if opcode.isControl && shortLength > WebSocketFrame.maxControlPayload {
            throw .controlPayloadTooLong
        }
        var headerLength = 2
        let length: UInt64
        switch shortLength {
        case 126:
            guard queue.count >= 4 else { return nil }
            length = readBigEndian(at: 2, bytes: 2)
            if length < 126 { throw .nonMinimalLength }
            headerLength = 4
        case 127:
            guard queue.count >= 10 else { return nil }
            length = readBigEndian(at: 2, bytes: 8)
            if length >> 63 != 0 { throw .lengthHighBit }
            if length <= 0xFFFF { throw .nonMinimalLength }
            headerLength = 10
        default:
            length = UInt64(shortLength)
        }
        if !opcode.isControl && length > UInt64(max(0, maxDataPayload)) { throw .messageTooBig }
        // Below 2^63 (checked above), so it fits an Int; compared without adding to it.
        let payloadLength = Int(length)
        let keyOffset = headerLength
        if masked { headerLength += 4 }
        guard queue.count >= headerLength, queue.count - headerLength >= payloadLength else { return nil }
        let key = masked ? UInt32(readBigEndian(at: keyOffset, bytes: 4)) : nil
        queue.skip(headerLength)
        var payload = Array(queue.take(payloadLength))
        if let key { WebSocketMasking.apply(key: key, to: &payload, range: 0..<payload.count) }
        return WebSocketFrame(fin: fin, opcode: opcode, payload: payload)
    }

    private func readBigEndian(at offset: Int, bytes: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + bytes) { value = value << 8 | UInt64(queue[offset: index]) }
        return value
    }
}
