/// One received frame, payload already unmasked.
public struct WebSocketFrame: Hashable, Sendable {
    public var fin: Bool
    public var opcode: WebSocketOpcode
    public var payload: [UInt8]

    public init(fin: Bool = true, opcode: WebSocketOpcode, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }

    /// Largest payload of a control frame.
    public static let maxControlPayload = 125
}
