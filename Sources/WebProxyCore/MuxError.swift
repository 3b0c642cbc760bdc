/// Why `SessionMux` refused an input, and how far the consequence reaches.
///
/// Descriptions carry frame types, stream ids and byte counts only: never payload bytes,
/// PING tokens or BYE reasons.
public struct MuxError: Error, Hashable, Sendable, CustomStringConvertible {
    /// How much of the session an error ends.
    public enum Scope: Hashable, Sendable {
        /// The session cannot go on: close every local connection and build a new session.
        case session
        /// Only this stream is over. The mux has already aborted it (CLOSE queued, id
        /// tombstoned); close its local connection. The session and other streams go on.
        case stream(StreamID)
        /// The call was refused and changed nothing; the session and its streams go on.
        case refused
    }

    enum Code: Hashable, Sendable {
        case sessionFinished
        case streamIDsExhausted
        case liveStreamLimit(Int)
        case unexpectedFrame(FrameType)
        case streamFrameOnSession(FrameType)
        case frameForUnopenedStream(FrameType, StreamID)
        case emptyData(StreamID)
        case zeroWindow(StreamID)
        case receiveWindowOverrun(StreamID, received: Int, window: UInt64)
        case pingTokenTooLong(Int)
        case tooManyPendingPongs(Int)
        case streamNotLive(StreamID)
        case sendCreditExceeded(StreamID, requested: Int, credit: Int)
        case deliveredCountInvalid(StreamID, reported: Int, outstanding: Int)
    }

    /// How far the consequence reaches.
    public let scope: Scope
    let code: Code

    init(_ scope: Scope, _ code: Code) {
        self.scope = scope
        self.code = code
    }

    /// The mux already ended (BYE or a session error); nothing more is accepted.
    public static let sessionFinished = MuxError(.session, .sessionFinished)
    /// Stream id 0xFFFFFF was used; new streams need a new session.
    public static let streamIDsExhausted = MuxError(.session, .streamIDsExhausted)

    public var description: String {
        switch code {
        case .sessionFinished:
            "the session has already ended"
        case .streamIDsExhausted:
            "stream ids exhausted: every id up to 16777215 was used in this session"
        case .liveStreamLimit(let limit):
            "too many live streams: the limit is \(limit)"
        case .unexpectedFrame(let type):
            "relay sent \(type.name), which is not a session-multiplexer input"
        case .streamFrameOnSession(let type):
            "relay sent \(type.name) on stream 0"
        case .frameForUnopenedStream(let type, let stream):
            "relay sent \(type.name) for stream \(stream), which was never opened"
        case .emptyData(let stream):
            "relay sent empty DATA on stream \(stream)"
        case .zeroWindow(let stream):
            "relay sent WINDOW 0 on stream \(stream)"
        case .receiveWindowOverrun(let stream, let received, let window):
            "relay sent \(received) bytes of DATA on stream \(stream) with only \(window) bytes of window left"
        case .pingTokenTooLong(let length):
            "relay sent a PING token of \(length) bytes (at most \(FrameLimits.maxPingToken))"
        case .tooManyPendingPongs(let limit):
            "relay sent more than \(limit) PINGs without the uplink catching up"
        case .streamNotLive(let stream):
            "stream \(stream) is not open"
        case .sendCreditExceeded(let stream, let requested, let credit):
            "\(requested) bytes exceed the \(credit) bytes of send credit of stream \(stream)"
        case .deliveredCountInvalid(let stream, let reported, let outstanding):
            "\(reported) bytes reported delivered on stream \(stream), but \(outstanding) were outstanding"
        }
    }
}
