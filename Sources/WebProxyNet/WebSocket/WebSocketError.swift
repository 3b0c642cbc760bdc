/// A protocol violation by the peer, with the close code to fail the connection with.
/// Descriptions never include payload bytes.
public struct WebSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable, Sendable {
        case reservedBits, unknownOpcode, fragmentedControlFrame, controlPayloadTooLong
        case unexpectedContinuation, expectedContinuation, nonMinimalLength, lengthHighBit
        case maskedFrame, unmaskedFrame, messageTooBig, textMessage
        case invalidClosePayload, invalidCloseCode, invalidCloseReason
    }

    let code: Code
    /// The code our Close frame carries when we fail the connection for this error.
    public let closeCode: WebSocketCloseCode

    private init(_ code: Code, _ closeCode: WebSocketCloseCode) {
        self.code = code
        self.closeCode = closeCode
    }

    /// RSV1-3 set without a negotiated extension.
    public static let reservedBits = WebSocketError(.reservedBits, .protocolError)
    /// A reserved opcode (3-7, 0xB-0xF).
    public static let unknownOpcode = WebSocketError(.unknownOpcode, .protocolError)
    /// A control frame without FIN.
    public static let fragmentedControlFrame = WebSocketError(.fragmentedControlFrame, .protocolError)
    /// A control frame with more than 125 payload bytes.
    public static let controlPayloadTooLong = WebSocketError(.controlPayloadTooLong, .protocolError)
    /// A continuation frame with no fragmented message in progress.
    public static let unexpectedContinuation = WebSocketError(.unexpectedContinuation, .protocolError)
    /// A new data frame while a fragmented message is still open.
    public static let expectedContinuation = WebSocketError(.expectedContinuation, .protocolError)
    /// A payload length not in its shortest encoding.
    public static let nonMinimalLength = WebSocketError(.nonMinimalLength, .protocolError)
    /// A 64-bit payload length with the most significant bit set.
    public static let lengthHighBit = WebSocketError(.lengthHighBit, .protocolError)
    /// A masked frame received by a client.
    public static let maskedFrame = WebSocketError(.maskedFrame, .protocolError)
    /// An unmasked frame received by a server.
    public static let unmaskedFrame = WebSocketError(.unmaskedFrame, .protocolError)
    /// A message (or one frame) over the configured size cap.
    public static let messageTooBig = WebSocketError(.messageTooBig, .messageTooBig)
    /// A text message: only binary messages are carried.
    public static let textMessage = WebSocketError(.textMessage, .unsupportedData)
    /// A Close payload of exactly one byte.
    public static let invalidClosePayload = WebSocketError(.invalidClosePayload, .protocolError)
    /// A Close code an endpoint may not send.
    public static let invalidCloseCode = WebSocketError(.invalidCloseCode, .protocolError)
    /// A Close reason that is not UTF-8.
    public static let invalidCloseReason = WebSocketError(.invalidCloseReason, .invalidPayloadData)

    public var description: String {
        let what =
            switch code {
            case .reservedBits: "reserved bits set"
            case .unknownOpcode: "reserved opcode"
            case .fragmentedControlFrame: "fragmented control frame"
            case .controlPayloadTooLong: "control frame payload over 125 bytes"
            case .unexpectedContinuation: "continuation frame without a message in progress"
            case .expectedContinuation: "new data frame inside a fragmented message"
            case .nonMinimalLength: "payload length not minimally encoded"
            case .lengthHighBit: "64-bit payload length with the high bit set"
            case .maskedFrame: "masked frame from the server"
            case .unmaskedFrame: "unmasked frame from the client"
            case .messageTooBig: "message exceeds the size limit"
            case .textMessage: "text message (only binary is supported)"
            case .invalidClosePayload: "one-byte close payload"
            case .invalidCloseCode: "close code not allowed on the wire"
            case .invalidCloseReason: "close reason is not UTF-8"
            }
        return "WebSocket: \(what) (close \(closeCode))"
    }
}
