/// Incremental decoder for the frames one side sends: append bytes as they arrive, take
/// frames as they complete.
///
/// Each header is checked (type, direction, stream, payload length and shape) as soon as its
/// 8 bytes are buffered, so a header announcing an oversized or malformed payload fails before
/// any of that payload is waited for. Payload slices share the appended storage; their indices
/// are not zero-based. The first error is final: the byte stream cannot be resynchronised, so
/// later calls throw it again and appended bytes are dropped.
public struct FrameDecoder: Sendable {
    private let direction: FrameDirection
    private let maxPayload: UInt32
    /// Appended bytes not yet taken as frames. Taking a frame only moves `startIndex`; the
    /// consumed prefix is dropped whenever the storage is replaced (an append that must
    /// reallocate copies only these bytes, and an emptied buffer releases its storage).
    private var pending: ArraySlice<UInt8> = []
    private var failure: FrameError?

    /// A decoder for frames sent by `direction`'s sender. `maxPayload` is clamped to 0...2^32-1.
    public init(direction: FrameDirection, maxPayload: Int = FrameLimits.maxPayload) {
        self.direction = direction
        self.maxPayload = UInt32(clamping: maxPayload)
    }

    /// Bytes appended but not yet returned as frames.
    public var bufferedByteCount: Int { pending.count }

    /// Buffers `bytes`. When nothing is buffered the slice is kept as is, without copying.
    public mutating func append(_ bytes: ArraySlice<UInt8>) {
        guard failure == nil, !bytes.isEmpty else { return }
        if pending.isEmpty {
            pending = bytes
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    /// Buffers `bytes`.
    public mutating func append(_ bytes: [UInt8]) {
        append(bytes[...])
    }

    /// The next complete frame, or nil when more bytes are needed.
    public mutating func nextFrame() throws(FrameError) -> Frame? {
        if let failure { throw failure }
        do throws(FrameError) {
            return try takeFrame()
        } catch {
            fail(error)
            throw error
        }
    }

    /// Ends a body or message: fails if bytes are still buffered. Drain `nextFrame()` first.
    public mutating func finish() throws(FrameError) {
        if let failure { throw failure }
        guard pending.isEmpty else {
            let error = FrameError.truncated(bufferedBytes: pending.count)
            fail(error)
            throw error
        }
    }

    private mutating func fail(_ error: FrameError) {
        failure = error
        pending = []
    }

    private mutating func takeFrame() throws(FrameError) -> Frame? {
        guard pending.count >= Frame.headerLength else { return nil }
        let start = pending.startIndex
        let header = try Header(pending[start..<(start + Frame.headerLength)])
        try header.validate(direction: direction, maxPayload: maxPayload)
        let length = Int(header.length)
        guard pending.count - Frame.headerLength >= length else { return nil }
        let payloadStart = start + Frame.headerLength
        let end = payloadStart + length
        let frame = try header.frame(payload: pending[payloadStart..<end])
        pending = end == pending.endIndex ? [] : pending[end...]
        return frame
    }
}

extension FrameDecoder {
    /// A parsed 8-byte header: `type:u8 | stream:u24 | length:u32`, big-endian.
    private struct Header {
        let type: FrameType
        let stream: StreamID
        let length: UInt32

        init(_ bytes: ArraySlice<UInt8>) throws(FrameError) {
            let i = bytes.startIndex
            guard let type = FrameType(rawValue: bytes[i]) else {
                throw .unknownType(bytes[i])
            }
            self.type = type
            let id = UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
            // Three bytes always fit 24 bits.
            stream = StreamID(rawValue: id) ?? .max
            length = FrameDecoder.bigEndianUInt32(bytes[(i + 4)..<(i + 8)])
        }

        /// Checks in a fixed order: direction, stream, size limit, payload shape.
        func validate(direction: FrameDirection, maxPayload: UInt32) throws(FrameError) {
            guard Header.isSent(type, by: direction) else { throw .wrongDirection(type) }
            guard Header.isStreamType(type) != stream.isSession else {
                throw .wrongStream(type, stream: stream)
            }
            guard length <= maxPayload else { throw .payloadTooLarge(length: Int(length)) }
            let shapeIsValid: Bool
            switch type {
            case .open, .close, .welcome: shapeIsValid = length == 0
            case .data: shapeIsValid = length > 0
            case .window: shapeIsValid = length == 4
            case .ping, .pong: shapeIsValid = length <= UInt32(FrameLimits.maxPingToken)
            case .hello: shapeIsValid = length == 1
            case .bye: shapeIsValid = true
            }
            guard shapeIsValid else { throw .badPayload(type, length: Int(length)) }
        }

        /// Builds the frame from a payload of exactly `length` bytes, checking its content.
        func frame(payload: ArraySlice<UInt8>) throws(FrameError) -> Frame {
            switch type {
            case .open: return .open(stream: stream)
            case .data: return .data(stream: stream, payload: payload)
            case .close: return .close(stream: stream)
            case .window:
                let delta = FrameDecoder.bigEndianUInt32(payload)
                guard delta != 0 else { throw .zeroWindow(stream: stream) }
                return .window(stream: stream, delta: delta)
            case .ping: return .ping(token: payload)
            case .pong: return .pong(token: payload)
            case .hello:
                guard payload.first == 1 else { throw .badPayload(.hello, length: payload.count) }
                return .hello(version: 1)
            case .welcome: return .welcome
            case .bye: return .bye(reason: payload)
            }
        }

        /// OPEN, DATA, CLOSE and WINDOW live on streams 1...; the rest on stream 0.
        private static func isStreamType(_ type: FrameType) -> Bool {
            switch type {
            case .open, .data, .close, .window: true
            case .ping, .pong, .hello, .welcome, .bye: false
            }
        }

        private static func isSent(_ type: FrameType, by direction: FrameDirection) -> Bool {
            switch type {
            case .data, .close, .window: true
            case .open, .pong, .hello: direction == .clientToRelay
            case .ping, .welcome, .bye: direction == .relayToClient
            }
        }
    }

    /// Reads four bytes big-endian; the caller guarantees `bytes.count == 4`.
    private static func bigEndianUInt32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        let i = bytes.startIndex
        return UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8
            | UInt32(bytes[i + 3])
    }
}
