/// RFC 6455 frame opcodes; the others are reserved and refused.
public enum WebSocketOpcode: UInt8, Hashable, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, Ping and Pong: never fragmented, payload at most 125 bytes.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}
