/// Incremental, strict RFC 6455 frame parser. Every header is checked as soon as its bytes
/// are in, before any payload is buffered; a payload is handed out once complete and unmasked.
public struct WebSocketFrameParser: Sendable {
    /// The role of the receiving side: a client takes only unmasked frames, a server only masked ones.
    public let role: WebSocketRole
    /// Largest data-frame payload accepted from the next header on; bigger is `messageTooBig`.
    public var maxDataPayload: Int
    private var queue = ByteQueue()
    private var failure: WebSocketError?
    /// The frame whose header is parsed and whose payload is still arriving.
    private var incoming: IncomingFrame?

    public init(role: WebSocketRole, maxDataPayload: Int) {
        self.role = role
        self.maxDataPayload = maxDataPayload
    }

    /// Appends received bytes.
    public mutating func receive(_ bytes: [UInt8]) {
        if incoming == nil { queue.append(bytes) } else { bytes.withUnsafeBytes { receive($0) } }
    }

    /// Appends received bytes.
    public mutating func receive(_ bytes: ArraySlice<UInt8>) {
        if incoming == nil { queue.append(bytes) } else { bytes.withUnsafeBytes { receive($0) } }
    }

    /// Appends received bytes, copied straight from the caller's buffer: into the payload
    /// of a frame whose header is in, the rest into the queue.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        if let missing = incoming?.missing, missing > 0 {
            let count = min(missing, rest.count)
            incoming?.payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<count]))
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
        }
        if !rest.isEmpty { queue.append(rest) }
    }

    /// Whether a frame has been partly received.
    public var hasPartialFrame: Bool { !queue.isEmpty || incoming != nil }

    /// The next complete frame, or nil until more bytes arrive. Errors are final.
    public mutating func next() throws(WebSocketError) -> WebSocketFrame? {
        if let failure { throw failure }
        if var frame = incoming {
            guard frame.missing == 0 else { return nil }
            incoming = nil
            return frame.complete()
        }
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
        guard queue.count >= headerLength else { return nil }
        let key = masked ? UInt32(readBigEndian(at: keyOffset, bytes: 4)) : nil
        if queue.count - headerLength < payloadLength {
            // Header complete, payload not: later bytes go straight into its own buffer
            // (sized once, up to a limit), not the queue.
            queue.skip(headerLength)
            var frame = IncomingFrame(fin: fin, opcode: opcode, key: key, length: payloadLength)
            frame.payload.append(contentsOf: queue.take(queue.count))
            incoming = frame
            return nil
        }
        queue.skip(headerLength)
        var frame = IncomingFrame(fin: fin, opcode: opcode, key: key, payload: Array(queue.take(payloadLength)))
        return frame.complete()
    }

    private func readBigEndian(at offset: Int, bytes: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + bytes) { value = value << 8 | UInt64(queue[offset: index]) }
        return value
    }

    /// A frame being received: header fields and the payload so far (still masked).
    private struct IncomingFrame: Sendable {
        let fin: Bool
        let opcode: WebSocketOpcode
        let key: UInt32?
        let length: Int
        var payload: [UInt8]

        init(fin: Bool, opcode: WebSocketOpcode, key: UInt32?, length: Int) {
            self.fin = fin
            self.opcode = opcode
            self.key = key
            self.length = length
            payload = []
            payload.reserveCapacity(min(length, Self.reservationLimit))
        }

        init(fin: Bool, opcode: WebSocketOpcode, key: UInt32?, payload: [UInt8]) {
            self.fin = fin
            self.opcode = opcode
            self.key = key
            self.length = payload.count
            self.payload = payload
        }

        /// Most reserved up front from a declared length (4 MiB: a whole message of either
        /// side's cap); a bigger payload grows as it arrives.
        static let reservationLimit = 4 << 20

        /// Payload bytes still to come.
        var missing: Int { length - payload.count }

        /// The finished frame, unmasked in place (the payload is moved out, not copied).
        mutating func complete() -> WebSocketFrame {
            var payload: [UInt8] = []
            swap(&payload, &self.payload)
            if let key { WebSocketMasking.apply(key: key, to: &payload, range: 0..<payload.count) }
            return WebSocketFrame(fin: fin, opcode: opcode, payload: payload)
        }
    }
}
