/// Who a secure connection talks to: the logical origin (SNI, certificate name, HTTP Host)
/// and, when it differs, the address actually dialled (a `connect-to` override).
public struct SecureEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The relay's name and port: what the certificate must name and what Host says.
    public let origin: DialTarget
    /// Where TCP goes instead of `origin` (resolved and dialled as given), if set.
    public let connectTo: DialTarget?

    /// An endpoint for `origin`, dialling `connectTo` instead when given.
    public init(origin: DialTarget, connectTo: DialTarget? = nil) {
        self.origin = origin
        self.connectTo = connectTo
    }

    /// The address the dialer connects to.
    public var dialTarget: DialTarget { connectTo ?? origin }

    /// The `Host` header value: the name, with the port unless it is 443.
    public var hostHeader: String {
        origin.port == 443 ? (origin.host.contains(":") ? "[\(origin.host)]" : origin.host) : origin.description
    }

    public var description: String {
        connectTo.map { "\(origin) via \($0)" } ?? origin.description
    }
}

/// Opens TLS connections: `Dialer` (resolve, Happy Eyeballs, optional upstream proxy that
/// is never bypassed) to the endpoint's dial target, then a TLS handshake that verifies the
/// endpoint's origin name. Sessions resume across connections through the shared context.
public struct SecureDialer: Sendable {
    /// The TCP dialer (proxy, dial timeout, Happy Eyeballs delay).
    public var dialer: Dialer
    /// The client TLS context shared by every connection to the relay.
    public var context: TLSContext
    /// The deadline for the TLS handshake, after TCP is up.
    public var handshakeTimeout: Duration
    /// The handshake also fails once its path moved nothing for this long (nil: never).
    public var handshakeSilence: Duration?

    public init(
        dialer: Dialer = Dialer(), context: TLSContext, handshakeTimeout: Duration = .seconds(10),
        handshakeSilence: Duration? = nil
    ) {
        self.dialer = dialer
        self.context = context
        self.handshakeTimeout = handshakeTimeout
        self.handshakeSilence = handshakeSilence
    }

    /// Connects to `endpoint`, offering `alpnProtocols` instead of the context's ALPN list
    /// when given. `completion` runs once on `loop`, never before this returns, with a
    /// connection whose handshake is done, or the stage that failed.
    public func connect(
        to endpoint: SecureEndpoint, on loop: EventLoop, resolver: Resolver, alpnProtocols: [String]? = nil,
        completion: @escaping (Result<TLSConnection, TransportError>) -> Void
    ) -> SecureDialOperation {
        loop.preconditionInEventLoop()
        let operation = SecureDialOperation(loop: loop, completion: completion)
        operation.dial = dialer.dial(endpoint.dialTarget, on: loop, resolver: resolver) {
            [operation, context, handshakeTimeout, handshakeSilence] result in
            operation.dial = nil
            switch result {
            case .failure(let error):
                operation.finish(.failure(TransportError.classifyDial(error)))
            case .success(let tcp):
                do throws(TLSError) {
                    operation.handshake = try TLSConnection.startClient(
                        over: tcp, context: context, serverName: endpoint.origin.host, alpnProtocols: alpnProtocols,
                        handshakeTimeout: handshakeTimeout, handshakeSilence: handshakeSilence
                    ) { [operation] result in
                        operation.handshake = nil
                        operation.finish(result)
                    }
                } catch {
                    tcp.abort()
                    operation.finish(.failure(.tls(error)))
                }
            }
        }
        return operation
    }
}

/// A secure dial in progress; `cancel()` abandons it and closes whatever it opened.
public final class SecureDialOperation {
    private let loop: EventLoop
    private let completion: OnceCompletion<TLSConnection, TransportError>
    fileprivate var dial: DialOperation?
    fileprivate var handshake: TLSConnection?

    fileprivate init(loop: EventLoop, completion: @escaping (Result<TLSConnection, TransportError>) -> Void) {
        self.loop = loop
        self.completion = OnceCompletion(discard: { $0.abort() }, completion)
    }

    /// Abandons the dial; the completion will not run.
    public func cancel() {
        loop.preconditionInEventLoop()
        completion.cancel()
        dial?.cancel()
        dial = nil
        handshake?.abort()
        handshake = nil
    }

    fileprivate func finish(_ result: Result<TLSConnection, TransportError>) {
        completion.complete(result)
    }
}
