import WebProxyNet

/// The Prometheus endpoint: plain HTTP/1.1 on the `[daemon] metrics` address, served by
/// the one `HTTPServer` on the daemon's loop. One request per connection
/// (`Connection: close`); `GET /metrics` gets the text and anything else 404 or 405. The
/// server answers a malformed head 400, a head over 8 KiB 431 and a body 413, and drops a
/// client that sends no complete head within `requestTimeout`. Every method runs on the
/// loop thread.
final class MetricsServer {
    /// How long a client may take to send its request head.
    static let requestTimeout = Duration.seconds(10)
    /// At most this many clients at once; more are reset at once.
    static let maxConnections = 16
    /// The most bytes of request head read before answering 431.
    static let maxHeadBytes = 8 << 10

    private let server: HTTPServer

    /// Listens on `address`; `render` produces the metrics text when asked.
    init(address: SocketAddress, loop: EventLoop, render: @escaping () -> String) throws(NetError) {
        let configuration = HTTPServer.Configuration(
            parserLimits: HTTPParserLimits(maxHeadBytes: Self.maxHeadBytes, maxBodyBytes: 0),
            idleTimeout: Self.requestTimeout, maxConnections: Self.maxConnections)
        server = try HTTPServer.start(on: address, context: nil, loop: loop, configuration: configuration) {
            request, responder in
            let (head, body) = MetricsRequest(request.head).response(render: render)
            responder.respond(head, body: Array(body.utf8))
        }
    }

    /// The bound address (with the kernel's port when bound to port 0).
    var localAddress: SocketAddress? { server.localAddress }

    /// Stops listening and drops every client.
    func close() {
        server.close()
    }
}

/// What a metrics client asked for, judged from its request head. Pure, so every head is
/// testable without sockets.
enum MetricsRequest: Equatable, Sendable {
    /// `GET /metrics` (a query string is ignored).
    case metrics
    /// Another path: 404.
    case notFound
    /// Another method: 405.
    case methodNotAllowed

    init(_ head: HTTPRequestHead) {
        let path = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        if head.method != "GET" {
            self = .methodNotAllowed
        } else {
            self = path == "/metrics" ? .metrics : .notFound
        }
    }

    /// The response head (`Connection: close`) and body; `render` is called for `.metrics`.
    func response(render: () -> String) -> (HTTPResponseHead, String) {
        let (status, reason, contentType, body) =
            switch self {
            case .metrics: (200, "OK", PrometheusText.contentType, render())
            case .notFound: (404, "Not Found", "text/plain", "try /metrics\n")
            case .methodNotAllowed: (405, "Method Not Allowed", "text/plain", "only GET\n")
            }
        let head = HTTPResponseHead(
            status: status, reason: reason, headers: [("Content-Type", contentType), ("Connection", "close")])
        return (head, body)
    }
}
