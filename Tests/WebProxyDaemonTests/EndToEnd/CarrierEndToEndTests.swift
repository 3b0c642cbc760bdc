import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

@testable import WebProxyDaemon

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
}
