/// What a server learns from a valid upgrade request.
public struct WebSocketUpgradeRequest: Hashable, Sendable {
    /// The `Sec-WebSocket-Key`, as sent.
    public var key: String
    /// The offered subprotocols, in order, as sent.
    public var subprotocols: [String]

    public init(key: String, subprotocols: [String]) {
        self.key = key
        self.subprotocols = subprotocols
    }
}
