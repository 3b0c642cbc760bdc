/// An HTTP client for one origin over TLS, on one event loop: ALPN offers `h2, http/1.1`,
/// and the server's choice decides how requests travel. Over HTTP/2 every request is a
/// stream of one connection (a second one opens only when the server's stream limit is
/// reached or it said GOAWAY). Over HTTP/1.1 a pool of keep-alive connections (up to
/// `maxConnections`) carries one request each at a time (no pipelining). Both share a
/// bounded wait queue and a deadline per request.
///
/// A request is never retried, except one an HTTP/2 server refused unprocessed
/// (REFUSED_STREAM, or past a GOAWAY's last stream), which is sent again unchanged: a
/// failure says whether any response byte arrived (`HTTPClientError.isNoResponse`). A
/// cancelled or timed-out request's HTTP/1.1 connection is closed, never reused; its HTTP/2
/// stream is reset and the connection pinged. All methods and completions run on the loop
/// thread.
public final class HTTPClient {
    /// Pool and request settings.
    public struct Configuration: Sendable {
        /// Connections open or opening at once (1...256); long polls each hold one.
        public var maxConnections: Int
        /// Requests waiting for a connection before `queueFull` is returned.
        public var maxQueuedRequests: Int
        /// Default deadline from submission to the response's last byte.
        public var requestTimeout: Duration
        /// An idle keep-alive connection is closed after this long.
        public var idleTimeout: Duration
        /// Response parser limits; `maxBodyBytes` is the default body cap.
        public var parserLimits: HTTPParserLimits
        /// A dial still unfinished after this long no longer counts as serving a waiting
        /// request: the request dials again beside it, as browsers race a slow connect, so a
        /// dial that went silent in an outage cannot hold the requests after it.
        public var dialPatience: Duration
        /// Whether ALPN offers `h2` before `http/1.1`.
        public var offersHTTP2: Bool
        /// What ALPN offers, most preferred first.
        public var alpnProtocols: [String] { offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"] }
        /// An HTTP/2 connection whose PING (sent after a silence or a timed-out request)
        /// brings nothing back within this long is closed with its requests.
        public var pingTimeout: Duration
        /// Over HTTP/1.1, the connections opened as soon as a first one, alone in the pool,
        /// finds the server speaks it (1: no more than requests ask for). A caller that
        /// always needs several at once (a parked poll beside an upload) then does not wait
        /// for the later handshakes.
        public var http1WarmConnections: Int

        /// The most connections one client may hold.
        public static let connectionCeiling = 256

        public init(
            maxConnections: Int = 8, maxQueuedRequests: Int = 1024, requestTimeout: Duration = .seconds(90),
            idleTimeout: Duration = .seconds(60), parserLimits: HTTPParserLimits = HTTPParserLimits(),
            dialPatience: Duration = .seconds(2), offersHTTP2: Bool = true, pingTimeout: Duration = .seconds(5),
            http1WarmConnections: Int = 1
        ) {
            self.maxConnections = maxConnections
            self.maxQueuedRequests = maxQueuedRequests
            self.requestTimeout = requestTimeout
            self.idleTimeout = idleTimeout
            self.parserLimits = parserLimits
            self.dialPatience = dialPatience
            self.offersHTTP2 = offersHTTP2
            self.pingTimeout = pingTimeout
            self.http1WarmConnections = http1WarmConnections
        }
    }

    /// The loop every connection and callback belongs to.
    public let loop: EventLoop
    /// Who the client talks to.
    public let endpoint: SecureEndpoint
    /// The settings in force (`maxConnections` clamped to 1...256).
    public let configuration: Configuration

    private let dialer: SecureDialer
    private let resolver: Resolver
    private var queue: [HTTPClientTask] = []
    private var connections: [ObjectIdentifier: HTTPClientConnection] = [:]
    private var idle: [HTTPClientConnection] = []
    /// HTTP/2 connections, oldest first; new streams go to the first with room.
    private var multiplexed: [HTTP2ClientConnection] = []
    /// Whether the server is taken to speak h2: then one connection serves everything and
    /// a dial is made only when none has room. Assumed while h2 is offered and no dial has
    /// told yet, so a first burst of requests waits for one connection, as in Chromium;
    /// each new connection's ALPN then decides.
    private var expectsHTTP2: Bool
    /// `dispatch` is running; a nested call only asks it to go round again.
    private var isDispatching = false
    private var needsDispatch = false
    private var dials: [Int: Dial] = [:]
    private var nextDialID = 0
    private var isShutDown = false

    /// True while `execute` hands a new request to the pool: a completion then waits for the
    /// next loop turn, so it never runs before `execute` returned its task.
    fileprivate(set) var isSubmitting = false

    /// How many connections have been opened over the client's life (for tests and stats).
    public private(set) var connectionsOpened = 0
    /// How many of them resumed an earlier TLS session instead of a full handshake.
    public private(set) var connectionsResumed = 0
    /// How many of them negotiated HTTP/2.
    public private(set) var connectionsOpenedHTTP2 = 0
    /// Requests an HTTP/2 server refused unprocessed and that were sent again.
    public private(set) var requestsResent = 0

    public init(
        endpoint: SecureEndpoint, dialer: SecureDialer, resolver: Resolver, loop: EventLoop,
        configuration: Configuration = Configuration()
    ) {
        var configuration = configuration
        configuration.maxConnections = min(max(1, configuration.maxConnections), Configuration.connectionCeiling)
        configuration.maxQueuedRequests = max(0, configuration.maxQueuedRequests)
        self.endpoint = endpoint
        self.dialer = dialer
        self.resolver = resolver
        self.loop = loop
        self.configuration = configuration
        expectsHTTP2 = configuration.offersHTTP2
    }

    /// Connections open now (busy or idle), not counting dials in progress.
    public var openConnectionCount: Int { connections.count + multiplexed.count }
    /// Connections carrying no request: idle keep-alive ones and HTTP/2 ones without streams.
    public var idleConnectionCount: Int { idle.count + multiplexed.count { $0.streamCount == 0 } }
    /// Requests waiting for a connection.
    public var queuedRequestCount: Int { queue.count }

    /// Sends `request` on a pooled connection. `completion` runs once on the loop, never
    /// before this returns, unless the returned task is cancelled first.
    @discardableResult
    public func execute(
        _ request: HTTPClientRequest,
        completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) -> HTTPClientTask {
        loop.preconditionInEventLoop()
        let task = HTTPClientTask(client: self, request: request, completion: completion)
        let refusal: HTTPClientError?
        if isShutDown {
            refusal = HTTPClientError(.shutDown, "the client was shut down")
        } else if queue.count >= configuration.maxQueuedRequests {
            refusal = HTTPClientError(.queueFull, "\(queue.count) requests already wait for a connection")
        } else {
            do throws(HTTPError) {
                task.encodedHead = try Self.encodeHead(request, hostHeader: endpoint.hostHeader)
                refusal = nil
            } catch {
                refusal = HTTPClientError(.invalidRequest, "the request cannot be serialized", http: error)
            }
        }
        if let refusal {
            loop.enqueue { task.complete(.failure(refusal)) }
            return task
        }
        let timeout = request.timeout ?? configuration.requestTimeout
        task.deadline = loop.scheduleTimer(after: timeout) { [self] in
            task.deadline = nil
            timedOut(task, after: timeout)
        }
        queue.append(task)
        // A pooled connection the peer already reset fails the request inside `dispatch`.
        isSubmitting = true
        dispatch()
        isSubmitting = false
        return task
    }

    /// Fails every queued and in-flight request with `shutDown`, closes every connection and
    /// refuses new requests.
    public func shutdown() {
        loop.preconditionInEventLoop()
        guard !isShutDown else { return }
        isShutDown = true
        let error = HTTPClientError(.shutDown, "the client was shut down")
        for dial in dials.values { dial.cancel(on: loop) }
        dials.removeAll()
        let waiting = queue
        queue.removeAll()
        for task in waiting { task.complete(.failure(error)) }
        for connection in Array(connections.values) {
            connection.current.map { $0.complete(.failure(error)) }
            connection.abandon()
        }
        connections.removeAll()
        idle.removeAll()
        let streaming = multiplexed
        multiplexed.removeAll()
        for connection in streaming { connection.abandon(failing: error) }
    }

    /// Closes every idle keep-alive connection. After a network fault they may be dead without
    /// knowing it (a lost NAT entry sends no FIN), and a request sent on one would wait out its
    /// whole deadline; the next request dials afresh.
    /// An HTTP/2 connection carrying requests is pinged instead: it is kept if it answers.
    public func closeIdleConnections() {
        loop.preconditionInEventLoop()
        let stale = idle
        idle.removeAll()
        for connection in stale { connection.abandon() }
        for connection in multiplexed {
            if connection.streamCount == 0 { connection.close() } else { connection.probe() }
        }
    }

    /// The HTTP/1.1 request head; `Host` goes first when the caller set none. Also checks,
    /// for either protocol, that the request can be sent at all.
    static func encodeHead(_ request: HTTPClientRequest, hostHeader: String) throws(HTTPError) -> [UInt8] {
        var headers = request.headers
        if !headers.contains("Host") {
            headers = HTTPHeaders([HTTPField(name: "Host", value: hostHeader)] + headers.fields)
        }
        try headers.validateForSerialization()
        let head = HTTPRequestHead(method: request.method, target: request.target, headers: headers)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        try head.encode(into: &bytes, bodyLength: request.body?.count)
        return bytes
    }

    // MARK: pool

    /// Hands queued requests to HTTP/2 connections with room, then to idle HTTP/1.1 ones,
    /// and dials for the rest within the cap (over HTTP/2, one dial at a time).
    private func dispatch() {
        needsDispatch = true
        guard !isDispatching else { return }
        isDispatching = true
        defer { isDispatching = false }
        while needsDispatch {
            needsDispatch = false
            for connection in multiplexed {
                while !queue.isEmpty && connection.hasCapacity { connection.start(queue.removeFirst()) }
            }
            while !queue.isEmpty, let connection = idle.popLast() {
                connection.start(queue.removeFirst())
            }
            let wanted = (expectsHTTP2 ? min(queue.count, 1) : queue.count) - patientDialCount
            let room = configuration.maxConnections - openConnectionCount - dials.count
            for _ in 0..<max(0, min(wanted, room)) { startDial() }
        }
    }

    /// Dials in progress that have not yet taken `dialPatience`.
    private var patientDialCount: Int { dials.values.count { $0.patienceTimer != nil } }

    /// A dial in progress; `patienceTimer` runs until it has taken `dialPatience`.
    private struct Dial {
        let operation: SecureDialOperation
        var patienceTimer: TimerID?

        func cancel(on loop: EventLoop) {
            operation.cancel()
            if let patienceTimer { loop.cancelTimer(patienceTimer) }
        }
    }

    private func startDial() {
        let id = nextDialID
        nextDialID += 1
        let operation = dialer.connect(
            to: endpoint, on: loop, resolver: resolver, alpnProtocols: configuration.alpnProtocols
        ) {
            [self] result in
            if let patienceTimer = dials.removeValue(forKey: id)?.patienceTimer { loop.cancelTimer(patienceTimer) }
            switch result {
            case .success(let tls):
                connectionsOpened += 1
                if tls.engine.isSessionResumed { connectionsResumed += 1 }
                expectsHTTP2 = tls.engine.negotiatedALPN == "h2"
                guard expectsHTTP2 else {
                    let connection = HTTPClientConnection(client: self, transport: tls, limits: configuration.parserLimits)
                    connections[ObjectIdentifier(connection)] = connection
                    becameIdle(connection)
                    dispatch()  // the requests that waited to learn the protocol dial now
                    if openConnectionCount == 1 {
                        let warm = min(configuration.http1WarmConnections, configuration.maxConnections)
                        for _ in 0..<max(0, warm - openConnectionCount - dials.count) { startDial() }
                    }
                    return
                }
                connectionsOpenedHTTP2 += 1
                do throws(HTTP2Error) {
                    multiplexed.append(
                        try HTTP2ClientConnection(
                            client: self, transport: tls, authority: endpoint.hostHeader,
                            defaultMaxBodyBytes: configuration.parserLimits.maxBodyBytes,
                            pingTimeout: configuration.pingTimeout))
                } catch {
                    tls.abort()
                }
                dispatch()
            case .failure(let error):
                // A failed dial fails the oldest waiting request unless a dial within its
                // patience still serves it: a dead relay cannot leave requests waiting for
                // their deadline, and a refusing one cannot make us redial in a loop.
                if queue.count > patientDialCount {
                    queue.removeFirst().complete(
                        .failure(HTTPClientError(.connectFailed, "cannot connect to \(endpoint)", transport: error)))
                }
                dispatch()
            }
        }
        let patienceTimer = loop.scheduleTimer(after: configuration.dialPatience) { [self] in
            guard dials[id] != nil else { return }
            dials[id]?.patienceTimer = nil
            dispatch()
        }
        dials[id] = Dial(operation: operation, patienceTimer: patienceTimer)
    }

    func becameIdle(_ connection: HTTPClientConnection) {
        guard !isShutDown else {
            connection.abandon()
            return
        }
        if let task = queue.first {
            queue.removeFirst()
            connection.start(task)
        } else {
            idle.append(connection)
            connection.startIdleTimer(configuration.idleTimeout)
        }
    }

    func connectionClosed(_ connection: HTTPClientConnection) {
        connections[ObjectIdentifier(connection)] = nil
        idle.removeAll { $0 === connection }
        dispatch()
    }

    // MARK: HTTP/2 connection events

    /// `connection` has no stream left: it waits for the next request, or closes after
    /// `idleTimeout`.
    func becameIdle(_ connection: HTTP2ClientConnection) {
        guard !isShutDown else {
            connection.close()
            return
        }
        connection.startIdleTimer(configuration.idleTimeout)
        dispatch()
    }

    /// A request the server never processed goes back to the front of the queue, as sent.
    func requeue(_ task: HTTPClientTask) {
        task.carrier = nil
        guard !task.isFinished else { return }
        requestsResent += 1
        queue.insert(task, at: 0)
        dispatch()
    }

    /// An HTTP/2 connection's room for new streams changed: the server said GOAWAY (new
    /// requests need another connection) or sent SETTINGS (its stream limit may have grown).
    func roomChanged() {
        dispatch()
    }

    func connectionClosed(_ connection: HTTP2ClientConnection) {
        multiplexed.removeAll { $0 === connection }
        dispatch()
    }

    // MARK: task events

    private func timedOut(_ task: HTTPClientTask, after timeout: Duration) {
        if let index = queue.firstIndex(where: { $0 === task }) {
            queue.remove(at: index)
            task.complete(.failure(HTTPClientError(.timedOut, "no connection became free within \(timeout)")))
            return
        }
        let sawBytes = task.carrier?.sawResponseBytes(of: task) ?? false
        task.carrier?.drop(task)
        // A silent connection says the path may be gone: the idle ones share it, so none is
        // trusted for the next request.
        closeIdleConnections()
        let detail = sawBytes ? "the response did not finish" : "no response arrived"
        task.complete(.failure(HTTPClientError(.timedOut, "\(detail) within \(timeout)")))
        dispatch()
    }

    /// `connection`'s request saw its path move nothing for `bound`: it fails like a missed
    /// deadline, and the idle connections, which share the path, are dropped with it.
    func wentSilent(_ connection: HTTPClientConnection, for bound: Duration) {
        guard let task = connection.current else { return }
        let sawBytes = connection.sawResponseBytes
        connection.abandon()
        closeIdleConnections()
        let detail = sawBytes ? "the response stopped" : "no response arrived"
        task.complete(.failure(HTTPClientError(.timedOut, "\(detail) and the connection moved nothing for \(bound)")))
        dispatch()
    }

    func cancelled(_ task: HTTPClientTask) {
        if let index = queue.firstIndex(where: { $0 === task }) {
            queue.remove(at: index)
            return
        }
        task.carrier?.drop(task)
        dispatch()
    }
}

/// What carries a sent request: an HTTP/1.1 connection, or an HTTP/2 connection's stream.
protocol HTTPRequestCarrier: AnyObject {
    /// Whether any byte of `task`'s response arrived.
    func sawResponseBytes(of task: HTTPClientTask) -> Bool
    /// Stops carrying `task` without completing it (cancelled or past its deadline).
    func drop(_ task: HTTPClientTask)
}

/// A submitted request; `cancel()` abandons it (closing its connection if it was sent).
public final class HTTPClientTask {
    private weak var client: HTTPClient?
    let request: HTTPClientRequest
    private var completion: ((Result<HTTPClientResponse, HTTPClientError>) -> Void)?
    /// The HTTP/1.1 request head (the body follows it from `request`).
    var encodedHead: [UInt8] = []
    var deadline: TimerID?
    /// What carries the request, once it was sent.
    var carrier: (any HTTPRequestCarrier)?

    init(
        client: HTTPClient, request: HTTPClientRequest,
        completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        self.client = client
        self.request = request
        self.completion = completion
    }

    /// Whether the completion has run or the task was cancelled.
    public var isFinished: Bool { completion == nil }

    /// Abandons the request: its completion will not run, and a connection it was sent on
    /// is closed rather than reused.
    public func cancel() {
        guard completion != nil else { return }
        completion = nil
        if let deadline, let client { client.loop.cancelTimer(deadline) }
        deadline = nil
        client?.cancelled(self)
        carrier = nil
    }

    func complete(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        guard let completion else { return }
        self.completion = nil
        if let deadline, let client { client.loop.cancelTimer(deadline) }
        deadline = nil
        carrier = nil
        // Never before `execute` returned: a caller that files the task only then would
        // take a completion inside `execute` for a stale one and drop it, and the request
        // would be lost for good (no answer, no deadline).
        if let client, client.isSubmitting {
            client.loop.enqueue { completion(result) }
        } else {
            completion(result)
        }
    }
}
