import WebProxyCore
import WebProxyNet
import WebProxyTestSupport

/// The relay side of `webproxyd demo`, in-process: a fresh test CA, a `TestRelayServer` on
/// its own loop that serves `proxy.example.com` over real TLS with one profile per carrier,
/// and an `EchoBackend` behind every profile.
///
/// ```swift
/// let environment = try DemoEnvironment.start()
/// // point a client at 127.0.0.1:environment.relayPort for DemoEnvironment.host, trusting caPEM
/// environment.stop()
/// ```
///
/// `@unchecked Sendable`: the relay and the backend are touched only on `loop`; the other
/// stored properties are immutable.
public final class DemoEnvironment: @unchecked Sendable {
    /// One secret the demo relay serves, and the carrier its sessions use.
    public struct Profile: Sendable {
        public let carrier: CarrierMode
        public let secret: ProxySecret
    }

    /// The relay's public hostname (the client dials the loopback port with this name).
    public static let host = "proxy.example.com"

    /// One profile per carrier, with the secrets of the recorded transcripts (test values).
    public static let profiles: [Profile] = [
        (CarrierMode.https, "000102030405060708090a0b0c0d0e0f"),
        (.httpsLanes, "dd000102030405060708090a0b0c0d0e0f"),
        (.websocket, "101112131415161718191a1b1c1d1e1f"),
        (.websocketLanes, "202122232425262728292a2b2c2d2e2f"),
    ].map { carrier, hex in
        // The literals above are valid secrets; a typo would fail every demo run at once.
        guard let secret = try? ProxySecret(parsing: hex) else { preconditionFailure("bad demo secret") }
        return Profile(carrier: carrier, secret: secret)
    }

    /// The certificate authority the relay's certificate chains to, as PEM.
    public let caPEM: String
    /// The relay's loopback TLS port.
    public let relayPort: UInt16

    private let loop: EventLoop
    private let relay: TestRelayServer
    private let echo: EchoBackend

    private init(caPEM: String, loop: EventLoop, relay: TestRelayServer, echo: EchoBackend) {
        self.caPEM = caPEM
        self.loop = loop
        self.relay = relay
        self.echo = echo
        relayPort = relay.port
    }

    /// Issues the certificates and starts the relay and the echo backend on a new loop.
    /// Blocks until they listen; call it from a plain thread.
    public static func start() throws -> DemoEnvironment {
        let authority = try TestCertificateAuthority(commonName: "webproxyd demo CA")
        let leaf = try authority.issueLeaf(dnsNames: [host])
        let tls = try TLSContext(server: leaf.serverConfiguration)
        let configuration = TestRelayConfiguration(
            host: try RelayHost(host),
            profiles: profiles.map { RelayProfile(secret: $0.secret, carrierMode: $0.carrier) })
        let loop = try EventLoop(name: "demo-relay")
        do {
            let (relay, echo) = try loop.submitAndWait {
                let echo = try EchoBackend.start(on: loop)
                do {
                    let relay = try TestRelayServer.start(
                        on: loop, listen: .loopbackIPv4(port: 0), configuration: configuration,
                        backends: Array(repeating: echo.localAddress, count: profiles.count), tls: tls)
                    return (relay, echo)
                } catch {
                    echo.stop()
                    throw error
                }
            }
            return DemoEnvironment(caPEM: authority.certificatePEM, loop: loop, relay: relay, echo: echo)
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
        }
    }

    /// Stops the relay and the backend and joins the loop.
    public func stop() {
        try? loop.submitAndWait { [self] in
            relay.stop()
            echo.stop()
        }
        loop.stop()
        loop.waitUntilStopped()
    }
}
