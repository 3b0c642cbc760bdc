import Dispatch
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

/// `webproxyd run` in-process against `StubRelay`: real sockets, real TLS, bounded waits.
@Suite(.serialized) struct DaemonRunTests {
    static let secretHex = "000102030405060708090a0b0c0d0e0f"
    static let link = "tg://webproxy?server=\(StubRelay.host)&secret=\(secretHex)"

    /// Everything the log must never contain for this relay.
    static var credentials: [String] {
        let secret = try! ProxySecret(parsing: secretHex)
        let capability = Capability.derive(secret: secret, host: try! RelayHost(StubRelay.host), basePath: nil)
        return [secretHex, capability.urlSafeValue, StubRelay.bootstrap, StubRelay.sessionToken, link]
    }

    static func expectNoCredentials(in backend: MemoryLogBackend) {
        let lines = backend.records.map { StandardErrorLogBackend.line(for: $0) }
        for line in lines {
            for credential in credentials { #expect(!line.contains(credential), "log line leaks a credential: \(line)") }
        }
    }

    @Test func runLinkEchoesBytesThroughTheHTTPSCarrier() throws {
        let relay = try StubRelay()
        defer { relay.shutdown() }
        let caPath = temporaryFile(named: "ca.pem", relay.authority.certificatePEM)
        let listenPort = unusedLoopbackPort()
        let backend = MemoryLogBackend()
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var daemon: Daemon?
        nonisolated(unsafe) var status: Int32 = -1
        let arguments = [
            "run", "--link", Self.link, "--listen", "127.0.0.1:\(listenPort)", "--ca-file", caPath,
            "--connect-to", "127.0.0.1:\(relay.port)",
        ]
        let errors = Capture()
        DispatchQueue.global().async {
            status = CommandLineTool.run(
                arguments: arguments, output: Capture().sink, errors: errors.sink, environment: [:],
                logBackend: backend, started: { running in
                    daemon = running
                    started.signal()
                })
            started.signal()
            finished.signal()
        }
        try #require(started.wait(timeout: .now() + .seconds(10)) == .success)
        let running = try #require(daemon, "run failed: \(errors.value)")

        let client = try #require(BlockingClient(port: listenPort))
        defer { client.close() }
        let message = Array("0123456789abcdef".utf8) + (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        #expect(client.send(message))
        #expect(client.receive(count: message.count) == message)
        // A second exchange on the same stream: credit came back and the cursor advanced.
        #expect(client.send(Array("again".utf8)))
        #expect(client.receive(count: 5) == Array("again".utf8))

        running.requestStop()
        try #require(finished.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(status == 0)
        #expect(client.waitForClose())
        #expect(relay.deleteCount == 1)
        let events = backend.records.compactMap(\.fields.event)
        #expect(events.contains(.sessionUp))
        Self.expectNoCredentials(in: backend)
    }

    @Test func unreachableRelayClosesLocalConnections() throws {
        let caAuthority = try TestCertificateAuthority()
        let caPath = temporaryFile(named: "ca-unreachable.pem", caAuthority.certificatePEM)
        let listenPort = unusedLoopbackPort()
        let deadPort = unusedLoopbackPort()
        let relay = try RelayConfiguration(
            quickLink: Self.link, listen: "127.0.0.1:\(listenPort)", caFile: caPath, connectTo: "127.0.0.1:\(deadPort)")
        let backend = MemoryLogBackend()
        var settings = SessionSettings()
        settings.reconnect.localConnectionWait = .milliseconds(300)
        let daemon = try Daemon(
            configuration: DaemonConfiguration(relays: [relay]), configurationPath: nil, environment: [:],
            logger: Logger(backend: backend, level: .debug).redacting([relay.secret]), sessionSettings: settings,
            drainLimit: .seconds(1))
        try daemon.start()
        #expect(daemon.listenAddresses()["default"]?.port == listenPort)

        let client = try #require(BlockingClient(port: listenPort))
        defer { client.close() }
        _ = client.send(Array("hello".utf8))
        #expect(client.waitForClose())

        daemon.requestStop()
        #expect(daemon.waitUntilStopped() == 0)
        let messages = backend.records.map(\.message)
        #expect(messages.contains { $0.contains("no relay session within the wait") })
        Self.expectNoCredentials(in: backend)
    }

    @Test func statusLineSummarisesEachRelay() {
        let up = RelayStatusEntry(
            name: "home", listen: "127.0.0.1:1443", state: .up, carrier: "https", streams: 2, refusedConnections: 0,
            bytesUp: 1536, bytesDown: 3 << 20, sessionsEstablished: 1, reconnects: 0, lastError: nil,
            sideSessions: [.init(role: "media", state: .up, streams: 1), .init(role: "transfer", state: .down, streams: 0)])
        let down = RelayStatusEntry(
            name: "work", listen: "127.0.0.1:1444", state: .down, carrier: nil, streams: 1, refusedConnections: 0,
            bytesUp: 0, bytesDown: 12, sessionsEstablished: 0, reconnects: 1,
            lastError: .init(class: "unreachable", message: "connection refused", secondsAgo: 3, at: "2026-12-04T21:00:00Z"))
        #expect(
            StatusReporter.text(for: [up, down])
                == "home: up (https), 2 streams, 1.5 KiB up, 3.0 MiB down, transfer session down; work: down, 1 stream, 0 B up, 12 B down, last error: unreachable"
        )
        #expect(StatusReporter.text(for: []) == "no relays")
    }
}
