/// Writes RFC 6455 frames: masked with a fresh key from a client, unmasked from a server.
public struct WebSocketFrameEncoder: Sendable {
    /// The role of the sending side.
    public let role: WebSocketRole
    private var masks: WebSocketMaskSource?

    /// A client encoder, masking every frame with the next key of `masks`.
    public init(clientMasks masks: WebSocketMaskSource) {
        self.role = .client
        self.masks = masks
    }

    /// A server encoder: frames go out unmasked.
    public init() {
        self.role = .server
        self.masks = nil
    }

    /// Appends one frame carrying `payload` to `buffer`.
    public mutating func encode(
        _ opcode: WebSocketOpcode, payload: ArraySlice<UInt8>, fin: Bool = true, into buffer: inout [UInt8]
    ) {
        let key = masks?.next()
        Self.encode(opcode, payload: payload, fin: fin, maskingKey: key, into: &buffer)
    }

    /// Appends one frame carrying `payload` to `buffer`.
    public mutating func encode(
        _ opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true, into buffer: inout [UInt8]
    ) {
        encode(opcode, payload: payload[...], fin: fin, into: &buffer)
    }

    /// Masks `payload` in place (client) and returns the header to send before it: the
    /// frame without copying its payload.
    public mutating func encodeInPlace(_ opcode: WebSocketOpcode, payload: inout [UInt8], fin: Bool = true) -> [UInt8] {
        let key = masks?.next()
        var header: [UInt8] = []
        header.reserveCapacity(14)
        Self.appendHeader(opcode, length: payload.count, fin: fin, maskingKey: key, to: &header)
        if let key { WebSocketMasking.apply(key: key, to: &payload, range: 0..<payload.count) }
        return header
    }

    /// Appends one frame; with a `maskingKey` the frame is masked with it (client frames).
    public static func encode(
        _ opcode: WebSocketOpcode, payload: ArraySlice<UInt8>, fin: Bool, maskingKey: UInt32?,
        into buffer: inout [UInt8]
    ) {
        buffer.reserveCapacity(buffer.count + 14 + payload.count)
        appendHeader(opcode, length: payload.count, fin: fin, maskingKey: maskingKey, to: &buffer)
        guard let maskingKey else {
            buffer.append(contentsOf: payload)
            return
        }
        let start = buffer.count
        buffer.append(contentsOf: payload)
        WebSocketMasking.apply(key: maskingKey, to: &buffer, range: start..<buffer.count)
    }

    /// Appends the header of a frame of `length` payload bytes, masking key included.
    private static func appendHeader(
        _ opcode: WebSocketOpcode, length: Int, fin: Bool, maskingKey: UInt32?, to buffer: inout [UInt8]
    ) {
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        buffer.append((fin ? 0x80 : 0) | opcode.rawValue)
        if length < 126 {
            buffer.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            buffer.append(maskBit | 126)
            appendBigEndian(UInt64(length), bytes: 2, to: &buffer)
        } else {
            buffer.append(maskBit | 127)
            appendBigEndian(UInt64(length), bytes: 8, to: &buffer)
        }
        if let maskingKey { appendBigEndian(UInt64(maskingKey), bytes: 4, to: &buffer) }
    }

    private static func appendBigEndian(_ value: UInt64, bytes: Int, to buffer: inout [UInt8]) {
        for index in stride(from: bytes - 1, through: 0, by: -1) {
            buffer.append(UInt8(truncatingIfNeeded: value >> (UInt64(index) * 8)))
        }
    }
}
