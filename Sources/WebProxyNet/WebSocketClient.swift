internal import CWebProxyOpenSSL

/// Why a WebSocket could not be opened. Descriptions name the status, never header values.
public enum WebSocketClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No TLS connection (resolve, connect, proxy or TLS stage).
    case connectFailed(TransportError)
    /// The server answered with a final status other than 101 (a 404, a 503…).
    case upgradeRejected(HTTPResponseHead)
    /// A 101 that fails RFC 6455 checks (accept value, subprotocol echo, extensions).
    case invalidUpgrade(WebSocketHandshakeError, HTTPResponseHead)
    /// The response could not be parsed.
    case badResponse(HTTPError)
    /// The connection ended before a complete response head.
    case closedBeforeUpgrade(TransportError?)
    /// The upgrade did not finish within the configured deadline.
    case timedOut(Duration)

    /// The server's response head, when one arrived.
    public var response: HTTPResponseHead? {
        switch self {
        case .upgradeRejected(let head), .invalidUpgrade(_, let head): head
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .connectFailed(let error): "WebSocket connect failed: \(error)"
        case .upgradeRejected(let head): "WebSocket upgrade refused with HTTP \(head.status)"
        case .invalidUpgrade(let error, _): "\(error)"
        case .badResponse(let error): "WebSocket upgrade response is invalid: \(error)"
        case .closedBeforeUpgrade(let error):
            "the connection closed before the WebSocket upgrade" + (error.map { " (\($0))" } ?? "")
        case .timedOut(let limit): "the WebSocket upgrade did not finish within \(limit)"
        }
    }
}

/// Opens a client WebSocket: a fresh TLS connection (never pooled; at most one dialled
/// ahead for it), an upgrade request offering exactly one subprotocol that must be echoed,
/// then a `WebSocketEndpoint`.
public final class WebSocketClient: ByteStreamDelegate {
    /// What to ask for.
    public struct Configuration: Sendable {
        /// The request target (path and query).
        public var target: String
        /// The one subprotocol offered; the 101 must echo exactly it.
        public var subprotocol: String
        /// The request's fields after `Host`, in order, the WebSocket ones included
        /// (`WebSocketHandshake.upgradeRequest` adds the key). No Authorization is sent
        /// unless it is here.
        public var fields: HTTPHeaders
        /// Largest message accepted from the server.
        public var maxMessageBytes: Int
        /// From `connect` to a validated 101, dial and TLS included.
        public var upgradeTimeout: Duration
        /// The close-handshake deadline of the resulting endpoint.
        public var closeTimeout: Duration
        /// Limits for the upgrade response (its body, if any, is ignored).
        public var responseLimits: HTTPParserLimits

        public init(
            target: String, subprotocol: String, fields: HTTPHeaders? = nil,
            maxMessageBytes: Int = 4 << 20, upgradeTimeout: Duration = .seconds(20),
            closeTimeout: Duration = .seconds(5),
            responseLimits: HTTPParserLimits = HTTPParserLimits(maxBodyBytes: 64 << 10)
        ) {
            self.target = target
            self.subprotocol = subprotocol
            self.fields = fields ?? WebSocketHandshake.upgradeFields(subprotocol: subprotocol)
            self.maxMessageBytes = maxMessageBytes
            self.upgradeTimeout = upgradeTimeout
            self.closeTimeout = closeTimeout
            self.responseLimits = responseLimits
        }
    }

    private let loop: EventLoop
    private let configuration: Configuration
    private let completion: OnceCompletion<WebSocketEndpoint, WebSocketClientError>
    private var dial: SecureDialOperation?
    /// Waits for a `PreparedConnection`'s connection.
    private var taken: OnceCompletion<TLSConnection, TransportError>?
    private var tls: TLSConnection?
    private var timer: TimerID?
    private var parser: HTTPResponseParser
    private var key = ""

    private init(
        loop: EventLoop, configuration: Configuration,
        completion: @escaping (Result<WebSocketEndpoint, WebSocketClientError>) -> Void
    ) {
        self.loop = loop
        self.configuration = configuration
        self.completion = OnceCompletion(discard: { $0.abort() }, completion)
        parser = HTTPResponseParser(limits: configuration.responseLimits)
    }

    /// Connects to `endpoint` and upgrades. `completion` runs once on `loop`, never before
    /// this returns, with the open endpoint (set its delegate to start reading) or the
    /// failure. Cancelling the returned client abandons the attempt.
    ///
    /// With `prepared` (dialled to the same endpoint), the upgrade goes over its connection
    /// when it holds or is dialling one, and over a new dial when it has none or its dial
    /// failed, so it saves the handshakes and never adds a failure.
    public static func connect(
        to endpoint: SecureEndpoint, dialer: SecureDialer, resolver: Resolver, loop: EventLoop,
        configuration: Configuration, prepared: PreparedConnection? = nil,
        completion: @escaping (Result<WebSocketEndpoint, WebSocketClientError>) -> Void
    ) -> WebSocketClient {
        loop.preconditionInEventLoop()
        let client = WebSocketClient(loop: loop, configuration: configuration, completion: completion)
        client.timer = loop.scheduleTimer(after: configuration.upgradeTimeout) { [client] in
            client.timer = nil
            client.finish(.failure(.timedOut(configuration.upgradeTimeout)))
        }
        func dialAfresh() {
            client.dial = dialer.connect(to: endpoint, on: loop, resolver: resolver) { [client] result in
                client.dial = nil
                switch result {
                case .failure(let error):
                    client.finish(.failure(.connectFailed(error)))
                case .success(let tls):
                    client.sendUpgrade(on: tls, hostHeader: endpoint.hostHeader)
                }
            }
        }
        client.taken = prepared?.take { [client] result in
            client.taken = nil
            switch result {
            case .failure:
                dialAfresh()
            case .success(let tls):
                client.sendUpgrade(on: tls, hostHeader: endpoint.hostHeader)
            }
        }
        if client.taken == nil { dialAfresh() }
        return client
    }

    /// Abandons the attempt: the completion will not run and any connection is reset.
    public func cancel() {
        loop.preconditionInEventLoop()
        completion.cancel()
        tearDown()
    }

    /// 16 bytes from OpenSSL's CSPRNG. A generator failure traps: a predictable key is
    /// worse than stopping.
    static func randomKeyBytes() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        let status = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, 16) }
        precondition(status == 1, "RAND_bytes failed")
        return bytes
    }

    private func sendUpgrade(on tls: TLSConnection, hostHeader: String) {
        self.tls = tls
        tls.delegate = self
        key = WebSocketHandshake.key(randomBytes: Self.randomKeyBytes())
        let head = WebSocketHandshake.upgradeRequest(
            target: configuration.target, host: hostHeader, key: key, fields: configuration.fields)
        do throws(HTTPError) {
            try head.headers.validateForSerialization()
            let bytes = try head.encoded()
            parser.expectResponse(toMethod: "GET")
            try? tls.write(bytes)
        } catch {
            finish(.failure(.badResponse(error)))
        }
    }

    private func finish(_ result: Result<WebSocketEndpoint, WebSocketClientError>) {
        if case .success = result { tls = nil }
        tearDown()
        completion.complete(result)
    }

    /// Stops the deadline and the dial, and resets a connection still held here.
    private func tearDown() {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        dial?.cancel()
        dial = nil
        taken?.cancel()
        taken = nil
        if let tls {
            tls.delegate = nil
            tls.abort()
        }
        tls = nil
    }

    private func drainParser() {
        do throws(HTTPError) {
            while completion.isPending, let event = try parser.next() {
                switch event {
                case .informational, .body, .end:
                    continue
                case .head(let head):
                    finish(.failure(.upgradeRejected(head)))
                case .switchedProtocols(let head):
                    upgraded(head)
                }
            }
        } catch {
            if error == .closedBeforeResponse {
                finish(.failure(.closedBeforeUpgrade(nil)))
            } else {
                finish(.failure(.badResponse(error)))
            }
        }
    }

    private func upgraded(_ head: HTTPResponseHead) {
        guard let tls else { return }
        do throws(WebSocketHandshakeError) {
            try WebSocketHandshake.validateUpgradeResponse(head, key: key, subprotocol: configuration.subprotocol)
        } catch {
            finish(.failure(.invalidUpgrade(error, head)))
            return
        }
        let endpoint = WebSocketEndpoint(
            transport: tls, isSessionResumed: tls.engine.isSessionResumed,
            machine: WebSocketConnection(clientWithMasks: .openSSL(), maxMessageBytes: configuration.maxMessageBytes),
            leftover: parser.takeUnparsedBytes(), closeTimeout: configuration.closeTimeout)
        finish(.success(endpoint))
    }

    // MARK: ByteStreamDelegate (until the upgrade)

    public func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        parser.receive(Array(plaintext))
        drainParser()
    }

    public func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        parser.receiveEndOfStream()
        drainParser()
        if completion.isPending { finish(.failure(.closedBeforeUpgrade(nil))) }
    }

    public func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        finish(.failure(.closedBeforeUpgrade(error)))
    }
}
