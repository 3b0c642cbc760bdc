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

    private let loop: EventLoop
    private let render: () -> String
    private var listener: TCPListener?
    private var clients: [ObjectIdentifier: MetricsClient] = [:]

    /// Listens on `address`; `render` produces the metrics text when asked.
    init(address: SocketAddress, loop: EventLoop, render: @escaping () -> String) throws(NetError) {
        self.loop = loop
        self.render = render
        listener = try TCPListener.listen(on: address, loop: loop, backlog: 16) { [weak self] tcp in
            self?.accepted(tcp)
        }
    }

    /// The bound address (with the kernel's port when bound to port 0).
    var localAddress: SocketAddress? { listener?.localAddress }

    /// Stops listening and drops every client.
    func close() {
        listener?.close()
        listener = nil
        for client in clients.values { client.tcp.abort() }
        clients = [:]
    }

    private func accepted(_ tcp: TCPConnection) {
        guard clients.count < Self.maxConnections else {
            tcp.abort()
            return
        }
        let client = MetricsClient(tcp: tcp, server: self)
        clients[ObjectIdentifier(client)] = client
        let timer = loop.scheduleTimer(after: Self.requestTimeout) { [weak self, weak client] in
            guard let client else { return }
            client.cancelTimeout = nil
            client.tcp.abort()
            self?.finished(client)
        }
        client.cancelTimeout = { [loop] in loop.cancelTimer(timer) }
        tcp.delegate = client
    }

    fileprivate func answer(_ request: MetricsRequest, to client: MetricsClient) {
        let response: [UInt8] =
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
        client.tcp.pauseReading()
        do {
            try client.tcp.write(response)
            client.tcp.close()
        } catch {
            client.tcp.abort()
        }
    }

    fileprivate func finished(_ client: MetricsClient) {
        client.cancelTimeout?()
        client.cancelTimeout = nil
        clients[ObjectIdentifier(client)] = nil
    }
}

/// One metrics client's connection and the request head it has sent so far.
private final class MetricsClient: TCPConnectionDelegate {
    let tcp: TCPConnection
    weak var server: MetricsServer?
    var reader = MetricsRequest.Reader()
    /// Cancels the request deadline.
    var cancelTimeout: (() -> Void)?
    var answered = false

    init(tcp: TCPConnection, server: MetricsServer) {
        self.tcp = tcp
        self.server = server
    }

    func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }
        // Bounded: a read is at most one loop chunk, and the first judgement ends reading.
        guard let request = reader.receive(bytes) else { return }
        answered = true
        server?.answer(request, to: self)
    }

    func connectionDidReadEOF(_ connection: TCPConnection) {
        if !answered { connection.close() }
    }

    func connection(_ connection: TCPConnection, didCloseWith error: NetError?) {
        server?.finished(self)
    }
}
