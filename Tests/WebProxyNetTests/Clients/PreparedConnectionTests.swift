import Testing
import WebProxyTestSupport

@testable import WebProxyNet

@Suite("PreparedConnection: a TLS connection dialled ahead for the next WebSocket upgrade")
struct PreparedConnectionTests {
    /// A WebSocket echo server that records the number of the connection each upgrade came on.
    private static func server(
        on loop: EventLoop, tls: ClientTLS, idleTimeout: Duration = .seconds(120), upgrades: @escaping (Int) -> Void
    ) throws -> HTTPServer {
        let echo = webSocketEchoHandler()
        return try startTestServer(
            on: loop, context: tls.server, configuration: HTTPServer.Configuration(idleTimeout: idleTimeout)
        ) { request, responder in
            upgrades(request.connectionNumber)
            echo(request, responder)
        }
    }

    private static func upgrade(
        _ server: HTTPServer, loop: EventLoop, resolver: Resolver, tls: ClientTLS, prepared: PreparedConnection?,
        _ completion: @escaping (Bool) -> Void
    ) {
        _ = WebSocketClient.connect(
            to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver, loop: loop,
            configuration: WebSocketClient.Configuration(target: "/ws", subprotocol: "relay.v1"), prepared: prepared
        ) { result in
            if case .success(let endpoint) = result { endpoint.abort() }
            completion((try? result.get()) != nil)
        }
    }

    @Test func anUpgradeTakesTheHeldConnectionAndTheNextDialsItsOwn() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (first, second, preparedAfter): ([Int], [Int], Bool) = try await onLoop(loop) { done in
                var connections: [Int] = []
                let server = try Self.server(on: loop, tls: tls) { connections.append($0) }
                let prepared = PreparedConnection(loop: loop)
                prepared.prepare(to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver)
                when(loop, { prepared.isHolding }) {
                    Self.upgrade(server, loop: loop, resolver: resolver, tls: tls, prepared: prepared) { upgraded in
                        let first = upgraded ? connections : []
                        let preparedAfter = prepared.isPrepared
                        Self.upgrade(server, loop: loop, resolver: resolver, tls: tls, prepared: prepared) { upgraded in
                            done((first, upgraded ? connections : [], preparedAfter))
                        }
                    }
                }
            }
            // The upgrade went over the one connection dialled ahead; taken, it is gone, so
            // the next upgrade dials a second.
            #expect(first == [1])
            #expect(!preparedAfter)
            #expect(second == [1, 2])
        }
    }

    @Test func anUpgradeWaitsForThePreparedDialUnderWay() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (connections, preparedAfter): ([Int], Bool) = try await onLoop(loop) { done in
                var connections: [Int] = []
                let server = try Self.server(on: loop, tls: tls) { connections.append($0) }
                let prepared = PreparedConnection(loop: loop)
                prepared.prepare(to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver)
                Self.upgrade(server, loop: loop, resolver: resolver, tls: tls, prepared: prepared) { upgraded in
                    done((upgraded ? connections : [], prepared.isPrepared))
                }
            }
            // Had the upgrade dialled beside it, the prepared connection would still be held.
            #expect(connections == [1])
            #expect(!preparedAfter)
        }
    }

    @Test func aHeldConnectionThePeerClosesIsDroppedAndTheUpgradeDialsAfresh() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let connections: [Int] = try await onLoop(loop) { done in
                var connections: [Int] = []
                // The server closes a connection that sends no request within 300 ms.
                let server = try Self.server(on: loop, tls: tls, idleTimeout: .milliseconds(300)) {
                    connections.append($0)
                }
                let prepared = PreparedConnection(loop: loop)
                prepared.prepare(to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver)
                when(loop, { prepared.isHolding }) {
                    when(loop, { !prepared.isPrepared }) {
                        Self.upgrade(server, loop: loop, resolver: resolver, tls: tls, prepared: prepared) { upgraded in
                            done(upgraded ? connections : [])
                        }
                    }
                }
            }
            #expect(connections == [2])
        }
    }

    @Test func aHeldConnectionIsClosedOnceOlderThanItsMaxAge() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let closed: Bool = try await onLoop(loop) { done in
                let server = try Self.server(on: loop, tls: tls) { _ in }
                let prepared = PreparedConnection(loop: loop, maxAge: .milliseconds(100))
                prepared.prepare(to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver)
                when(loop, { prepared.isHolding }) {
                    when(loop, { !prepared.isPrepared }) { done(true) }
                }
            }
            #expect(closed)
        }
    }

    @Test func aFailedPreparedDialFallsBackToADialOfItsOwn() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let connections: [Int] = try await onLoop(loop) { done in
                var connections: [Int] = []
                let server = try Self.server(on: loop, tls: tls) { connections.append($0) }
                // A port nothing listens on: the prepared dial is refused.
                let nowhere = SecureEndpoint(
                    origin: testOrigin, connectTo: DialTarget(host: "127.0.0.1", port: try closedLoopbackPort())!)
                let prepared = PreparedConnection(loop: loop)
                prepared.prepare(to: nowhere, dialer: SecureDialer(context: tls.client), resolver: resolver)
                Self.upgrade(server, loop: loop, resolver: resolver, tls: tls, prepared: prepared) { upgraded in
                    done(upgraded ? connections : [])
                }
            }
            #expect(connections == [1])
        }
    }
}
