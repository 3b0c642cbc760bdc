import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestSupport
import WebProxyTestRelay

@testable import WebProxyDaemon
@testable import WebProxySession

/// The whole chain with real parts: local TCP clients → the daemon → real TLS → our test
/// relay → an echo backend, once per carrier. Several streams share one relay session and
/// every byte must come back unchanged.
@Suite(.serialized) struct CarrierEndToEndTests {
    static let streams = 4
    static let bytesPerStream = 512 << 10

    @Test(arguments: CarrierMode.allCases)
    func concurrentStreamsEchoThroughTheDaemon(mode: CarrierMode) async throws {
        let rig = try await EndToEndRig(mode: mode)
        let payloads = testPayloads(count: Self.streams, size: Self.bytesPerStream, seed: UInt64(mode.rawValue.utf8.count))
        let clients = try (0..<Self.streams).map { _ in try #require(rig.connect(timeoutSeconds: 30)) }
        for (client, payload) in zip(clients, payloads) { #expect(client.send(payload)) }
        for (index, (client, payload)) in zip(clients, payloads).enumerated() {
            let echoed = client.receive(count: payload.count)
            #expect(echoed.count == payload.count, "stream \(index) over \(mode): \(echoed.count) bytes came back")
            let intact = echoed == payload
            #expect(intact, "stream \(index) over \(mode): the echo differs")
        }
        // One relay session carries every local connection (never a session per connection).
        let (sessions, connections) = try await rig.harness.withRelay { ($0.sessionCount, $0.connectionsAccepted) }
        #expect(sessions == 1)
        // Over h2 the https carriers need one TLS connection for everything: bridge page,
        // session, every /up and /down. WebSockets add theirs (HTTP/1.1 upgrades).
        if TestCertificateAuthority.testServerALPN.first == "h2", mode == .https || mode == .httpsLanes {
            #expect(connections == 1, "\(mode) opened \(connections) TLS connections")
        }
        for client in clients { client.close() }

        await rig.stop()
        #expect(rig.sessionsUp >= 1)
        rig.expectNoCredentials()
    }

    /// `http2 = no`: the daemon offers HTTP/1.1 only, so even a front that prefers h2 gets
    /// HTTP/1.1, with a connection per parked lane poll.
    @Test func http2OffKeepsTheLanesOnHTTP1Connections() async throws {
        let rig = try await EndToEndRig(mode: .httpsLanes) { $0.http2 = false }
        let payloads = testPayloads(count: 3, size: 64 << 10, seed: 9)
        let clients = try (0..<3).map { _ in try #require(rig.connect(timeoutSeconds: 30)) }
        for (client, payload) in zip(clients, payloads) { #expect(client.send(payload)) }
        for (client, payload) in zip(clients, payloads) { #expect(client.receive(count: payload.count) == payload) }
        let connections = try await rig.harness.withRelay { $0.connectionsAccepted }
        // Lane 0 and the three lanes each park a /down on a connection of their own.
        #expect(connections >= 4, "\(connections) TLS connections")
        for client in clients { client.close() }
        await rig.stop()
    }

    /// With a WebSocket carrier pinned, the socket's TLS connection is dialled as the session
    /// build starts, not after it: while the relay holds each answer 500 ms, it has accepted
    /// that second connection by the time it creates the session (over h2 the page and the
    /// creation share the first), and the upgrade then takes it instead of dialling a third.
    /// Over HTTP/1.1 the bootstrap's own count of connections is not fixed, so the test
    /// runs over h2 only.
    @Test(arguments: [CarrierMode.websocket, .websocketLanes])
    func aPinnedWebSocketCarrierDialsItsSocketWhileTheSessionIsBuilt(mode: CarrierMode) async throws {
        guard TestCertificateAuthority.testServerALPN.first == "h2" else { return }
        let harness = try await RelayServerHarness(mode: mode)
        try await harness.withRelay { $0.faults.responseDelay = .milliseconds(500) }
        let rig = try await EndToEndRig(mode: mode, harness: harness) {
            $0.carrier = try #require(CarrierChoice(rawValue: mode.rawValue))
        }
        var atCreation = (sessions: 0, connections: 0)
        for _ in 0..<2000 where atCreation.sessions == 0 {
            atCreation = try await harness.withRelay { ($0.sessionCount, $0.connectionsAccepted) }
            if atCreation.sessions == 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(atCreation.sessions == 1)
        #expect(atCreation.connections == 2, "\(atCreation.connections) connections when the session was created")
        try rig.expectIntactEcho(streams: 1, bytesPerStream: 32 << 10, seed: 0x5a, within: .seconds(30), "\(mode)")
        if mode == .websocket {
            let connections = try await harness.withRelay { $0.connectionsAccepted }
            #expect(connections == 2, "the upgrade dialled its own: \(connections) connections")
        }
        await rig.stop()
        rig.expectNoCredentials()
    }
}
