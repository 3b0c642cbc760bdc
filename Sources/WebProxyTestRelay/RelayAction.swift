import WebProxyCore

/// The shell's handle for one client connection (for HTTP/2, one request stream). A parked
/// long poll or an upgraded WebSocket stays bound to it until the engine answers or drops it.
public struct RelayConnectionID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "connection \(rawValue)" }
}

/// An internal session number. Unlike the session token it is not secret.
public struct SessionID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public var description: String { "session \(rawValue)" }
}

/// One backend TCP connection: the stream `stream` of session `session`.
public struct BackendID: Hashable, Sendable, CustomStringConvertible {
    public var session: SessionID
    public var stream: StreamID
    public init(session: SessionID, stream: StreamID) {
        self.session = session
        self.stream = stream
    }
    public var description: String { "\(session) stream \(stream)" }
}

/// What the shell read from an upgraded WebSocket connection.
public enum WebSocketInbound: Sendable, Equatable {
    /// A complete binary message.
    case binary([UInt8])
    /// A text message (always a protocol error here; its content is not needed).
    case text
    /// A message whose announced length exceeds `maxBodyBytes` (not buffered by the shell).
    case tooLarge
    /// A Ping with its payload.
    case ping([UInt8])
    /// A Pong (refreshes the read deadline).
    case pong
    /// A Close frame from the client.
    case close
}

/// Something the shell must do.
public enum RelayAction: Sendable, Equatable {
    /// Write this HTTP response on the connection.
    case respond(RelayConnectionID, RelayResponse)
    /// Keep the request open; the engine answers it by `until` (after a `tick` at or after it).
    case park(RelayConnectionID, until: RelayInstant)
    /// Write this 101 response (plus `Sec-WebSocket-Accept`, `Upgrade` and `Connection`) and
    /// switch the connection to WebSocket.
    case acceptWebSocket(RelayConnectionID, RelayResponse)
    /// Fault injection: the request was applied, but reset the connection without answering.
    case resetConnection(RelayConnectionID)
    /// Send one binary WebSocket message.
    case sendMessage(RelayConnectionID, [UInt8])
    /// Send a WebSocket Ping with an empty payload.
    case sendPing(RelayConnectionID)
    /// Send a WebSocket Pong carrying `payload`.
    case sendPong(RelayConnectionID, [UInt8])
    /// Send a WebSocket Close with `code` (1000 or 1009), then close the TCP connection.
    case closeWebSocket(RelayConnectionID, code: UInt16)
    /// Close the TCP connection at once, with no WebSocket close frame.
    case dropConnection(RelayConnectionID)
    /// Open a TCP connection to the backend of profile `profile` for this stream.
    case dialBackend(BackendID, profile: Int)
    /// Write these bytes to the backend; report `backendDrained` as they reach the socket.
    case writeBackend(BackendID, [UInt8])
    /// Stop reading the backend (no credit toward the client, or no pending budget).
    case pauseBackend(BackendID)
    /// Read the backend again (at most `backendReadChunk` bytes per `backendReceived`).
    case resumeBackend(BackendID)
    /// Close the backend connection and forget it.
    case closeBackend(BackendID)

    public static func == (a: RelayAction, b: RelayAction) -> Bool {
        switch (a, b) {
        case (.respond(let c1, let r1), .respond(let c2, let r2)): c1 == c2 && r1 == r2
        case (.park(let c1, let t1), .park(let c2, let t2)): c1 == c2 && t1 == t2
        case (.acceptWebSocket(let c1, let r1), .acceptWebSocket(let c2, let r2)):
            c1 == c2 && r1 == r2
        case (.resetConnection(let c1), .resetConnection(let c2)): c1 == c2
        case (.sendMessage(let c1, let m1), .sendMessage(let c2, let m2)): c1 == c2 && m1 == m2
        case (.sendPing(let c1), .sendPing(let c2)): c1 == c2
        case (.sendPong(let c1, let p1), .sendPong(let c2, let p2)): c1 == c2 && p1 == p2
        case (.closeWebSocket(let c1, let k1), .closeWebSocket(let c2, let k2)):
            c1 == c2 && k1 == k2
        case (.dropConnection(let c1), .dropConnection(let c2)): c1 == c2
        case (.dialBackend(let b1, let p1), .dialBackend(let b2, let p2)): b1 == b2 && p1 == p2
        case (.writeBackend(let b1, let d1), .writeBackend(let b2, let d2)): b1 == b2 && d1 == d2
        case (.pauseBackend(let b1), .pauseBackend(let b2)): b1 == b2
        case (.resumeBackend(let b1), .resumeBackend(let b2)): b1 == b2
        case (.closeBackend(let b1), .closeBackend(let b2)): b1 == b2
        default: false
        }
    }

    /// The client connection this action ends, if it ends one.
    var endedConnection: RelayConnectionID? {
        switch self {
        case .respond(let c, _), .resetConnection(let c), .closeWebSocket(let c, _),
            .dropConnection(let c):
            c
        default: nil
        }
    }
}
