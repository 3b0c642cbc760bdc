public import WebProxyCore

/// Something the I/O shell observed, fed to `SessionSupervisor.handle(_:at:)`.
public enum SessionEvent: Sendable {
    /// Build the first session (the daemon keeps one up from start-up on).
    case start
    /// The listener accepted a local connection. The shell reads it only as far as
    /// `readAllowance(for:)` allows and stops on `pauseLocalRead`.
    case localAccepted(ConnectionID)
    /// Bytes read from a local connection: never more than `readAllowance(for:)`.
    case localRead(ConnectionID, ArraySlice<UInt8>)
    /// The local socket took this many bytes of earlier `writeLocal` actions.
    case localWritten(ConnectionID, Int)
    /// The local peer closed its side.
    case localEOF(ConnectionID)
    /// The local connection failed (reset, write error).
    case localError(ConnectionID)
    /// An HTTP answer to a `sendHTTP` action; `wallClockSeconds` (Unix time at arrival)
    /// resolves a `Retry-After` date.
    case httpResponse(RequestID, CarrierResponse, wallClockSeconds: Int64)
    /// A `sendHTTP` got no answer: connection error, reset, or its deadline passed.
    case httpFailed(RequestID)
    /// A WebSocket upgrade succeeded; `response` is the 101 head (its subprotocol is checked).
    case webSocketOpened(SocketID, response: CarrierResponse)
    /// A WebSocket upgrade failed: the non-101 answer, or nil for no answer or a deadline.
    case webSocketUpgradeFailed(SocketID, response: CarrierResponse?)
    /// One binary message. The shell closes a socket that sends a text message and reports
    /// it with `webSocketClosed(clean: false)`.
    case webSocketMessage(SocketID, [UInt8])
    /// A Pong (or any control frame from the relay): proof of life.
    case webSocketPong(SocketID)
    /// The socket's outgoing buffer shrank to `bufferedBytes` (bytes accepted by
    /// `sendWebSocketMessage` and not yet written to the TCP socket).
    case webSocketDrained(SocketID, bufferedBytes: Int)
    /// The socket ended.
    case webSocketClosed(SocketID, clean: Bool)
    /// A timer from a `schedule` action fired.
    case timerFired(SessionTimer)
    /// Stop: close local connections, delete the session (bounded wait), then `stopped`.
    case shutdown
    /// The shell's periodic tick for the stall watchdog (`SessionSettings.stallBound`).
    case progressCheck
}
