/// What the caller of `WebSocketConnection` must do or learn, in order.
public enum WebSocketAction: Hashable, Sendable {
    /// Write these bytes to the transport (Pong replies, Close frames).
    case write([UInt8])
    /// A complete binary message arrived.
    case message([UInt8])
    /// The peer sent a Ping with this payload (its Pong is the `write` before this).
    case ping([UInt8])
    /// The peer sent a Pong with this payload.
    case pong([UInt8])
    /// The WebSocket is over: write any bytes before this action, then close the transport.
    case closed(WebSocketCloseOutcome)
}

/// How a WebSocket ended.
public enum WebSocketCloseOutcome: Hashable, Sendable {
    /// Close frames went both ways. `code` is the peer's (nil if its Close had no payload).
    case clean(code: WebSocketCloseCode?, reason: String)
    /// We failed the connection for the peer's protocol violation, sending Close with
    /// `error.closeCode` if we had not sent a Close already.
    case failed(WebSocketError)
    /// The transport ended without a completed close handshake (abrupt EOF).
    case endOfStream
    /// The caller's close-handshake deadline passed before the peer's Close arrived.
    case timedOut
}

/// The close-handshake states of RFC 6455 section 7.
public enum WebSocketConnectionState: Hashable, Sendable {
    /// Messages flow both ways.
    case open
    /// We sent Close and await the peer's; received messages are still delivered.
    case closing
    /// Done: nothing more is sent or delivered.
    case closed
}
