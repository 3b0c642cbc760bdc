/// A request received by `HTTPServer`, with its whole body.
public struct HTTPServerRequest: Sendable {
    /// The request line and headers, exactly as received.
    public var head: HTTPRequestHead
    /// The body (Content-Length framed; chunked requests are refused).
    public var body: [UInt8]
    /// Numbers the server's connections from 1, so tests can see keep-alive reuse.
    public var connectionNumber: Int
    /// Which request this is on its connection, from 1.
    public var requestNumberOnConnection: Int
    /// The client's address.
    public var remoteAddress: SocketAddress
    /// The SNI name the client sent, if any.
    public var serverName: String?
}

/// An HTTP server on a `TCPListener`. With a TLS context (the test relay, tests): TLS, then
/// HTTP/2 when the client chose `h2` by ALPN (streams answered in any order, no WebSocket),
/// else HTTP/1.1; the context's ALPN list decides what is offered. Without one (the
/// daemon's metrics endpoint): plain HTTP/1.1. HTTP/1.1 requests are parsed by
/// `HTTPRequestParser`, with keep-alive and WebSocket upgrades.
///
/// Over HTTP/1.1, one request at a time per connection (no pipelining): after a request the connection
/// waits for its response before it parses the next one. It keeps reading meanwhile, so a
/// client that goes away while a long poll is parked is noticed (`onConnectionClosed`), and
/// it stops reading if the client sends more than `maxBytesWhileBusy` ahead.
public final class HTTPServer {
    /// Server settings.
    public struct Configuration: Sendable {
        /// Request limits; a body over `maxBodyBytes` gets 413.
        public var parserLimits: HTTPParserLimits
        /// TLS handshake deadline per connection.
        public var handshakeTimeout: Duration
        /// A connection with no request in progress is closed after this long.
        public var idleTimeout: Duration
        /// Bytes read ahead of the next request while one is in progress, before pausing.
        public var maxBytesWhileBusy: Int
        /// Connections held at once, handshakes included; more are reset as they come.
        public var maxConnections: Int
        /// What an HTTP/2 connection announces.
        var http2Settings = HTTP2Session.LocalSettings.front

        public init(
            parserLimits: HTTPParserLimits = HTTPParserLimits(), handshakeTimeout: Duration = .seconds(10),
            idleTimeout: Duration = .seconds(120), maxBytesWhileBusy: Int = 64 << 10, maxConnections: Int = 4096
        ) {
            self.parserLimits = parserLimits
            self.handshakeTimeout = handshakeTimeout
            self.idleTimeout = idleTimeout
            self.maxBytesWhileBusy = maxBytesWhileBusy
            self.maxConnections = maxConnections
        }
    }

    /// Called for each complete request; answer through the responder now or later.
    public typealias Handler = (HTTPServerRequest, HTTPResponder) -> Void

    /// The loop the server runs on.
    public let loop: EventLoop
    /// The settings in force.
    public let configuration: Configuration
    private let context: TLSContext?
    private let handler: Handler
    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: HTTPServerConnection] = [:]
    private var multiplexed: [ObjectIdentifier: HTTP2ServerConnection] = [:]
    private var handshaking: [ObjectIdentifier: TLSConnection] = [:]
    private var nextConnectionNumber = 1

    /// How many connections were taken on (with TLS: finished their handshake).
    public private(set) var connectionsAccepted = 0
    /// How many TLS handshakes failed (for tests of certificates and faults).
    public private(set) var failedHandshakes = 0

    private init(loop: EventLoop, context: TLSContext?, configuration: Configuration, handler: @escaping Handler) {
        self.loop = loop
        self.context = context
        self.configuration = configuration
        self.handler = handler
    }

    /// Listens on `address` and serves HTTPS with `context` (a server context), or plain
    /// HTTP/1.1 when `context` is nil.
    public static func start(
        on address: SocketAddress, context: TLSContext?, loop: EventLoop,
        configuration: Configuration = Configuration(), handler: @escaping Handler
    ) throws(NetError) -> HTTPServer {
        loop.preconditionInEventLoop()
        let server = HTTPServer(loop: loop, context: context, configuration: configuration, handler: handler)
        // The listener's registration keeps the server alive until `close()` or the loop stops.
        server.listener = try TCPListener.listen(on: address, loop: loop) { [server] tcp in
            server.accepted(tcp)
        }
        return server
    }

    /// The bound address (with the kernel's port when bound to port 0).
    public var localAddress: SocketAddress? { listener?.localAddress }

    /// Connections past the TLS handshake (if any) and still open.
    public var openConnectionCount: Int { connections.count + multiplexed.count }

    /// Sends GOAWAY on every HTTP/2 connection: their clients finish the streams already
    /// open and move the rest to new connections, as when a front restarts gracefully.
    public func goAwayHTTP2Connections() {
        loop.preconditionInEventLoop()
        for connection in multiplexed.values { connection.goAway() }
    }

    /// Stops listening and resets every connection.
    public func close() {
        loop.preconditionInEventLoop()
        listener?.close()
        listener = nil
        for tls in handshaking.values { tls.abort() }
        handshaking.removeAll()
        for connection in connections.values { connection.abort() }
        connections.removeAll()
        for connection in multiplexed.values { connection.abort() }
        multiplexed.removeAll()
    }

    private func accepted(_ tcp: TCPConnection) {
        guard handshaking.count + openConnectionCount < configuration.maxConnections else {
            tcp.abort()
            return
        }
        let number = nextConnectionNumber
        nextConnectionNumber += 1
        guard let context else {
            connectionsAccepted += 1
            let connection = HTTPServerConnection(server: self, transport: tcp, serverName: nil, number: number)
            connections[ObjectIdentifier(connection)] = connection
            return
        }
        do throws(TLSError) {
            var id: ObjectIdentifier?
            let tls = try TLSConnection.startServer(
                over: tcp, context: context, handshakeTimeout: configuration.handshakeTimeout
            ) { [weak self] result in
                guard let self else { return }
                if let id { handshaking[id] = nil }
                if case .success = result { connectionsAccepted += 1 }
                switch result {
                case .success(let tls) where tls.engine.negotiatedALPN == "h2":
                    do throws(HTTP2Error) {
                        let connection = try HTTP2ServerConnection(
                            server: self, transport: tls, serverName: tls.engine.requestedServerName, number: number,
                            settings: configuration.http2Settings)
                        multiplexed[ObjectIdentifier(connection)] = connection
                    } catch {
                        tls.abort()
                    }
                case .success(let tls):
                    let connection = HTTPServerConnection(
                        server: self, transport: tls, serverName: tls.engine.requestedServerName, number: number)
                    connections[ObjectIdentifier(connection)] = connection
                case .failure:
                    failedHandshakes += 1
                }
            }
            id = ObjectIdentifier(tls)
            handshaking[ObjectIdentifier(tls)] = tls
        } catch {
            failedHandshakes += 1
            tcp.abort()
        }
    }

    func handle(_ request: HTTPServerRequest, _ responder: HTTPResponder) {
        handler(request, responder)
    }

    func connectionClosed(_ connection: HTTPServerConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    func connectionClosed(_ connection: HTTP2ServerConnection) {
        multiplexed[ObjectIdentifier(connection)] = nil
    }
}
