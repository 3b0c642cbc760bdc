import WebProxyCore

/// What the driver keeps for one local connection it carries.
struct LocalConnection: Sendable {
    /// The stream carrying it; nil until its first bytes on the shared-uplink and
    /// https-lanes carriers (a connection that never sends costs the relay nothing).
    var stream: StreamID?
    /// Bytes handed to the shell with `writeLocal` and not yet reported written.
    var writeQueued = 0
    /// Whether the shell is reading it (the last pause/resume sent).
    var reading: Bool
}

/// One WebSocket of the websocket carriers.
struct CarrierSocket: Sendable {
    enum Phase: Sendable {
        case connecting
        case open
    }

    let upgrade: WebSocketUpgrade
    /// The stream of a websocket-lanes lane; nil for the multiplexed socket.
    let lane: StreamID?
    var phase = Phase.connecting
    /// Bytes the shell still buffers for sending, as it last reported (plus what was sent since).
    var bufferedBytes = 0
    /// When the relay was last heard from (message or Pong).
    var lastHeard: MonotonicInstant
    /// Whether a Ping went out since `lastHeard`.
    var pinged = false
}
