/// A username and password for an upstream proxy. Never printed.
public struct ProxyCredentials: Hashable, Sendable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    public let username: String
    public let password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    public var description: String { "ProxyCredentials(redacted)" }
    public var debugDescription: String { description }
    /// No children, so `dump` cannot show the username and password either.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// What a proxy handshake asks for after an input.
public enum ProxyHandshakeStep: Hashable, Sendable {
    /// Send these bytes and wait for more input.
    case send([UInt8])
    /// Wait for more input.
    case needMore
    /// The tunnel is up; `leftover` bytes arrived after the proxy's reply and belong to the stream.
    case established(leftover: [UInt8])
    /// The proxy refused or misbehaved.
    case failed(NetError)
}

/// A client handshake with an upstream proxy, bytes in and bytes out.
public protocol ProxyHandshake {
    /// The first bytes to send.
    mutating func start() -> [UInt8]
    /// Feeds bytes read from the proxy.
    mutating func receive(_ bytes: some Collection<UInt8>) -> ProxyHandshakeStep
}

/// An upstream proxy every connection goes through.
public enum UpstreamProxy: Hashable, Sendable {
    /// A SOCKS5 proxy (RFC 1928), optionally with username/password (RFC 1929).
    case socks5(DialTarget, credentials: ProxyCredentials?)
    /// An HTTP proxy that supports CONNECT, optionally with Basic authorization.
    case httpConnect(DialTarget, credentials: ProxyCredentials?)

    /// Where the proxy listens.
    public var endpoint: DialTarget {
        switch self {
        case .socks5(let endpoint, _), .httpConnect(let endpoint, _): endpoint
        }
    }
}

/// Opens TCP connections to dial targets: resolve, Happy Eyeballs, then (if configured) the
/// upstream proxy handshake. With a proxy, every failure is final: it never falls back to a
/// direct connection.
public struct Dialer: Sendable {
    /// The proxy to go through, or nil to connect directly.
    public var proxy: UpstreamProxy?
    /// The deadline for the whole dial, resolution and handshake included.
    public var timeout: Duration
    /// Happy Eyeballs' delay before the next address is tried.
    public var attemptDelay: Duration

    public init(proxy: UpstreamProxy? = nil, timeout: Duration = .seconds(10), attemptDelay: Duration = .milliseconds(250)) {
        self.proxy = proxy
        self.timeout = timeout
        self.attemptDelay = attemptDelay
    }

    /// Connects to `target` (the address to dial; naming the peer is the caller's business).
    /// `completion` runs once on `loop`, never before this returns, with a connection whose
    /// first delegate sees the stream from its first byte past any proxy reply. `resolved`,
    /// if given, is told the addresses of the first hop (the proxy's, with a proxy) as soon as
    /// they are known, so a caller can time the stages of this very dial (`webproxyd check`).
    public func dial(
        _ target: DialTarget, on loop: EventLoop, resolver: Resolver,
        resolved: (([SocketAddress]) -> Void)? = nil,
        completion: @escaping (Result<TCPConnection, NetError>) -> Void
    ) -> DialOperation {
        loop.preconditionInEventLoop()
        let operation = DialOperation(
            dialer: self, target: target, loop: loop, resolver: resolver, resolved: resolved, completion: completion)
        operation.begin()
        return operation
    }
}

/// A dial in progress; `cancel()` abandons it and closes whatever it opened.
public final class DialOperation {
    private let dialer: Dialer
    private let target: DialTarget
    private let loop: EventLoop
    private let resolver: Resolver
    private let resolved: (([SocketAddress]) -> Void)?
    private let completion: OnceCompletion<TCPConnection, NetError>
    private var deadlineTimer: TimerID?
    private var resolving: ResolveRequest?
    private var connecting: HappyEyeballsConnector?
    private var handshaking: TCPConnection?

    fileprivate init(
        dialer: Dialer, target: DialTarget, loop: EventLoop, resolver: Resolver,
        resolved: (([SocketAddress]) -> Void)?, completion: @escaping (Result<TCPConnection, NetError>) -> Void
    ) {
        self.dialer = dialer
        self.target = target
        self.loop = loop
        self.resolver = resolver
        self.resolved = resolved
        self.completion = OnceCompletion(discard: { $0.abort() }, completion)
    }

    /// Abandons the dial; the completion will not run.
    public func cancel() {
        loop.preconditionInEventLoop()
        completion.cancel()
        tearDown()
    }

    fileprivate func begin() {
        let deadline = loop.now + dialer.timeout
        deadlineTimer = loop.scheduleTimer(at: deadline) { [self] in
            deadlineTimer = nil
            finish(.failure(NetError(.timedOut, call: stage, message: "dial timed out")))
        }
        let hop = dialer.proxy?.endpoint ?? target
        resolving = resolver.resolve(host: hop.host, port: hop.port, on: loop) { [self] result in
            resolving = nil
            switch result {
            case .failure(let error):
                finish(.failure(labelled(error)))
            case .success(let addresses):
                resolved?(addresses)
                guard completion.isPending else { return }
                connecting = HappyEyeballsConnector.connect(
                    to: addresses, on: loop, attemptDelay: dialer.attemptDelay,
                    timeout: deadline - loop.now
                ) { [self] result in
                    connecting = nil
                    switch result {
                    case .failure(let error):
                        finish(.failure(labelled(error)))
                    case .success(let connection):
                        handshake(on: connection)
                    }
                }
            }
        }
    }

    private var stage: String { dialer.proxy == nil ? "connect" : "proxy" }

    /// Marks errors of the proxy leg so a refused proxy is not mistaken for a refused relay.
    private func labelled(_ error: NetError) -> NetError {
        guard dialer.proxy != nil, error.code != .proxy else { return error }
        return NetError(error.code, call: "proxy \(error.call)", message: error.message, errno: error.errno)
    }

    private func handshake(on connection: TCPConnection) {
        let machine: any ProxyHandshake
        do throws(NetError) {
            switch dialer.proxy {
            case nil:
                finish(.success(connection))
                return
            case .socks5(_, let credentials):
                machine = try Socks5Handshake(target: target, credentials: credentials)
            case .httpConnect(_, let credentials):
                machine = try HTTPConnectHandshake(target: target, credentials: credentials)
            }
        } catch {
            connection.abort()
            finish(.failure(error))
            return
        }
        handshaking = connection
        let runner = ProxyHandshakeRunner(machine: machine) { [self] result in
            handshaking = nil
            connection.delegate = nil
            switch result {
            case .success(let leftover):
                connection.pushBack(leftover)
                finish(.success(connection))
            case .failure(let error):
                connection.abort()
                finish(.failure(labelled(error)))
            }
        }
        connection.delegate = runner
        do {
            try connection.write(runner.start())
        } catch {
            connection.abort()
            finish(.failure(labelled(socketError(error))))
        }
    }

    private func finish(_ result: Result<TCPConnection, NetError>) {
        tearDown()
        completion.complete(result)
    }

    private func tearDown() {
        if let deadlineTimer { loop.cancelTimer(deadlineTimer) }
        deadlineTimer = nil
        resolving?.cancel()
        resolving = nil
        connecting?.cancel()
        connecting = nil
        if let handshaking {
            handshaking.delegate = nil
            handshaking.abort()
        }
        handshaking = nil
    }
}

/// Drives a proxy handshake on a connection as its temporary delegate.
private final class ProxyHandshakeRunner: ByteStreamDelegate {
    private var machine: any ProxyHandshake
    private let done: OnceCompletion<[UInt8], NetError>

    init(machine: any ProxyHandshake, done: @escaping (Result<[UInt8], NetError>) -> Void) {
        self.machine = machine
        self.done = OnceCompletion(done)
    }

    /// The machine's first bytes.
    func start() -> [UInt8] {
        machine.start()
    }

    func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        switch machine.receive(bytes) {
        case .needMore:
            return
        case .send(let reply):
            do {
                try connection.write(reply)
            } catch {
                finish(.failure(socketError(error)))
            }
        case .established(let leftover):
            finish(.success(leftover))
        case .failed(let error):
            finish(.failure(error))
        }
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        finish(.failure(NetError(.proxy, call: "handshake", message: "proxy closed the connection during the handshake")))
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        finish(.failure(error.map(socketError) ?? NetError(.closed, call: "handshake", message: "connection closed during the handshake")))
    }

    private func finish(_ result: Result<[UInt8], NetError>) {
        done.complete(result)
    }
}

/// A TCP stream's failure as the dial reports it: TCP fails only at the socket (`.io`).
private func socketError(_ error: TransportError) -> NetError {
    if case .io(let error) = error { return error }
    return NetError(.closed, call: "handshake", message: error.description)
}
