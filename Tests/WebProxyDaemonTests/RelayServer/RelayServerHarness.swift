import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

/// A test waited too long for the loop (a safety bound, not a speed assertion).
struct RelayServerTimeout: Error {}

/// Runs `body` on `loop` and waits until it calls `done`, or fails after `timeout`.
func onRelayLoop<T: Sendable>(
    _ loop: EventLoop, timeout: Duration = .seconds(15),
    _ body: @escaping @Sendable (_ done: @escaping (Result<T, any Error>) -> Void) -> Void
) async throws -> T {
    try await onLoop(loop, timeout: timeout) { done in body(done) }.get()
}

/// A relay on a background loop with real TLS (test CA), an echo backend and an HTTPS client
/// that trusts the CA and dials the relay's loopback port for `proxy.example.com`.
final class RelayServerHarness: @unchecked Sendable {
    static let host = "proxy.example.com"
    static let secret = "000102030405060708090a0b0c0d0e0f"

    let loop: EventLoop
    let resolver: Resolver
    let clientContext: TLSContext
    /// The test CA, for clients (such as the daemon) that take a CA file.
    let caPEM: String
    let capability: Capability
    let api: RelayAPI
    /// Loop-confined parts, set up in `start`.
    private(set) var relay: TestRelayServer?
    private(set) var echo: EchoBackend?
    private(set) var client: HTTPClient?
    private(set) var port: UInt16 = 0

    /// `deadBackend`: profile 0's backend is a closed port (dials are refused). `port`: the
    /// relay's loopback port (0: the kernel picks one).
    init(
        mode: CarrierMode, limits: RelayLimits = RelayLimits(), deadBackend: Bool = false, port listenPort: UInt16 = 0
    ) async throws {
        loop = try EventLoop(name: "relay-server-test")
        resolver = try Resolver()
        let authority = try TestCertificateAuthority()
        let leaf = try authority.issueLeaf(dnsNames: [Self.host])
        let serverContext = try TLSContext(server: leaf.serverConfiguration)
        caPEM = authority.certificatePEM
        clientContext = try TLSContext(
            client: TLSConfiguration.Client(trust: .caPEM(authority.certificatePEM)))
        let host = try RelayHost(Self.host)
        let profile = RelayProfile(secret: try ProxySecret(parsing: Self.secret), carrierMode: mode)
        let configuration = TestRelayConfiguration(host: host, profiles: [profile], limits: limits)
        capability = Capability.derive(secret: profile.secret, host: host, basePath: nil)
        api = RelayAPI(host: Self.host, prefix: capability.apiPathPrefix)
        let _: Bool = try await onRelayLoop(loop) { [self] done in
            do {
                let echo = try EchoBackend.start(on: loop)
                var backend = echo.localAddress
                if deadBackend {
                    let closed = try EchoBackend.start(on: loop)
                    backend = closed.localAddress
                    closed.stop()
                }
                let relay = try TestRelayServer.start(
                    on: loop, listen: .loopbackIPv4(port: listenPort), configuration: configuration,
                    backends: [backend], tls: serverContext)
                self.echo = echo
                self.relay = relay
                port = relay.port
                let endpoint = SecureEndpoint(
                    origin: DialTarget(host: Self.host, port: 443)!,
                    connectTo: DialTarget(host: "127.0.0.1", port: relay.port)!)
                client = HTTPClient(
                    endpoint: endpoint,
                    dialer: SecureDialer(dialer: Dialer(timeout: .seconds(5)), context: clientContext),
                    resolver: resolver, loop: loop)
                done(.success(true))
            } catch {
                done(.failure(error))
            }
        }
    }

    /// Stops everything and joins the loop.
    func shutdown() async {
        let _: Bool? = try? await onRelayLoop(loop) { [self] done in
            client?.shutdown()
            relay?.stop()
            echo?.stop()
            done(.success(true))
        }
        loop.stop()
        loop.waitUntilStopped()
        resolver.shutdown()
    }

    /// Sends `request` through the HTTPS client and returns the relay's answer.
    func send(_ request: CarrierRequest) async throws -> CarrierResponse {
        let httpRequest = HTTPClientRequest(
            method: request.method, target: request.path,
            headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }),
            body: request.body.isEmpty && request.method != "POST" ? nil : request.body)
        let response: HTTPClientResponse = try await onRelayLoop(loop) { [self] done in
            client?.execute(httpRequest) { result in done(result.mapError { $0 }) }
        }
        return CarrierResponse(
            status: response.status,
            headers: response.headers.map { (name: $0.name, value: $0.value) }, body: response.body)
    }

    /// Runs `body` on the loop with the relay (for faults and inspection).
    func withRelay<T: Sendable>(_ body: @escaping @Sendable (TestRelayServer) -> T) async throws -> T {
        try await onRelayLoop(loop) { [self] done in
            guard let relay else { return done(.failure(RelayServerTimeout())) }
            done(.success(body(relay)))
        }
    }
}
