#if canImport(Glibc)
import Glibc
#endif
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
        let harness = try await RelayServerHarness(mode: mode)
        let caPath = temporaryFile(named: "e2e-ca-\(mode.rawValue).pem", harness.caPEM)
        let listenPort = unusedLoopbackPort()
        let link = "tg://webproxy?server=\(RelayServerHarness.host)&secret=\(RelayServerHarness.secret)"
        let relay = try RelayConfiguration(
            quickLink: link, listen: "127.0.0.1:\(listenPort)", caFile: caPath,
            connectTo: "127.0.0.1:\(harness.port)")
        let log = MemoryLogBackend()
        let daemon = try Daemon(
            configuration: DaemonConfiguration(relays: [relay]), configurationPath: nil, environment: [:],
            logger: Logger(backend: log, level: .debug).redacting([relay.secret]), drainLimit: .seconds(2))
        try daemon.start()

        var generator = SplitMix(seed: UInt64(mode.rawValue.utf8.count))
        let payloads = (0..<Self.streams).map { _ in
            (0..<Self.bytesPerStream).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        }
        let clients = try (0..<Self.streams).map { _ in
            try #require(BlockingClient(port: listenPort, timeoutSeconds: 30))
        }
        for (client, payload) in zip(clients, payloads) { #expect(client.send(payload)) }
        for (index, (client, payload)) in zip(clients, payloads).enumerated() {
            let echoed = client.receive(count: payload.count)
            #expect(echoed.count == payload.count, "stream \(index) over \(mode): \(echoed.count) bytes came back")
            #expect(echoed == payload, "stream \(index) over \(mode): the echo differs")
        }
        // One relay session carries every local connection (never a session per connection).
        let sessions = try await harness.withRelay { $0.sessionCount }
        #expect(sessions == 1)
        for client in clients { client.close() }

        daemon.requestStop()
        #expect(daemon.waitUntilStopped() == 0)
        await harness.shutdown()
        #expect(log.records.contains { $0.fields.event == .sessionUp })
        let capability = harness.capability.urlSafeValue
        for record in log.records {
            let line = StandardErrorLogBackend.line(for: record)
            #expect(!line.contains(RelayServerHarness.secret) && !line.contains(capability), "log leaks: \(line)")
        }
    }
}

/// SplitMix64: a small deterministic generator for test payloads.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
