/// One accepted HTTP/1.1 connection of an `HTTPServer` (over TLS or not): parses requests
/// one at a time and hands each to the server's handler with a responder.
final class HTTPServerConnection: ByteStreamDelegate, HTTPResponseSink {
    private weak var server: HTTPServer?
    private let transport: any ByteStream
    private let number: Int
    private let serverName: String?
    private var parser: HTTPRequestParser
    private var requestCount = 0
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var responder: HTTPResponder?
    private var bytesWhileBusy = 0
    private var idleTimer: TimerID?
    private var processing = false
    private var handedOver = false
    private var outgoing: [UInt8] = []
    private var outgoingOffset = 0
    private var keepAliveAfterResponse = false

    /// Response bytes handed to the stream per write while it accepts them.
    private static let writeChunk = 64 * 1024

    init(server: HTTPServer, transport: any ByteStream, serverName: String?, number: Int) {
        self.server = server
        self.transport = transport
        self.serverName = serverName
        self.number = number
        parser = HTTPRequestParser(limits: server.configuration.parserLimits)
        transport.delegate = self
        startIdleTimer()
    }

    var isOpen: Bool { transport.isOpen && !handedOver }

    /// A request is waiting for its answer or the answer is still being written.
    private var isBusy: Bool { responder != nil || !outgoing.isEmpty }

    func abort() { transport.abort() }

    func drop() { transport.drop() }

    // MARK: requests

    private func processRequests() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        do throws(HTTPError) {
            while !isBusy, !handedOver, transport.isOpen, let event = try parser.next() {
                switch event {
                case .head(let received):
                    cancelIdleTimer()
                    head = received
                    body = []
                case .body(let slice):
                    body.append(contentsOf: slice)
                case .end(let keepAlive):
                    deliver(keepAlive: keepAlive)
                }
            }
        } catch {
            refuse(error)
        }
    }

    private func deliver(keepAlive: Bool) {
        guard let head, let server else { return }
        self.head = nil
        requestCount += 1
        bytesWhileBusy = 0
        let upgradeKey = (try? WebSocketHandshake.validateUpgradeRequest(head))?.key
        let responder = HTTPResponder(connection: self, requestKeepAlive: keepAlive, webSocketKey: upgradeKey)
        self.responder = responder
        let request = HTTPServerRequest(
            head: head, body: body, connectionNumber: number, requestNumberOnConnection: requestCount,
            remoteAddress: transport.remoteAddress, serverName: serverName)
        body = []
        server.handle(request, responder)
    }

    /// Answers a request the parser refused, then closes.
    private func refuse(_ error: HTTPError) {
        let (status, reason) =
            switch error {
            case .bodyTooLarge: (413, "Content Too Large")
            case .headTooLarge, .tooManyHeaders: (431, "Request Header Fields Too Large")
            default: (400, "Bad Request")
            }
        let head = HTTPResponseHead(status: status, reason: reason, headers: [("Connection", "close")])
        if let bytes = try? head.encoded(body: []) { try? transport.write(bytes) }
        transport.close()
    }

    func send(_ head: HTTPResponseHead, body: [UInt8]?, keepAlive: Bool) -> Bool {
        var bytes: [UInt8] = []
        guard (try? head.encode(into: &bytes, bodyLength: body?.count)) != nil else { return false }
        if let body { bytes.append(contentsOf: body) }
        sendRaw(bytes, keepAlive: keepAlive)
        return true
    }

    /// Writes a response in pieces as the stream accepts them (a body may exceed the write queue
    /// limit), then reads the next request or closes.
    func sendRaw(_ bytes: [UInt8], keepAlive: Bool) {
        responder = nil
        outgoing = bytes
        outgoingOffset = 0
        keepAliveAfterResponse = keepAlive
        continueResponse()
    }

    private func continueResponse() {
        while outgoingOffset < outgoing.count && transport.isWritable {
            let end = min(outgoing.count, outgoingOffset + Self.writeChunk)
            let outcome = outgoing.withUnsafeBytes { raw in
                Result { () throws(TransportError) in
                    try transport.write(UnsafeRawBufferPointer(rebasing: raw[outgoingOffset..<end]))
                }
            }
            guard case .success = outcome else {
                transport.abort()
                return
            }
            outgoingOffset = end
        }
        guard outgoingOffset == outgoing.count else { return }
        outgoing = []
        outgoingOffset = 0
        guard keepAliveAfterResponse else {
            transport.close()
            return
        }
        transport.resumeReading()
        startIdleTimer()
        processRequests()
    }

    func upgrade(sending head: HTTPResponseHead, maxMessageBytes: Int, closeTimeout: Duration) -> WebSocketEndpoint? {
        responder = nil
        cancelIdleTimer()
        guard let bytes = try? head.encoded(body: nil), (try? transport.write(bytes)) != nil else {
            transport.abort()
            return nil
        }
        handedOver = true
        server?.connectionClosed(self)
        return WebSocketEndpoint(
            transport: transport, machine: WebSocketConnection(serverWithMaxMessageBytes: maxMessageBytes),
            leftover: parser.takeUnparsedBytes(), closeTimeout: closeTimeout)
    }

    private func startIdleTimer() {
        cancelIdleTimer()
        guard let timeout = server?.configuration.idleTimeout else { return }
        idleTimer = transport.loop.scheduleTimer(after: timeout) { [self] in
            idleTimer = nil
            if !isBusy { transport.close() }
        }
    }

    private func cancelIdleTimer() {
        if let idleTimer { transport.loop.cancelTimer(idleTimer) }
        idleTimer = nil
    }

    // MARK: ByteStreamDelegate

    func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        parser.receive(Array(plaintext))
        if isBusy {
            bytesWhileBusy += plaintext.count
            if bytesWhileBusy > (server?.configuration.maxBytesWhileBusy ?? 0) { transport.pauseReading() }
            return
        }
        processRequests()
    }

    func streamDidBecomeWritable(_ connection: any ByteStream) {
        if !outgoing.isEmpty { continueResponse() }
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        // The client is gone: a parked request hears of it through the close.
        if !isBusy {
            parser.receiveEndOfStream()
            processRequests()
        }
        transport.close()
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        cancelIdleTimer()
        let responder = self.responder
        self.responder = nil
        responder?.connectionDidClose()
        server?.connectionClosed(self)
    }
}
