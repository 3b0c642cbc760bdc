/// One tproxy v1 frame: `type:u8 | stream:u24 | length:u32 | payload`, big-endian.
///
/// Payload bytes are `ArraySlice`s so a decoded batch can hand out its frames without
/// copying the body they came from.
public enum Frame: Hashable, Sendable {
    /// Client to relay: opens a new stream. No acknowledgement; DATA may follow at once.
    case open(stream: StreamID)
    /// Both directions: opaque, non-empty payload for a stream.
    case data(stream: StreamID, payload: ArraySlice<UInt8>)
    /// Both directions: aborts a stream (not a half-close).
    case close(stream: StreamID)
    /// Both directions: returns `delta` (non-zero) bytes of credit for a stream.
    case window(stream: StreamID, delta: UInt32)
    /// Relay to client on stream 0: must be answered with a PONG of the same token.
    case ping(token: ArraySlice<UInt8>)
    /// Client to relay on stream 0: echoes a PING token (at most 64 bytes).
    case pong(token: ArraySlice<UInt8>)
    /// Client to relay on stream 0, only as the whole session-create body. Payload `01`.
    case hello(version: UInt8)
    /// Relay to client on stream 0, only as the whole session-create response. Empty.
    case welcome
    /// Relay to client on stream 0: the session is over; the payload is an optional reason.
    case bye(reason: ArraySlice<UInt8>)

    public var type: FrameType {
        switch self {
        case .open: .open
        case .data: .data
        case .close: .close
        case .window: .window
        case .ping: .ping
        case .pong: .pong
        case .hello: .hello
        case .welcome: .welcome
        case .bye: .bye
        }
    }

    /// The stream the frame belongs to; `.session` (0) for the session-level types.
    public var stream: StreamID {
        switch self {
        case .open(let s), .data(let s, _), .close(let s), .window(let s, _): s
        case .ping, .pong, .hello, .welcome, .bye: .session
        }
    }

    /// Payload length in bytes, as written in the header.
    public var payloadLength: Int {
        switch self {
        case .open, .close, .welcome: 0
        case .data(_, let p), .ping(let p), .pong(let p), .bye(let p): p.count
        case .window: 4
        case .hello: 1
        }
    }

    /// Header plus payload.
    public var encodedLength: Int { Frame.headerLength + payloadLength }

    public static let headerLength = 8
}

public enum FrameType: UInt8, Sendable, CaseIterable {
    case open = 0x01
    case data = 0x02
    case close = 0x03
    case window = 0x04
    case ping = 0x05
    case pong = 0x06
    case hello = 0x10
    case welcome = 0x11
    case bye = 0x1F

    public var name: String {
        switch self {
        case .open: "OPEN"
        case .data: "DATA"
        case .close: "CLOSE"
        case .window: "WINDOW"
        case .ping: "PING"
        case .pong: "PONG"
        case .hello: "HELLO"
        case .welcome: "WELCOME"
        case .bye: "BYE"
        }
    }
}

/// A 24-bit stream id. 0 is the session itself; streams use 1...0xFFFFFF.
public struct StreamID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    /// Fails for values that do not fit in 24 bits.
    public init?(rawValue: UInt32) {
        guard rawValue <= StreamID.max.rawValue else { return nil }
        self.rawValue = rawValue
    }

    private init(unchecked: UInt32) { rawValue = unchecked }

    public static let session = StreamID(unchecked: 0)
    public static let first = StreamID(unchecked: 1)
    public static let max = StreamID(unchecked: 0xFF_FFFF)

    public var isSession: Bool { rawValue == 0 }
    public var description: String { String(rawValue) }
    public static func < (a: StreamID, b: StreamID) -> Bool { a.rawValue < b.rawValue }
}

/// Which side sent a frame. Decoders check types against it: a client accepts only what a
/// relay may send, and the test relay only what a client may send.
public enum FrameDirection: Sendable {
    case clientToRelay
    case relayToClient
}

/// Protocol limits shared by both sides (PROTOCOL.md §7.1).
public enum FrameLimits {
    /// Largest payload of any frame, both directions.
    public static let maxPayload = 1 << 20
    /// Largest number of frames in one body or WebSocket message.
    public static let maxFramesPerBatch = 4096
    /// Largest PING/PONG token.
    public static let maxPingToken = 64
    /// The largest DATA payload this client emits (the relay accepts up to `maxPayload`).
    public static let clientDataChunk = 64 << 10
    /// Default and hard cap of a carrier batch (body or message), `batchLimit` in the page.
    public static let defaultBatchBytes = 2 << 20
}

extension Frame {
    /// Appends the encoded frame to `buffer`. The caller guarantees a valid frame (stream
    /// ids fit 24 bits by construction; payload lengths are bounded by the producers).
    public func encode(into buffer: inout [UInt8]) {
        let length = payloadLength
        let id = stream.rawValue
        buffer.reserveCapacity(buffer.count + Frame.headerLength + length)
        buffer.append(type.rawValue)
        buffer.append(UInt8(truncatingIfNeeded: id >> 16))
        buffer.append(UInt8(truncatingIfNeeded: id >> 8))
        buffer.append(UInt8(truncatingIfNeeded: id))
        let l = UInt32(truncatingIfNeeded: length)
        buffer.append(UInt8(truncatingIfNeeded: l >> 24))
        buffer.append(UInt8(truncatingIfNeeded: l >> 16))
        buffer.append(UInt8(truncatingIfNeeded: l >> 8))
        buffer.append(UInt8(truncatingIfNeeded: l))
        switch self {
        case .open, .close, .welcome:
            break
        case .data(_, let p), .ping(let p), .pong(let p), .bye(let p):
            buffer.append(contentsOf: p)
        case .window(_, let delta):
            buffer.append(UInt8(truncatingIfNeeded: delta >> 24))
            buffer.append(UInt8(truncatingIfNeeded: delta >> 16))
            buffer.append(UInt8(truncatingIfNeeded: delta >> 8))
            buffer.append(UInt8(truncatingIfNeeded: delta))
        case .hello(let version):
            buffer.append(version)
        }
    }

    /// The encoded frame as a new array.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }
}

extension Sequence where Element == Frame {
    /// Encodes a batch of frames back to back, as a carrier body or message.
    public func encodedBatch() -> [UInt8] {
        var out: [UInt8] = []
        for frame in self { frame.encode(into: &out) }
        return out
    }
}
