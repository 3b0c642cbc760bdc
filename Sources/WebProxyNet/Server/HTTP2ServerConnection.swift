/// One accepted HTTPS connection of an `HTTPServer` whose client chose h2: every stream is a
/// request handed to the server's handler with a responder, answered in any order. It
/// announces what a Go front such as Caddy does (250 streams, 1 MiB stream windows).
final class HTTP2ServerConnection: ByteStreamDelegate {
    /// A request being received, then waiting for its answer.
    private struct Exchange {
        var fields: [HTTPField] = []
        var bodyTooLarge = false
        var responder: HTTPResponder?
        /// Held here: the responder keeps only a weak reference to it.
        var stream: Stream?
    }

    /// The responder's view of one stream.
    final class Stream: HTTPResponseSink {
        private weak var connection: HTTP2ServerConnection?
        let id: Int32

        init(connection: HTTP2ServerConnection, id: Int32) {
            self.connection = connection
            self.id = id
        }

        var isOpen: Bool { connection?.isOpen(id) ?? false }

        func send(_ head: HTTPResponseHead, body: [UInt8]?, keepAlive: Bool) -> Bool {
            connection?.respond(id, head, body: body) ?? false
        }

        func sendRaw(_ bytes: [UInt8], keepAlive: Bool) { connection?.reset(id, HTTP2Session.ErrorCode.protocolError) }

        func upgrade(sending head: HTTPResponseHead, maxMessageBytes: Int, closeTimeout: Duration) -> WebSocketEndpoint? {
            connection?.reset(id, HTTP2Session.ErrorCode.protocolError)
            return nil
        }

        func abort() { connection?.reset(id, HTTP2Session.ErrorCode.internalError) }

        func drop() { connection?.reset(id, HTTP2Session.ErrorCode.cancel) }
    }

    private weak var server: HTTPServer?
    private let transport: any ByteStream
    private let number: Int
    private let serverName: String?
    private let session: HTTP2Session
    private var exchanges: [Int32: Exchange] = [:]
    private var requestCount = 0
    private var idleTimer: TimerID?

    /// Frames taken from the session per write.
    private static let writeChunk = 64 * 1024

    init(
        server: HTTPServer, transport: any ByteStream, serverName: String?, number: Int,
        settings: HTTP2Session.LocalSettings
    ) throws(HTTP2Error) {
        self.server = server
        self.transport = transport
        self.serverName = serverName
        self.number = number
        session = try HTTP2Session(role: .server, settings: settings)
        transport.delegate = self
        flush()
        startIdleTimer()
    }

    func abort() { transport.abort() }

    /// Says GOAWAY: the client may finish its open streams and must open new ones elsewhere.
    func goAway() {
        session.goAway()
        flush()
    }

    fileprivate func isOpen(_ id: Int32) -> Bool { transport.isOpen && exchanges[id]?.responder != nil }

    fileprivate func respond(_ id: Int32, _ head: HTTPResponseHead, body: [UInt8]?) -> Bool {
        guard exchanges[id]?.responder != nil, (100...599).contains(head.status) else { return false }
        var fields = [HTTPField(name: ":status", value: String(head.status))]
        for field in head.headers {
            let name = field.name.lowercased()
            guard !HTTP2Session.connectionSpecificFields.contains(name) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        if let body, !head.headers.contains("Content-Length") {
            fields.append(HTTPField(name: "content-length", value: String(body.count)))
        }
        guard session.submitResponse(stream: id, fields: fields, body: body) else { return false }
        exchanges[id] = nil
        flush()
        startIdleTimerIfQuiet()
        return true
    }

    fileprivate func reset(_ id: Int32, _ code: UInt32) {
        exchanges[id] = nil
        session.reset(stream: id, errorCode: code)
        flush()
        startIdleTimerIfQuiet()
    }

    // MARK: events

    private func handle(_ event: HTTP2Session.Event) {
        switch event {
        case .headers(let id, let fields):
            guard exchanges[id] == nil else { return }  // trailers
            cancelIdleTimer()
            exchanges[id] = Exchange(fields: fields)
        case .data(let id, _):
            let limit = server?.configuration.parserLimits.maxBodyBytes ?? 0
            guard let exchange = exchanges[id], exchange.responder == nil, !exchange.bodyTooLarge,
                session.receivedBodyCount(of: id) <= limit
            else {
                // Not wanted (answered already, or past the limit): dropped as it comes.
                if exchanges[id]?.responder == nil { exchanges[id]?.bodyTooLarge = true }
                session.takeReceivedBody(of: id)
                return
            }
        case .endStream(let id):
            deliver(id)
        case .streamClosed(let id, _):
            session.takeReceivedBody(of: id)
            guard let exchange = exchanges.removeValue(forKey: id) else { return }
            exchange.responder?.connectionDidClose()
            startIdleTimerIfQuiet()
        case .goAway, .pingAcknowledged, .settings:
            break
        }
    }

    private func deliver(_ id: Int32) {
        guard let exchange = exchanges[id], exchange.responder == nil, let server else { return }
        let stream = Stream(connection: self, id: id)
        let responder = HTTPResponder(connection: stream, requestKeepAlive: true, webSocketKey: nil)
        exchanges[id]?.responder = responder
        exchanges[id]?.stream = stream
        let body = session.takeReceivedBody(of: id)
        let pseudo = { (name: String) in exchange.fields.first { $0.name == name }?.value }
        guard let method = pseudo(":method"), let path = pseudo(":path") else {
            responder.respond(HTTPResponseHead(status: 400, reason: "Bad Request"), body: [])
            return
        }
        if exchange.bodyTooLarge {
            responder.respond(HTTPResponseHead(status: 413, reason: "Content Too Large"), body: [])
            return
        }
        var headers = HTTPHeaders(exchange.fields.filter { !$0.name.hasPrefix(":") })
        if let authority = pseudo(":authority") {
            headers = HTTPHeaders([HTTPField(name: "host", value: authority)] + headers.fields)
        }
        requestCount += 1
        let request = HTTPServerRequest(
            head: HTTPRequestHead(method: method, target: path, version: .http2, headers: headers),
            body: body, connectionNumber: number, requestNumberOnConnection: requestCount,
            remoteAddress: transport.remoteAddress, serverName: serverName)
        server.handle(request, responder)
    }

    // MARK: timers

    private func startIdleTimerIfQuiet() {
        if exchanges.isEmpty { startIdleTimer() }
    }

    private func startIdleTimer() {
        cancelIdleTimer()
        guard let timeout = server?.configuration.idleTimeout else { return }
        idleTimer = transport.loop.scheduleTimer(after: timeout) { [weak self] in
            guard let self else { return }
            idleTimer = nil
            guard exchanges.isEmpty else { return }
            session.goAway()
            flush()
            transport.close()
        }
    }

    private func cancelIdleTimer() {
        if let idleTimer { transport.loop.cancelTimer(idleTimer) }
        idleTimer = nil
    }

    // MARK: ByteStreamDelegate

    private func flush() {
        while transport.isWritable {
            let bytes = session.takeOutput(limit: Self.writeChunk)
            guard !bytes.isEmpty else { break }
            guard (try? transport.write(bytes)) != nil else {
                transport.abort()
                return
            }
        }
    }

    func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        do throws(HTTP2Error) {
            try session.receive(plaintext)
        } catch {
            flush()
            transport.close()
            return
        }
        for event in session.takeEvents() { handle(event) }
        flush()
        if !session.isAlive { transport.close() }
    }

    func streamDidBecomeWritable(_ connection: any ByteStream) {
        flush()
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        transport.close()
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        cancelIdleTimer()
        let waiting = exchanges.values.compactMap(\.responder)
        exchanges.removeAll()
        for responder in waiting { responder.connectionDidClose() }
        server?.connectionClosed(self)
    }
}
