/// Why a WebSocket upgrade request or response is refused. Descriptions never include
/// header values (the subprotocol carries a session token).
public struct WebSocketHandshakeError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable, Sendable {
        case unexpectedStatus, missingUpgrade, missingConnectionUpgrade, acceptMismatch
        case subprotocolMismatch, unexpectedExtensions
        case methodNotGET, httpVersionTooOld, unsupportedWebSocketVersion, invalidKey
        case requestHasBody, invalidSubprotocol
    }

    let code: Code

    private init(_ code: Code) { self.code = code }

    /// The response status is not 101.
    public static let unexpectedStatus = WebSocketHandshakeError(.unexpectedStatus)
    /// No `Upgrade: websocket`.
    public static let missingUpgrade = WebSocketHandshakeError(.missingUpgrade)
    /// No `upgrade` token in `Connection`.
    public static let missingConnectionUpgrade = WebSocketHandshakeError(.missingConnectionUpgrade)
    /// `Sec-WebSocket-Accept` missing, repeated, or not derived from our key.
    public static let acceptMismatch = WebSocketHandshakeError(.acceptMismatch)
    /// The server did not echo exactly the one subprotocol offered.
    public static let subprotocolMismatch = WebSocketHandshakeError(.subprotocolMismatch)
    /// The server accepted extensions, but none were offered.
    public static let unexpectedExtensions = WebSocketHandshakeError(.unexpectedExtensions)
    /// The upgrade request is not a GET.
    public static let methodNotGET = WebSocketHandshakeError(.methodNotGET)
    /// The upgrade request is HTTP/1.0.
    public static let httpVersionTooOld = WebSocketHandshakeError(.httpVersionTooOld)
    /// `Sec-WebSocket-Version` is not exactly one `13`.
    public static let unsupportedWebSocketVersion = WebSocketHandshakeError(.unsupportedWebSocketVersion)
    /// `Sec-WebSocket-Key` is not exactly one base64 encoding of 16 bytes.
    public static let invalidKey = WebSocketHandshakeError(.invalidKey)
    /// The upgrade request declares a body.
    public static let requestHasBody = WebSocketHandshakeError(.requestHasBody)
    /// An offered subprotocol is not a token.
    public static let invalidSubprotocol = WebSocketHandshakeError(.invalidSubprotocol)

    public var description: String {
        switch code {
        case .unexpectedStatus: "WebSocket upgrade: status is not 101"
        case .missingUpgrade: "WebSocket upgrade: no Upgrade: websocket"
        case .missingConnectionUpgrade: "WebSocket upgrade: Connection lacks upgrade"
        case .acceptMismatch: "WebSocket upgrade: Sec-WebSocket-Accept does not match the key"
        case .subprotocolMismatch: "WebSocket upgrade: the offered subprotocol was not echoed exactly"
        case .unexpectedExtensions: "WebSocket upgrade: server accepted extensions that were not offered"
        case .methodNotGET: "WebSocket upgrade: method is not GET"
        case .httpVersionTooOld: "WebSocket upgrade: HTTP/1.1 required"
        case .unsupportedWebSocketVersion: "WebSocket upgrade: Sec-WebSocket-Version is not 13"
        case .invalidKey: "WebSocket upgrade: invalid Sec-WebSocket-Key"
        case .requestHasBody: "WebSocket upgrade: request has a body"
        case .invalidSubprotocol: "WebSocket upgrade: invalid subprotocol"
        }
    }
}
