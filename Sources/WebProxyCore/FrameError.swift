/// Why a frame, a frame stream or a batch was rejected. Every case is a fatal protocol error
/// for whatever carried the bytes (the session, or one lane in `websocket-lanes`).
///
/// Descriptions name the problem, the frame type and the stream id; they never contain
/// payload bytes, which may be secret.
public struct FrameError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, for callers that react differently to different problems.
    public enum Code: Hashable, Sendable {
        /// The type byte is not a tproxy v1 frame type.
        case unknownType(UInt8)
        /// A known type that the sending side may not send.
        case wrongDirection(FrameType)
        /// Stream 0 for a stream frame, or a nonzero stream for a session frame.
        case wrongStream(FrameType, stream: StreamID)
        /// The payload length or content does not fit the type (`length` as announced).
        case badPayload(FrameType, length: Int)
        /// A WINDOW frame returning zero bytes of credit.
        case zeroWindow(stream: StreamID)
        /// The header announces more payload than the limit allows.
        case payloadTooLarge(length: Int)
        /// The body or message ended inside a frame; `bufferedBytes` were left over.
        case truncated(bufferedBytes: Int)
        /// More frames in one body or message than the batch limit.
        case tooManyFrames
        /// A body or message with no frames at all.
        case emptyBatch
    }

    /// The problem, for `switch`.
    public let code: Code

    private init(_ code: Code) { self.code = code }

    public static func unknownType(_ type: UInt8) -> FrameError { FrameError(.unknownType(type)) }

    public static func wrongDirection(_ type: FrameType) -> FrameError {
        FrameError(.wrongDirection(type))
    }

    public static func wrongStream(_ type: FrameType, stream: StreamID) -> FrameError {
        FrameError(.wrongStream(type, stream: stream))
    }

    public static func badPayload(_ type: FrameType, length: Int) -> FrameError {
        FrameError(.badPayload(type, length: length))
    }

    public static func zeroWindow(stream: StreamID) -> FrameError {
        FrameError(.zeroWindow(stream: stream))
    }

    public static func payloadTooLarge(length: Int) -> FrameError {
        FrameError(.payloadTooLarge(length: length))
    }

    public static func truncated(bufferedBytes: Int) -> FrameError {
        FrameError(.truncated(bufferedBytes: bufferedBytes))
    }

    public static let tooManyFrames = FrameError(.tooManyFrames)
    public static let emptyBatch = FrameError(.emptyBatch)

    public var description: String {
        switch code {
        case .unknownType(let type):
            return "unknown frame type 0x\(Self.hexByte(type))"
        case .wrongDirection(let type):
            return "\(type.name) frame sent in a direction that does not allow it"
        case .wrongStream(let type, let stream):
            let rule = stream.isSession ? "needs a nonzero stream" : "belongs on stream 0"
            return "\(type.name) frame on stream \(stream): \(type.name) \(rule)"
        case .badPayload(let type, let length):
            return "\(type.name) frame with a malformed \(length)-byte payload: \(Self.payloadRule(type))"
        case .zeroWindow(let stream):
            return "WINDOW frame on stream \(stream) returns zero credit"
        case .payloadTooLarge(let length):
            return "frame announces a \(length)-byte payload, over the payload limit"
        case .truncated(let bufferedBytes):
            return "incomplete frame at the end of the batch (\(bufferedBytes) bytes left over)"
        case .tooManyFrames:
            return "batch has more frames than the batch limit allows"
        case .emptyBatch:
            return "batch has no frames"
        }
    }

    private static func payloadRule(_ type: FrameType) -> String {
        switch type {
        case .open, .close, .welcome: "the payload must be empty"
        case .data: "the payload must not be empty"
        case .window: "the payload must be a 4-byte delta"
        case .ping, .pong: "the token must be at most \(FrameLimits.maxPingToken) bytes"
        case .hello: "the payload must be the single version byte 01"
        case .bye: "the reason does not fit a BYE frame"
        }
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: false)
        return byte < 0x10 ? "0" + digits : digits
    }
}
