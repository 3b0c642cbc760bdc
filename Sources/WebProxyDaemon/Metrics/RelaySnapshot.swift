import WebProxySession

/// One relay at one instant, taken on the loop thread: what `status` shows and what the
/// metrics endpoint exposes.
struct RelaySnapshot: Equatable, Sendable {
    var status: RelayStatusEntry
    var counters: RelayCounters
    /// Relay frames carried by the relay's sessions so far.
    var frames = FrameCounts()
    /// Bytes the daemon holds for the relay's streams, in all its sessions.
    var queued = QueuedBytes()
    /// TLS connections to the relay with a completed handshake, by use.
    var tlsConnections = TLSConnectionCounts()

    /// Answered HTTP requests per HTTP connection (0 before the first connection).
    var requestsPerConnection: Double {
        let requests = counters.requestSeconds.values.reduce(0) { $0 + $1.count }
        return tlsConnections.http == 0 ? 0 : Double(requests) / Double(tlsConnections.http)
    }
}

/// TLS connections opened to a relay: for HTTP requests and for WebSockets, and how many of
/// each resumed an earlier session.
struct TLSConnectionCounts: Equatable, Sendable {
    var http = 0
    var httpResumed = 0
    /// HTTP connections that negotiated h2.
    var http2 = 0
    var webSocket = 0
    var webSocketResumed = 0
    /// Open now: the HTTP client's (busy or idle) and the open WebSockets.
    var open = 0
}
