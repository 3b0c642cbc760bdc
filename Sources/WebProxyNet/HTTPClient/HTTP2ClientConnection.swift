/// One HTTP/2 connection of an `HTTPClient`: each request is a stream of it, as many at
/// once as the server allows, so one TLS connection carries a whole relay session.
///
/// A stream the server refused (RST_STREAM or GOAWAY with REFUSED_STREAM, or one that never
/// started) goes back to the client's queue untouched and is sent again, byte for byte, on
/// another connection; any other failure completes the request like HTTP/1.1 would. Liveness
/// is checked with PING, as Chromium does: before a request on a connection that has heard
/// nothing for `prePingAfter`, and after a request timed out.
final class HTTP2ClientConnection: ByteStreamDelegate, HTTPRequestCarrier {
    /// One request in flight.
    private struct Stream {
        let task: HTTPClientTask
        let maxBodyBytes: Int
        var head: HTTPResponseHead?
        var sawResponseBytes = false
        var silenceWatch: PathSilenceWatch?
    }

    private weak var client: HTTPClient?
    private let transport: any ByteStream
    private let session: HTTP2Session
    private let authority: String
    private let defaultMaxBodyBytes: Int
    private let pingTimeout: Duration
    private var streams: [Int32: Stream] = [:]
    /// Set by GOAWAY or our own close: no new stream goes here.
    private(set) var isGoingAway = false
    private var idleTimer: TimerID?
    private var pingTimer: TimerID?
    private var lastReceived: MonotonicTime
    private var isClosed = false

    /// A connection silent this long is pinged before it carries a new request.
    static let prePingAfter: Duration = .seconds(10)
    /// Frames taken from the session per write.
    private static let writeChunk = 64 * 1024

    init(
        client: HTTPClient, transport: any ByteStream, authority: String, defaultMaxBodyBytes: Int, pingTimeout: Duration
    ) throws(HTTP2Error) {
        self.client = client
        self.transport = transport
        self.authority = authority
        self.defaultMaxBodyBytes = defaultMaxBodyBytes
        self.pingTimeout = pingTimeout
        session = try HTTP2Session(role: .client, settings: .browser)
        lastReceived = transport.loop.now
        transport.delegate = self
        flush()
    }

    /// Requests in flight.
    var streamCount: Int { streams.count }

    /// Whether another request may start here now.
    var hasCapacity: Bool {
        !isGoingAway && !isClosed && transport.isOpen && streams.count < session.peerMaxConcurrentStreams
    }

    /// Sends `task`'s request as a new stream.
    func start(_ task: HTTPClientTask) {
        cancelIdleTimer()
        let request = task.request
        guard let stream = session.submitRequest(Self.fields(of: request, authority: authority), body: request.body)
        else {
            // No stream ID left (or GOAWAY came in between): another connection takes it,
            // and this one closes once its streams are done.
            isGoingAway = true
            client?.requeue(task)
            becameIdleIfEmpty()
            return
        }
        task.carrier = self
        var entry = Stream(task: task, maxBodyBytes: request.maxResponseBodyBytes ?? defaultMaxBodyBytes)
        if let bound = request.silenceTimeout {
            entry.silenceWatch = PathSilenceWatch(loop: transport.loop, bound: bound, progress: { [transport] in transport.pathProgress }) {
                [weak self] in
                self?.pathWentSilent(stream, for: bound)
            }
        }
        streams[stream] = entry
        if transport.loop.now - lastReceived >= Self.prePingAfter { probe() }
        flush()
    }

    /// The request's fields as Chromium sends them over h2: `:method :authority :scheme
    /// :path`, then the caller's fields lower-cased, without the HTTP/1.1 connection fields.
    static func fields(of request: HTTPClientRequest, authority: String) -> [HTTPField] {
        var fields = [
            HTTPField(name: ":method", value: request.method),
            HTTPField(name: ":authority", value: request.headers.first("Host") ?? authority),
            HTTPField(name: ":scheme", value: "https"),
            HTTPField(name: ":path", value: request.target),
        ]
        for field in request.headers {
            let name = field.name.lowercased()
            guard !HTTP2Session.connectionSpecificFields.contains(name) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        if let body = request.body, !request.headers.contains("Content-Length") {
            fields.append(HTTPField(name: "content-length", value: String(body.count)))
        }
        return fields
    }

    // MARK: HTTPRequestCarrier

    func sawResponseBytes(of task: HTTPClientTask) -> Bool {
        streams.values.first { $0.task === task }?.sawResponseBytes ?? false
    }

    /// Resets the task's stream; the other streams go on.
    func drop(_ task: HTTPClientTask) {
        guard let (id, entry) = streams.first(where: { $0.value.task === task }) else { return }
        entry.silenceWatch?.stop()
        streams[id] = nil
        session.reset(stream: id, errorCode: HTTP2Session.ErrorCode.cancel)
        flush()
        becameIdleIfEmpty()
    }

    // MARK: liveness

    /// Sends a PING unless one is out: if nothing at all arrives within `pingTimeout`, the
    /// connection is dead and every request on it fails.
    func probe() {
        guard pingTimer == nil, !isClosed else { return }
        session.ping()
        let heardBefore = lastReceived
        pingTimer = transport.loop.scheduleTimer(after: pingTimeout) { [weak self] in
            guard let self else { return }
            pingTimer = nil
            guard lastReceived == heardBefore else { return }
            abandon(failing: HTTPClientError(.noResponse, "the relay did not answer a PING within \(pingTimeout)"))
        }
        flush()
    }

    private func pathWentSilent(_ id: Int32, for bound: Duration) {
        guard let entry = streams.removeValue(forKey: id) else { return }
        let detail = entry.sawResponseBytes ? "the response stopped" : "no response arrived"
        entry.task.complete(
            .failure(HTTPClientError(.timedOut, "\(detail) and the connection moved nothing for \(bound)")))
        // The path is shared by every stream: none of them will move either.
        abandon(failing: HTTPClientError(.noResponse, "the connection moved nothing for \(bound)"))
        client?.closeIdleConnections()
    }

    // MARK: closing

    func startIdleTimer(_ timeout: Duration) {
        cancelIdleTimer()
        idleTimer = transport.loop.scheduleTimer(after: timeout) { [weak self] in
            guard let self else { return }
            idleTimer = nil
            close()
        }
    }

    private func cancelIdleTimer() {
        if let idleTimer { transport.loop.cancelTimer(idleTimer) }
        idleTimer = nil
    }

    /// Says GOAWAY and closes once it is written; for a connection without streams.
    func close() {
        isGoingAway = true
        session.goAway()
        flush()
        transport.close()
    }

    /// Fails every request on the connection with `error` and resets it.
    func abandon(failing error: HTTPClientError) {
        isGoingAway = true
        let pending = takeAllStreams()
        transport.abort()
        for entry in pending {
            let failure =
                entry.sawResponseBytes && error.kind == .noResponse
                ? HTTPClientError(.badResponse, error.message, transport: error.transport) : error
            entry.task.complete(.failure(failure))
        }
    }

    /// Every stream, removed, with its watch and the connection's timers stopped.
    private func takeAllStreams() -> [Stream] {
        let pending = Array(streams.values)
        streams.removeAll()
        cancelIdleTimer()
        if let pingTimer { transport.loop.cancelTimer(pingTimer) }
        pingTimer = nil
        for entry in pending { entry.silenceWatch?.stop() }
        return pending
    }

    private func becameIdleIfEmpty() {
        guard streams.isEmpty, !isClosed else { return }
        if isGoingAway {
            transport.close()
        } else {
            client?.becameIdle(self)
        }
    }

    // MARK: bytes

    private func flush() {
        while transport.isWritable, !isClosed {
            let bytes = session.takeOutput(limit: Self.writeChunk)
            guard !bytes.isEmpty else { break }
            do throws(TransportError) {
                try transport.write(bytes)
            } catch {
                abandon(failing: HTTPClientError(.noResponse, "the request could not be sent", transport: error))
                return
            }
        }
    }

    func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        lastReceived = transport.loop.now
        if let pingTimer {
            transport.loop.cancelTimer(pingTimer)
            self.pingTimer = nil
        }
        do throws(HTTP2Error) {
            try session.receive(plaintext)
        } catch {
            flush()
            abandon(failing: HTTPClientError(.badResponse, "the relay broke HTTP/2: \(error)"))
            return
        }
        for event in session.takeEvents() { handle(event) }
        flush()
        if !session.isAlive { transport.close() }
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        transport.close()
    }

    func streamDidBecomeWritable(_ connection: any ByteStream) {
        flush()
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        isClosed = true
        for entry in takeAllStreams() {
            let failure =
                entry.sawResponseBytes
                ? HTTPClientError(.badResponse, "the connection closed inside the response", transport: error)
                : HTTPClientError(.noResponse, "the connection closed before a response", transport: error)
            entry.task.complete(.failure(failure))
        }
        client?.connectionClosed(self)
    }

    // MARK: events

    private func handle(_ event: HTTP2Session.Event) {
        switch event {
        case .headers(let id, let fields):
            guard streams[id] != nil else { return }
            streams[id]?.sawResponseBytes = true
            guard streams[id]?.head == nil else { return }  // trailers
            guard let status = fields.first(where: { $0.name == ":status" }).flatMap({ Int($0.value) }) else {
                failStream(id, HTTPClientError(.badResponse, "the response has no status"))
                return
            }
            guard status >= 200 else { return }  // informational
            let headers = HTTPHeaders(fields.filter { !$0.name.hasPrefix(":") })
            let head = HTTPResponseHead(status: status, reason: "", version: .http2, headers: headers)
            streams[id]?.head = head
            if let cap = streams[id]?.maxBodyBytes {
                session.reserveReceivedBody(of: id, capacity: head.bodyCapacity(cap: cap))
            }
        case .data(let id, _):
            guard let cap = streams[id]?.maxBodyBytes else { return }
            streams[id]?.sawResponseBytes = true
            if session.receivedBodyCount(of: id) > cap {
                failStream(id, HTTPClientError(.badResponse, "the response body exceeds \(cap) bytes"))
            }
        case .endStream(let id):
            let body = session.takeReceivedBody(of: id)
            guard let entry = streams.removeValue(forKey: id) else { return }
            entry.silenceWatch?.stop()
            guard let head = entry.head else {
                entry.task.complete(.failure(HTTPClientError(.badResponse, "the stream ended without a response")))
                becameIdleIfEmpty()
                return
            }
            entry.task.complete(.success(HTTPClientResponse(head: head, body: body)))
            becameIdleIfEmpty()
        case .streamClosed(let id, let code):
            session.takeReceivedBody(of: id)
            guard let entry = streams.removeValue(forKey: id) else { return }
            entry.silenceWatch?.stop()
            if code == HTTP2Session.ErrorCode.refusedStream && !entry.sawResponseBytes {
                client?.requeue(entry.task)
            } else {
                let detail = entry.sawResponseBytes ? "inside the response" : "before a response"
                entry.task.complete(
                    .failure(
                        HTTPClientError(
                            entry.sawResponseBytes ? .badResponse : .noResponse,
                            "the relay reset the stream \(detail) (HTTP/2 error \(code))")))
            }
            becameIdleIfEmpty()
        case .goAway:
            // Streams past the GOAWAY's last one come back as refused and are requeued.
            isGoingAway = true
            client?.roomChanged()
            becameIdleIfEmpty()
        case .settings:
            client?.roomChanged()
        case .pingAcknowledged:
            break
        }
    }

    private func failStream(_ id: Int32, _ error: HTTPClientError) {
        guard let entry = streams.removeValue(forKey: id) else { return }
        entry.silenceWatch?.stop()
        session.reset(stream: id, errorCode: HTTP2Session.ErrorCode.cancel)
        entry.task.complete(.failure(error))
        becameIdleIfEmpty()
    }
}
