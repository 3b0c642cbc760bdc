import WebProxyNet
import WebProxySession

/// The shell's side of one WebSocket of the websocket carriers: the upgrade attempt, then
/// the open endpoint, reporting messages, Pongs, drains and the end to the relay service.
final class CarrierWebSocket: WebSocketEndpointDelegate {
    let id: SocketID
    /// The session the socket carries.
    let role: SessionRole
    private weak var owner: RelayService?
    /// The upgrade in progress.
    var attempt: WebSocketClient?
    /// The open socket.
    var endpoint: WebSocketEndpoint?

    init(id: SocketID, role: SessionRole, owner: RelayService) {
        self.id = id
        self.role = role
        self.owner = owner
    }

    /// Ends the socket without reporting anything (the session asked for it).
    func close() {
        attempt?.cancel()
        attempt = nil
        if let endpoint {
            endpoint.delegate = nil
            endpoint.close()
        }
        endpoint = nil
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didReceive message: [UInt8]) {
        owner?.socketEvent(.webSocketMessage(id, message), role)
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didReceivePong payload: [UInt8]) {
        owner?.socketEvent(.webSocketPong(id), role)
    }

    func webSocketDidDrain(_ endpoint: WebSocketEndpoint) {
        owner?.socketEvent(.webSocketDrained(id, bufferedBytes: endpoint.bufferedByteCount), role)
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didCloseWith outcome: WebSocketCloseOutcome) {
        self.endpoint = nil
        let clean = if case .clean = outcome { true } else { false }
        owner?.socketEnded(id, clean: clean)
    }
}
