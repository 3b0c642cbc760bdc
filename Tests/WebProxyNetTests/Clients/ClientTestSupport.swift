import Testing

@testable import WebProxyNet

/// TLS contexts for client tests: a server presenting a leaf for `TLSFixture.relayName`
/// that selects HTTP/1.1 (`server`) or h2 (`http2Server`), a client trusting its authority,
/// and a client trusting another authority only.
struct ClientTLS: Sendable {
    let server: TLSContext
    let http2Server: TLSContext
    let client: TLSContext
    let untrustingClient: TLSContext

    init() throws {
        let fixture = try TLSFixture()
        var configuration = fixture.leaf.serverConfiguration
        configuration.alpnProtocols = ["http/1.1"]
        server = try TLSContext(server: configuration)
        configuration.alpnProtocols = ["h2", "http/1.1"]
        http2Server = try TLSContext(server: configuration)
        client = try fixture.clientContext()
        untrustingClient = try TLSContext(
            client: TLSConfiguration.Client(trust: .caPEM(fixture.otherAuthority.certificatePEM)))
    }
}

/// The relay's logical origin in these tests: a name the certificate holds, port 443, so
/// `Host` is the bare name while TCP goes to the loopback port (`connect-to`).
let testOrigin = DialTarget(host: TLSFixture.relayName, port: 443)!

/// Starts an HTTPS server on 127.0.0.1, port 0.
func startTestServer(
    on loop: EventLoop, context: TLSContext, configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
    handler: @escaping HTTPServer.Handler
) throws -> HTTPServer {
    try HTTPServer.start(
        on: .loopbackIPv4(port: 0), context: context, loop: loop, configuration: configuration, handler: handler)
}

/// The origin, dialled at the server's loopback port.
func endpoint(of server: HTTPServer, origin: DialTarget = testOrigin) -> SecureEndpoint {
    SecureEndpoint(origin: origin, connectTo: DialTarget(host: "127.0.0.1", port: server.localAddress!.port)!)
}

/// A client for `server` with a short dial timeout.
func makeClient(
    for server: HTTPServer, loop: EventLoop, resolver: Resolver, context: TLSContext,
    configuration: HTTPClient.Configuration = HTTPClient.Configuration(), proxy: UpstreamProxy? = nil
) -> HTTPClient {
    HTTPClient(
        endpoint: endpoint(of: server),
        dialer: SecureDialer(dialer: Dialer(proxy: proxy, timeout: .seconds(5)), context: context),
        resolver: resolver, loop: loop, configuration: configuration)
}

/// Runs `body` with a loop and a resolver, both stopped afterwards.
func withLoopAndResolver<T>(_ body: (EventLoop, Resolver) async throws -> T) async throws -> T {
    let resolver = try Resolver()
    defer { resolver.shutdown() }
    return try await withLoop { loop in try await body(loop, resolver) }
}

/// A 200 response with `body`.
func ok(_ body: String, headers: HTTPHeaders = HTTPHeaders()) -> (HTTPResponseHead, [UInt8]) {
    (HTTPResponseHead(status: 200, reason: "OK", headers: headers), Array(body.utf8))
}

/// What a WebSocket endpoint reported, recorded on the loop.
final class WebSocketRecorder: WebSocketEndpointDelegate {
    var messages: [[UInt8]] = []
    var pongs: [[UInt8]] = []
    var drained = 0
    var outcome: WebSocketCloseOutcome?
    var onMessage: ((WebSocketEndpoint, [UInt8]) -> Void)?
    var onPong: ((WebSocketEndpoint, [UInt8]) -> Void)?
    var onClose: ((WebSocketCloseOutcome) -> Void)?
    var onDrain: ((WebSocketEndpoint) -> Void)?

    func webSocket(_ endpoint: WebSocketEndpoint, didReceive message: [UInt8]) {
        messages.append(message)
        onMessage?(endpoint, message)
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didReceivePong payload: [UInt8]) {
        pongs.append(payload)
        onPong?(endpoint, payload)
    }

    func webSocketDidDrain(_ endpoint: WebSocketEndpoint) {
        drained += 1
        onDrain?(endpoint)
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didCloseWith outcome: WebSocketCloseOutcome) {
        self.outcome = outcome
        onClose?(outcome)
    }
}

/// A server WebSocket that echoes every message; "drop" drops TCP without a Close frame.
final class EchoWebSocket: WebSocketEndpointDelegate {
    var outcome: WebSocketCloseOutcome?
    var onClose: ((WebSocketCloseOutcome) -> Void)?

    func webSocket(_ endpoint: WebSocketEndpoint, didReceive message: [UInt8]) {
        if message == Array("drop".utf8) {
            endpoint.dropConnection()
            return
        }
        try? endpoint.send(message)
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didCloseWith outcome: WebSocketCloseOutcome) {
        self.outcome = outcome
        onClose?(outcome)
    }
}

/// Upgrades requests for `/ws` offering `subprotocol` (echoing `echoedSubprotocol`), answers
/// 404 otherwise; upgraded endpoints echo.
func webSocketEchoHandler(
    subprotocol: String = "relay.v1", echoedSubprotocol: String? = nil,
    serverSide: @escaping (EchoWebSocket) -> Void = { _ in }
) -> HTTPServer.Handler {
    { request, responder in
        guard request.head.target == "/ws",
            let upgrade = try? WebSocketHandshake.validateUpgradeRequest(request.head),
            upgrade.subprotocols == [subprotocol]
        else {
            responder.respond(
                HTTPResponseHead(status: 404, reason: "Not Found", headers: [("X-Reason", "no such path")]),
                body: Array("not here".utf8))
            return
        }
        let response = WebSocketHandshake.upgradeResponse(
            key: upgrade.key, subprotocol: echoedSubprotocol ?? subprotocol)
        guard let endpoint = responder.upgradeToWebSocket(response101: response, maxMessageBytes: 8 << 20) else {
            return
        }
        let echo = EchoWebSocket()
        endpoint.delegate = echo
        serverSide(echo)
    }
}

/// A loopback port nothing listens on: bound by the kernel's choice, then released.
func closedLoopbackPort() throws -> UInt16 {
    let fd = try Syscall.tcpSocket(SocketAddress.loopbackIPv4(port: 0).addressFamily)
    defer { Syscall.close(fd) }
    try Syscall.bind(fd, to: .loopbackIPv4(port: 0))
    return try Syscall.localAddress(fd).port
}

/// Runs `then` on the loop once `condition` holds, checking every 10 ms; the caller's
/// `onLoop` timeout bounds the wait.
func when(_ loop: EventLoop, _ condition: @escaping () -> Bool, then: @escaping () -> Void) {
    if condition() { return then() }
    _ = loop.scheduleTimer(after: .milliseconds(10)) { when(loop, condition, then: then) }
}
