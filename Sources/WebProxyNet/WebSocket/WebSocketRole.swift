/// Which end of a WebSocket this is: clients mask what they send, servers must not.
public enum WebSocketRole: Hashable, Sendable {
    case client
    case server
}
