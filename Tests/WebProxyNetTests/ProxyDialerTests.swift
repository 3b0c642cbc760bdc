import Glibc
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

/// A tiny SOCKS5 or HTTP CONNECT proxy for tests, on its own loop. Whatever target it is
/// asked for, it connects to `upstream` (so the client-side name need not resolve) and
/// records what was asked.
final class TestProxy {
    enum Behaviour {
        case socks5(credentials: ProxyCredentials?, reply: UInt8)
        case httpConnect(status: Int, extra: [UInt8])
    }

    let loop: EventLoop
    let upstream: SocketAddress
    let behaviour: Behaviour
    var requests: [[UInt8]] = []
    private(set) var listener: TCPListener?

    init(loop: EventLoop, upstream: SocketAddress, behaviour: Behaviour) throws {
        self.loop = loop
        self.upstream = upstream
        self.behaviour = behaviour
        listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { [self] connection in
            connection.delegate = Session(proxy: self, client: connection)
        }
    }

    var address: SocketAddress { listener!.localAddress }

    /// One client connection: the handshake, then a byte relay both ways.
    final class Session: ByteStreamDelegate {
        let proxy: TestProxy
        let client: TCPConnection
        var buffer: [UInt8] = []
        var stage = 0
        var relay: TCPConnection?

        init(proxy: TestProxy, client: TCPConnection) {
            self.proxy = proxy
            self.client = client
        }

        func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            if let relay {
                try? relay.write(Array(bytes))
                return
            }
            buffer += bytes
            switch proxy.behaviour {
            case .socks5(let credentials, let reply): socks5(credentials: credentials, reply: reply)
            case .httpConnect(let status, let extra): httpConnect(status: status, extra: extra)
            }
        }

        func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
            relay?.shutdownWrite()
            if relay == nil { connection.close() }
        }

        func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
            relay?.close()
        }

        private func socks5(credentials: ProxyCredentials?, reply: UInt8) {
            switch stage {
            case 0:  // greeting
                guard buffer.count >= 2, buffer.count >= 2 + Int(buffer[1]) else { return }
                let methods = buffer[2..<(2 + Int(buffer[1]))]
                buffer.removeFirst(2 + Int(buffer[1]))
                let wanted: UInt8 = credentials == nil ? 0 : 2
                guard methods.contains(wanted) else { return send([5, 0xFF], thenClose: true) }
                stage = credentials == nil ? 2 : 1
                send([5, wanted])
            case 1:  // RFC 1929
                guard buffer.count >= 2, buffer.count >= 3 + Int(buffer[1]) else { return }
                let userLength = Int(buffer[1])
                guard buffer.count >= 3 + userLength + Int(buffer[2 + userLength]) else { return }
                let user = String(decoding: buffer[2..<(2 + userLength)], as: UTF8.self)
                let password = String(decoding: buffer[(3 + userLength)..<(3 + userLength + Int(buffer[2 + userLength]))], as: UTF8.self)
                buffer.removeAll()
                guard user == credentials?.username, password == credentials?.password else {
                    return send([1, 1], thenClose: true)
                }
                stage = 2
                send([1, 0])
            default:  // request
                guard buffer.count >= 5 else { return }
                let length = 4 + (buffer[3] == 3 ? 1 + Int(buffer[4]) : buffer[3] == 1 ? 4 : 16) + 2
                guard buffer.count >= length else { return }
                proxy.requests.append(Array(buffer[..<length]))
                buffer.removeAll()
                guard reply == 0 else { return send([5, reply, 0, 1, 0, 0, 0, 0, 0, 0], thenClose: true) }
                connectUpstream { [self] in send([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]) }
            }
        }

        private func httpConnect(status: Int, extra: [UInt8]) {
            guard let end = buffer.indices.first(where: { buffer[$0...].starts(with: Array("\r\n\r\n".utf8)) }) else { return }
            proxy.requests.append(Array(buffer[..<(end + 4)]))
            buffer.removeAll()
            guard status == 200 else {
                return send(Array("HTTP/1.1 \(status) Nope\r\nContent-Length: 0\r\n\r\n".utf8), thenClose: true)
            }
            connectUpstream { [self] in send(Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8) + extra) }
        }

        private func connectUpstream(then reply: @escaping () -> Void) {
            client.pauseReading()
            _ = TCPConnection.connect(to: proxy.upstream, on: proxy.loop, timeout: .seconds(5)) { [self] result in
                guard case .success(let upstream) = result else { return client.abort() }
                relay = upstream
                upstream.delegate = Forwarder(to: client)
                reply()
                client.resumeReading()
            }
        }

        private func send(_ bytes: [UInt8], thenClose: Bool = false) {
            try? client.write(bytes)
            if thenClose { client.close() }
        }
    }

    /// Copies one direction of the relay.
    final class Forwarder: ByteStreamDelegate {
        let target: TCPConnection

        init(to target: TCPConnection) {
            self.target = target
        }

        func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            try? target.write(Array(bytes))
        }

        func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
            target.shutdownWrite()
        }

        func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
            target.close()
        }
    }
}

/// An echo server counting the connections it accepted (to prove no direct fallback).
final class CountingEcho {
    var accepted = 0
    private(set) var listener: TCPListener?

    init(loop: EventLoop) throws {
        listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { [self] connection in
            accepted += 1
            connection.delegate = EchoDelegate()
        }
    }

    var address: SocketAddress { listener!.localAddress }
}

@Suite struct ProxyDialerTests {
    struct Outcome: Sendable {
        var echoed: [UInt8] = []
        var error: NetError?
        var requests: [[UInt8]] = []
        var directConnections = 0
    }

    /// Starts an echo target and a test proxy on a proxy loop, dials `targetName` through the
    /// proxy from a client loop, sends "ping", and reports what happened.
    func run(
        _ behaviour: TestProxy.Behaviour, targetName: String = "relay.invalid",
        proxyFor: @escaping @Sendable (SocketAddress) -> UpstreamProxy
    ) async throws -> Outcome {
        let resolver = try Resolver()
        defer { resolver.shutdown() }
        return try await withLoop("proxy-loop") { proxyLoop in
            let setup = try await onLoop(proxyLoop) { done in
                let echo = try CountingEcho(loop: proxyLoop)
                let proxy = try TestProxy(loop: proxyLoop, upstream: echo.address, behaviour: behaviour)
                done(LoopBound((echo, proxy), loop: proxyLoop))
            }
            let proxyAddress: SocketAddress = try await onLoop(proxyLoop) { done in done(setup.value.1.address) }
            let echoPort: UInt16 = try await onLoop(proxyLoop) { done in done(setup.value.0.address.port) }
            var outcome = try await withLoop("client-loop") { loop in
                try await onLoop(loop) { (done: @escaping (Outcome) -> Void) in
                    let dialer = Dialer(proxy: proxyFor(proxyAddress), timeout: .seconds(5))
                    let target = DialTarget(host: targetName, port: echoPort)!
                    _ = dialer.dial(target, on: loop, resolver: resolver) { result in
                        switch result {
                        case .failure(let error):
                            done(Outcome(error: error))
                        case .success(let connection):
                            let client = RecordingDelegate()
                            client.onRead = { connection, _ in
                                if client.received.count >= 4 + echoPrefixLength(behaviour) { connection.close() }
                            }
                            client.onClose = { _ in done(Outcome(echoed: client.received)) }
                            connection.delegate = client
                            try? connection.write(Array("ping".utf8))
                        }
                    }
                }
            }
            let (requests, direct) = try await onLoop(proxyLoop) { done in
                done((setup.value.1.requests, setup.value.0.accepted))
            }
            outcome.requests = requests
            outcome.directConnections = direct
            return outcome
        }
    }

    @Test func socks5WithoutAuthenticationSendsTheNameAndRelays() async throws {
        let outcome = try await run(.socks5(credentials: nil, reply: 0)) {
            .socks5(DialTarget(host: $0.ipAddress, port: $0.port)!, credentials: nil)
        }
        #expect(outcome.error == nil)
        #expect(outcome.echoed == Array("ping".utf8))
        let request = try #require(outcome.requests.first)
        // ATYP 3 with the name: the client never resolved "relay.invalid" (it cannot resolve).
        #expect(Array(request[..<5]) == [5, 1, 0, 3, 13])
        #expect(Array(request[5..<18]) == Array("relay.invalid".utf8))
        #expect(outcome.directConnections == 1)  // the proxy's own upstream connection
    }

    @Test func socks5WithUsernameAndPassword() async throws {
        let credentials = ProxyCredentials(username: "alice", password: "s3cret")
        let outcome = try await run(.socks5(credentials: credentials, reply: 0)) {
            .socks5(DialTarget(host: $0.ipAddress, port: $0.port)!, credentials: credentials)
        }
        #expect(outcome.error == nil)
        #expect(outcome.echoed == Array("ping".utf8))
    }

    @Test func socks5RefusalFailsWithoutADirectConnection() async throws {
        let outcome = try await run(.socks5(credentials: nil, reply: 5)) {
            .socks5(DialTarget(host: $0.ipAddress, port: $0.port)!, credentials: nil)
        }
        let error = try #require(outcome.error)
        #expect(error.code == .proxy)
        #expect(error.message == "proxy could not connect: connection refused (REP 5)")
        #expect(outcome.directConnections == 0)
    }

    @Test func socks5WrongPasswordFails() async throws {
        let outcome = try await run(.socks5(credentials: ProxyCredentials(username: "alice", password: "right"), reply: 0)) {
            .socks5(
                DialTarget(host: $0.ipAddress, port: $0.port)!,
                credentials: ProxyCredentials(username: "alice", password: "wrong"))
        }
        #expect(outcome.error?.message == "proxy rejected the username or password")
        #expect(outcome.directConnections == 0)
    }

    @Test func httpConnectRelaysAndKeepsBytesThatFollowTheReply() async throws {
        let outcome = try await run(.httpConnect(status: 200, extra: Array("early:".utf8))) {
            .httpConnect(DialTarget(host: $0.ipAddress, port: $0.port)!, credentials: ProxyCredentials(username: "u", password: "p"))
        }
        #expect(outcome.error == nil)
        #expect(outcome.echoed == Array("early:ping".utf8))
        let request = String(decoding: try #require(outcome.requests.first), as: UTF8.self)
        #expect(request.hasPrefix("CONNECT relay.invalid:"))
        #expect(request.contains("\r\nProxy-Authorization: Basic dTpw\r\n"))
    }

    @Test func httpConnectRefusalFailsWithoutADirectConnection() async throws {
        let outcome = try await run(.httpConnect(status: 403, extra: [])) {
            .httpConnect(DialTarget(host: $0.ipAddress, port: $0.port)!, credentials: nil)
        }
        #expect(outcome.error?.message == "proxy refused CONNECT with status 403")
        #expect(outcome.directConnections == 0)
    }

    @Test func unreachableProxyFailsWithoutADirectConnection() async throws {
        let closedPort = try closedLoopbackPort()
        let outcome = try await run(.socks5(credentials: nil, reply: 0)) { _ in
            .socks5(DialTarget(host: "127.0.0.1", port: closedPort)!, credentials: nil)
        }
        let error = try #require(outcome.error)
        #expect(error.errno == ECONNREFUSED)
        #expect(error.call == "proxy connect")
        #expect(outcome.requests.isEmpty)
        #expect(outcome.directConnections == 0)
    }

    @Test func directDialWithoutAProxyResolvesAndConnects() async throws {
        let resolver = try Resolver()
        defer { resolver.shutdown() }
        try await withLoop { loop in
            let echoed: [UInt8] = try await onLoop(loop) { done in
                let echo = try startEchoServer(on: .loopbackIPv4(port: 0), loop: loop)
                let target = DialTarget(host: "localhost", port: echo.localAddress.port)!
                _ = Dialer().dial(target, on: loop, resolver: resolver) { result in
                    guard case .success(let connection) = result else { return done([]) }
                    let client = RecordingDelegate()
                    client.onClose = { _ in done(client.received) }
                    connection.delegate = client
                    try? connection.write(Array("direct".utf8))
                    connection.shutdownWrite()
                }
            }
            #expect(echoed == Array("direct".utf8))
        }
    }
}

/// Bytes the test proxy injects before the echo.
private func echoPrefixLength(_ behaviour: TestProxy.Behaviour) -> Int {
    if case .httpConnect(_, let extra) = behaviour { extra.count } else { 0 }
}
