import WebProxyNet

/// The Prometheus endpoint: plain HTTP/1.1 on the `[daemon] metrics` address, on the
/// daemon's loop. One request per connection (`Connection: close`); `GET /metrics` gets
/// the text, anything else 404/405/400, a head over 8 KiB 431, and a client that sends no
/// complete head within `requestTimeout` is dropped. Every method runs on the loop thread.
final class MetricsServer {
    /// How long a client may take to send its request head.
    static let requestTimeout = Duration.seconds(10)
    /// At most this many clients at once; more are closed at once.
    static let maxConnections = 16

    private var listener: TCPListener?
    private let clients: OneShotClients<MetricsRequestReader>

    /// Listens on `address`; `render` produces the metrics text when asked.
    init(address: SocketAddress, loop: EventLoop, render: @escaping () -> String) throws(NetError) {
        clients = OneShotClients(loop: loop, maxClients: Self.maxConnections, deadline: Self.requestTimeout) {
            MetricsRequestReader(render: render)
        }
        listener = try TCPListener.listen(on: address, loop: loop, backlog: 16) { [weak self] tcp in
            self?.clients.accept(tcp)
        }
    }

    /// The bound address (with the kernel's port when bound to port 0).
    var localAddress: SocketAddress? { listener?.localAddress }

    /// Stops listening and drops every client.
    func close() {
        listener?.close()
        listener = nil
        clients.abortAll()
    }
}

/// One metrics client's request head, judged by `MetricsRequest.Reader` and answered.
private struct MetricsRequestReader: OneShotRequestReader {
    let render: () -> String
    var reader = MetricsRequest.Reader()

    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        // Bounded: the parser stops at the head limit, and the first judgement ends reading.
        reader.receive(bytes).map(response)
    }

    /// A client that ends before a whole head gets no answer.
    mutating func receiveEnd() -> [UInt8]? { nil }

    private func response(_ request: MetricsRequest) -> [UInt8] {
        switch request {
        case .metrics:
            MetricsRequest.response(status: 200, reason: "OK", contentType: PrometheusText.contentType, body: render())
        case .notFound:
            MetricsRequest.response(status: 404, reason: "Not Found", contentType: "text/plain", body: "try /metrics\n")
        case .methodNotAllowed:
            MetricsRequest.response(
                status: 405, reason: "Method Not Allowed", contentType: "text/plain", body: "only GET\n")
        case .badRequest:
            MetricsRequest.response(status: 400, reason: "Bad Request", contentType: "text/plain", body: "bad request\n")
        case .headTooLarge:
            MetricsRequest.response(
                status: 431, reason: "Request Header Fields Too Large", contentType: "text/plain",
                body: "request head too large\n")
        }
    }
}
