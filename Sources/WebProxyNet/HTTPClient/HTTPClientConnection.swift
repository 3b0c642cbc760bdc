/// One pooled keep-alive connection of an `HTTPClient`: sends one request at a time and
/// parses its response with `HTTPResponseParser`.
final class HTTPClientConnection: ByteStreamDelegate, HTTPRequestCarrier {
    private weak var client: HTTPClient?
    private let transport: any ByteStream
    private var parser: HTTPResponseParser
    /// The request in flight, if any.
    private(set) var current: HTTPClientTask?
    /// Whether any byte of the current response arrived.
    private(set) var sawResponseBytes = false
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    /// The current response's body cap.
    private var maxBodyBytes = 0
    /// The current request's head until it is written; it goes with the body's first chunk.
    private var unsentHead: [UInt8] = []
    private var requestBody: [UInt8] = []
    private var requestBodySent = 0
    private var idleTimer: TimerID?
    /// The request's `silenceTimeout` at work.
    private var silenceWatch: PathSilenceWatch?
    private var isClosed = false

    /// Request bytes handed to the stream per write while it accepts them.
    private static let writeChunk = 64 * 1024

    init(client: HTTPClient, transport: any ByteStream, limits: HTTPParserLimits) {
        self.client = client
        self.transport = transport
        self.parser = HTTPResponseParser(limits: limits)
        transport.delegate = self
    }

    /// Sends `task`'s request.
    func start(_ task: HTTPClientTask) {
        cancelIdleTimer()
        current = task
        task.carrier = self
        sawResponseBytes = false
        head = nil
        body = []
        parser.expectResponse(toMethod: task.request.method, maxBodyBytes: task.request.maxResponseBodyBytes)
        maxBodyBytes = task.request.maxResponseBodyBytes ?? parser.limits.maxBodyBytes
        unsentHead = task.encodedHead
        requestBody = task.request.body ?? []
        requestBodySent = 0
        if let bound = task.request.silenceTimeout {
            silenceWatch = PathSilenceWatch(loop: transport.loop, bound: bound, progress: { [transport] in transport.pathProgress }) {
                [weak self] in
                guard let self, self.current != nil else { return }
                self.silenceWatch = nil
                self.client?.wentSilent(self, for: bound)
            }
        }
        sendOutgoing()
    }

    private func stopSilenceWatch() {
        silenceWatch?.stop()
        silenceWatch = nil
    }

    func startIdleTimer(_ timeout: Duration) {
        cancelIdleTimer()
        idleTimer = transport.loop.scheduleTimer(after: timeout) { [self] in
            idleTimer = nil
            transport.close()
        }
    }

    func sawResponseBytes(of task: HTTPClientTask) -> Bool { sawResponseBytes }

    /// HTTP/1.1 cannot take a request back: the connection is reset.
    func drop(_ task: HTTPClientTask) { abandon() }

    /// Drops the current request without completing it and resets the connection.
    func abandon() {
        current = nil
        stopSilenceWatch()
        cancelIdleTimer()
        transport.abort()
    }

    private func cancelIdleTimer() {
        if let idleTimer { transport.loop.cancelTimer(idleTimer) }
        idleTimer = nil
    }

    private var requestIsSent: Bool { unsentHead.isEmpty && requestBodySent == requestBody.count }

    /// Writes the request while the stream takes it, in chunks, so that a large body waits
    /// here rather than in the stream's queue. The body is written from the request's own
    /// array, never joined to the head.
    private func sendOutgoing() {
        while !requestIsSent && transport.isWritable {
            let end = min(requestBody.count, requestBodySent + Self.writeChunk)
            let outcome = requestBody.withUnsafeBytes { raw in
                Result { () throws(TransportError) in
                    try transport.write(unsentHead, UnsafeRawBufferPointer(rebasing: raw[requestBodySent..<end]))
                }
            }
            if case .failure(let error) = outcome {
                fail(HTTPClientError(.noResponse, "the request could not be sent", transport: error))
                return
            }
            unsentHead = []
            requestBodySent = end
        }
        if requestIsSent {
            requestBody = []
            requestBodySent = 0
        }
    }

    // MARK: ByteStreamDelegate

    func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        guard current != nil else {
            // Bytes nobody asked for: the connection cannot be trusted to frame responses.
            transport.abort()
            return
        }
        sawResponseBytes = true
        parser.receive(Array(plaintext))
        drainParser()
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        guard current != nil else {
            transport.close()
            return
        }
        parser.receiveEndOfStream()
        drainParser()
        transport.close()
    }

    func streamDidBecomeWritable(_ connection: any ByteStream) {
        if current != nil { sendOutgoing() }
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        isClosed = true
        cancelIdleTimer()
        stopSilenceWatch()
        if let task = current {
            current = nil
            let failure =
                sawResponseBytes
                ? HTTPClientError(.badResponse, "the connection closed inside the response", transport: error)
                : HTTPClientError(.noResponse, "the connection closed before a response", transport: error)
            task.complete(.failure(failure))
        }
        client?.connectionClosed(self)
    }

    // MARK: responses

    private func drainParser() {
        do throws(HTTPError) {
            while current != nil, let event = try parser.next() {
                switch event {
                case .informational:
                    continue
                case .head(let received):
                    head = received
                    body.reserveCapacity(received.bodyCapacity(cap: maxBodyBytes))
                case .body(let slice):
                    body.append(contentsOf: slice)
                case .end(let keepAlive):
                    finishResponse(keepAlive: keepAlive)
                    return
                case .switchedProtocols:
                    fail(HTTPClientError(.badResponse, "the server switched protocols unasked"))
                    return
                }
            }
        } catch {
            if error == .closedBeforeResponse {
                fail(HTTPClientError(.noResponse, "the connection ended before a response", http: error))
            } else {
                fail(HTTPClientError(.badResponse, "the response is invalid", http: error))
            }
        }
    }

    private func finishResponse(keepAlive: Bool) {
        guard let task = current, let head else { return }
        current = nil
        stopSilenceWatch()
        let response = HTTPClientResponse(head: head, body: body)
        self.head = nil
        body = []
        let reusable =
            keepAlive && !task.request.headers.contains("Connection", token: "close") && parser.isIdle
            && requestIsSent && transport.isOpen
        task.complete(.success(response))
        if reusable && !isClosed {
            client?.becameIdle(self)
        } else {
            transport.close()
        }
    }

    private func fail(_ error: HTTPClientError) {
        let task = current
        current = nil
        stopSilenceWatch()
        transport.abort()
        task?.complete(.failure(error))
    }
}
