#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

/// The real daemon in front of our test relay (real TLS, real sockets, an echo backend), for
/// the end-to-end and fault tests. The daemon runs in-process on its own loop thread.
final class EndToEndRig: @unchecked Sendable {
    let mode: CarrierMode
    let harness: RelayServerHarness
    let daemon: Daemon
    let log: MemoryLogBackend
    let listenPort: UInt16
    let relay: RelayConfiguration
    private var stopped = false

    static var link: String { "tg://webproxy?server=\(RelayServerHarness.host)&secret=\(RelayServerHarness.secret)" }

    /// Starts a relay for `mode` and a daemon pointed at it. `configure` edits the relay's
    /// configuration before the daemon starts (to point it elsewhere or add a proxy).
    init(
        mode: CarrierMode, settings: SessionSettings? = nil, limits: RelayLimits = RelayLimits(),
        drainLimit: Duration = .seconds(2), harness existing: RelayServerHarness? = nil,
        configure: (inout RelayConfiguration) throws -> Void = { _ in }
    ) async throws {
        self.mode = mode
        let harness: RelayServerHarness
        if let existing {
            harness = existing
        } else {
            harness = try await RelayServerHarness(mode: mode, limits: limits)
        }
        self.harness = harness
        let caPath = temporaryFile(named: "e2e-ca-\(mode.rawValue)-\(UInt32.random(in: 0...UInt32.max)).pem", harness.caPEM)
        listenPort = unusedLoopbackPort()
        var relay = try RelayConfiguration(
            quickLink: Self.link, listen: "127.0.0.1:\(listenPort)", caFile: caPath,
            connectTo: "127.0.0.1:\(harness.port)")
        try configure(&relay)
        self.relay = relay
        log = MemoryLogBackend()
        daemon = try Daemon(
            configuration: DaemonConfiguration(relays: [relay]), configurationPath: nil, environment: [:],
            logger: Logger(backend: log, level: .debug).redacting([relay.secret]), sessionSettings: settings,
            drainLimit: drainLimit)
        try daemon.start()
    }

    /// A blocking client of the daemon's listener.
    func connect(timeoutSeconds: Int = 20) -> BlockingClient? {
        BlockingClient(port: listenPort, timeoutSeconds: timeoutSeconds)
    }

    /// How many times the log said `session up`.
    var sessionsUp: Int { log.records.filter { $0.fields.event == .sessionUp }.count }

    /// Waits (bounded) until the log reports `count` sessions up.
    @discardableResult
    func waitForSessionsUp(_ count: Int = 1, within limit: Duration = .seconds(10)) -> Bool {
        waitUntil(within: limit) { self.sessionsUp >= count }
    }

    /// The daemon's log lines, as the journal would get them.
    var lines: [String] { log.records.map { StandardErrorLogBackend.line(for: $0) } }

    /// Stops the daemon (if still running) and the relay; returns how long the daemon took.
    @discardableResult
    func stop() async -> Duration {
        let clock = ContinuousClock()
        let started = clock.now
        if !stopped {
            stopped = true
            daemon.requestStop()
            _ = daemon.waitUntilStopped()
        }
        let took = clock.now - started
        await harness.shutdown()
        return took
    }

    /// Stops only the daemon, returning how long `requestStop` took to finish.
    func stopDaemon() -> Duration {
        let clock = ContinuousClock()
        let started = clock.now
        stopped = true
        daemon.requestStop()
        _ = daemon.waitUntilStopped()
        return clock.now - started
    }

    /// Every log line is free of the secret, the capability, the link, any bridge URL and
    /// anything shaped like a relay token (43 base64url characters).
    func expectNoCredentials(sourceLocation: SourceLocation = #_sourceLocation) {
        let forbidden = [RelayServerHarness.secret, harness.capability.urlSafeValue, Self.link, "bridge=", "tg://"]
        for line in lines {
            for item in forbidden {
                #expect(!line.contains(item), "log leaks a credential: \(line)", sourceLocation: sourceLocation)
            }
            #expect(!containsTokenShape(line), "log holds a token-shaped string: \(line)", sourceLocation: sourceLocation)
        }
    }
}

extension EndToEndRig {
    /// Echoes fresh payloads on `streams` new clients (each connect and the echo bounded by
    /// `limit`) and checks every byte came back once; returns how long that took.
    @discardableResult
    func expectIntactEcho(
        streams: Int, bytesPerStream: Int, seed: UInt64, within limit: Duration, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Duration {
        let started = ContinuousClock.now
        let payloads = testPayloads(count: streams, size: bytesPerStream, seed: seed)
        let clients = try (0..<streams).map { _ in
            try #require(connect(timeoutSeconds: Int(limit.components.seconds)), sourceLocation: sourceLocation)
        }
        defer { for client in clients { client.close() } }
        let outcomes = echo(payloads, over: clients, within: limit)
        for (index, outcome) in outcomes.enumerated() {
            let intact = outcome.received == payloads[index]
            #expect(
                outcome.sentAll && intact, "\(what): stream \(index) got \(outcome.received.count) bytes, intact: \(intact)",
                sourceLocation: sourceLocation)
        }
        return ContinuousClock.now - started
    }

    /// Connects a client and checks a first 32 KiB payload echoes intact; then lets `arm` set
    /// up a fault on the relay, sends a second payload and reads until the connection ends.
    /// The caller closes `client`.
    func faultMidStream(
        seed: UInt64, sourceLocation: SourceLocation = #_sourceLocation,
        arm: @escaping @Sendable (TestRelayServer) -> Void
    ) async throws -> FaultedStream {
        let client = try #require(connect(timeoutSeconds: 10), sourceLocation: sourceLocation)
        let payloads = testPayloads(count: 2, size: 32 << 10, seed: seed)
        #expect(client.send(payloads[0]), sourceLocation: sourceLocation)
        #expect(client.receive(count: payloads[0].count) == payloads[0], sourceLocation: sourceLocation)
        do {
            try await harness.withRelay(arm)
        } catch {
            client.close()
            throw error
        }
        let sent = ContinuousClock.now
        #expect(client.send(payloads[1]), sourceLocation: sourceLocation)
        return FaultedStream(client: client, payload: payloads[1], sent: sent, outcome: client.receiveUntilClosed())
    }
}

/// A local connection whose second payload was sent after a relay fault was armed.
struct FaultedStream {
    let client: BlockingClient
    /// The payload sent after the fault was armed.
    let payload: [UInt8]
    /// When it was sent.
    let sent: ContinuousClock.Instant
    /// What came back before the connection ended (or the read gave up).
    let outcome: (bytes: [UInt8], closed: Bool)
}

/// Whether `text` holds a run of 43 or more base64url characters (a relay token's shape).
func containsTokenShape(_ text: String) -> Bool {
    var run = 0
    for byte in text.utf8 {
        let isBase64URL =
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x2D || byte == 0x5F
        run = isBase64URL ? run + 1 : 0
        if run >= 43 { return true }
    }
    return false
}

/// Polls `condition` every 10 ms until it holds or `limit` passed.
@discardableResult
func waitUntil(within limit: Duration, _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while clock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A value computed on a thread of its own (not Swift's pool), waited for with a bound.
final class BackgroundWork<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> T) {
        Thread.detachNewThread { [self] in
            let result = body()
            value.withLock { $0 = result }
            done.signal()
        }
    }

    /// The value, or nil if the thread is still running after `limit`.
    func wait(within limit: Duration) -> T? {
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        done.signal()
        return value.withLock { $0 }
    }
}

/// What one echo exchange saw.
struct EchoOutcome: Sendable {
    var sentAll: Bool
    var received: [UInt8]
}

/// Sends each payload on its client from one thread while reading the echo on another, so
/// neither direction waits for the other; returns what each client got back.
func echo(_ payloads: [[UInt8]], over clients: [BlockingClient], within limit: Duration = .seconds(30)) -> [EchoOutcome] {
    let count = clients.count
    let outcomes = onThreads(2 * count, within: limit) { index -> EchoOutcome in
        let client = clients[index % count]
        let payload = payloads[index % count]
        if index < count { return EchoOutcome(sentAll: client.send(payload), received: []) }
        return EchoOutcome(sentAll: true, received: client.receive(count: payload.count))
    }
    return (0..<count).map { index in
        EchoOutcome(
            sentAll: outcomes[index]?.sentAll ?? false, received: outcomes[index + count]?.received ?? [])
    }
}

/// Deterministic payloads of `size` bytes each (SplitMix64 words, fast in debug builds).
func testPayloads(count: Int, size: Int, seed: UInt64) -> [[UInt8]] {
    var generator = SplitMix64(seed: seed)
    return (0..<count).map { _ in
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { generator.fill($0) }
        return bytes
    }
}

/// A duration in milliseconds, for the test output.
func milliseconds(_ duration: Duration) -> Int {
    Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
}
