import Dispatch
import Foundation
import Glibc
import WebProxyCore
import WebProxyDaemon
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

/// Prints one line at once (stdout may be a pipe, whose stdio buffering would hold lines back).
func say(_ line: String = "") {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Discards the daemon's log (a benchmark must not grow a log in memory).
struct DiscardingLogBackend: LogBackend {
    func write(_ record: LogRecord) {}
}

/// What every path shares: the backend on its own loop, a test CA, TLS contexts.
final class BenchWorld: @unchecked Sendable {
    static let host = "proxy.example.com"
    static let secret = "000102030405060708090a0b0c0d0e0f"

    let backendLoop: EventLoop
    let backend: BenchBackend
    let resolver: Resolver
    /// The relay's and the tunnel front's context: h2 when offered (unless
    /// `WEBPROXY_TEST_HTTP=1.1`), as fronts select it.
    let serverContext: TLSContext
    /// The same certificate, HTTP/1.1 only: the WAN benchmark's HTTP/1.1 rows.
    let http1ServerContext: TLSContext
    let clientContext: TLSContext
    let caPath: String

    init() throws {
        backendLoop = try EventLoop(name: "bench-backend")
        let loop = backendLoop
        backend = try loop.submitAndWait { try BenchBackend.start(on: loop) }
        resolver = try Resolver()
        let authority = try TestCertificateAuthority()
        let leaf = try authority.issueLeaf(dnsNames: [Self.host])
        serverContext = try TLSContext(server: leaf.serverConfiguration)
        var http1 = leaf.serverConfiguration
        http1.alpnProtocols = ["http/1.1"]
        http1ServerContext = try TLSContext(server: http1)
        clientContext = try TLSContext(client: TLSConfiguration.Client(trust: .caPEM(authority.certificatePEM)))
        caPath = "/tmp/webproxyd-bench-\(getpid())-ca.pem"
        let fd = open(caPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = Array(authority.certificatePEM.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    func shutdown() {
        let backend = backend
        _ = try? backendLoop.submitAndWait { backend.stop() }
        backendLoop.stop()
        backendLoop.waitUntilStopped()
        resolver.shutdown()
        unlink(caPath)
    }
}

/// One way from a local client to the backend, up and running.
protocol BenchPath: AnyObject, Sendable {
    /// The name in the report.
    var name: String { get }
    /// Where load clients connect.
    var port: UInt16 { get }
    /// The loop thread whose CPU time is charged to the path ("" for none).
    var entryThreadName: String { get }
    /// What the entry loop has done so far (nil where there is no loop of ours).
    func loopCounters() -> LoopCounters?
    func stop()
}

extension BenchPath {
    func loopCounters() -> LoopCounters? { nil }
}

/// The baseline without any tunnel: clients talk to the backend directly.
final class DirectPath: BenchPath, @unchecked Sendable {
    let name = "direct TCP"
    let port: UInt16
    let entryThreadName = ""
    init(world: BenchWorld) { port = world.backend.localAddress.port }
    func stop() {}
}

/// The plain TLS tunnel baseline (entry and front on their own loops).
final class TunnelPath: BenchPath, @unchecked Sendable {
    let name = "TLS tunnel"
    let entryThreadName = "bench-entry"
    let port: UInt16
    /// When the entry began to listen (`ProcessProbe.now()`).
    let startedAt: Double
    private let frontLoop: EventLoop
    private let entryLoop: EventLoop
    private let front: TCPListener
    private let entry: TCPListener
    private let wan: WANLeg?

    /// With `wan`, a delay line sits between the entry and the front.
    init(world: BenchWorld, wan shape: DelayLine.Shape? = nil) throws {
        frontLoop = try EventLoop(name: "bench-front")
        entryLoop = try EventLoop(name: entryThreadName)
        let (frontLoop, entryLoop) = (frontLoop, entryLoop)
        front = try frontLoop.submitAndWait {
            try TLSTunnel.startFront(on: frontLoop, context: world.serverContext, backend: world.backend.localAddress)
        }
        let frontAddress = front.localAddress
        wan = try shape.map { try WANLeg(to: frontAddress, shape: $0) }
        let endpoint = SecureEndpoint(
            origin: DialTarget(host: BenchWorld.host, port: 443)!,
            connectTo: DialTarget(host: "127.0.0.1", port: wan?.port ?? front.localAddress.port)!)
        let dialer = SecureDialer(dialer: Dialer(timeout: .seconds(5)), context: world.clientContext)
        startedAt = ProcessProbe.now()
        entry = try entryLoop.submitAndWait {
            try TLSTunnel.startEntry(on: entryLoop, dialer: dialer, resolver: world.resolver, front: endpoint)
        }
        port = entry.localAddress.port
    }

    func loopCounters() -> LoopCounters? {
        let entryLoop = entryLoop
        return try? entryLoop.submitAndWait { entryLoop.counters }
    }

    func stop() {
        let (front, entry) = (front, entry)
        _ = try? entryLoop.submitAndWait { entry.close() }
        _ = try? frontLoop.submitAndWait { front.close() }
        entryLoop.stop()
        frontLoop.stop()
        entryLoop.waitUntilStopped()
        frontLoop.waitUntilStopped()
        wan?.stop()
    }
}

/// The real chain: the in-process `Daemon` → real TLS → `TestRelayServer` → backend.
final class DaemonPath: BenchPath, @unchecked Sendable {
    let mode: CarrierMode
    let name: String
    let entryThreadName = "webproxyd"
    let port: UInt16
    let relayLoop: EventLoop
    let relay: TestRelayServer
    let daemon: Daemon
    /// The daemon's metrics endpoint, read as an operator would.
    let metricsPort: UInt16
    /// When the daemon was started (`ProcessProbe.now()`).
    private(set) var startedAt = 0.0
    private let wan: WANLeg?

    /// `http1Only`: the relay selects HTTP/1.1 even when h2 is offered. `pacesUploads`: the
    /// relay key `pace-uploads = yes`. `pinsCarrier`: the relay key `carrier = <mode>` (else
    /// the daemon follows the bridge page). With `wan`, a delay line sits between the daemon
    /// and the relay.
    init(
        world: BenchWorld, mode: CarrierMode, relayLimits: RelayLimits = RelayLimits(), http1Only: Bool = false,
        pacesUploads: Bool = false, pinsCarrier: Bool = false, wan shape: DelayLine.Shape? = nil
    ) throws {
        self.mode = mode
        name = "webproxyd \(mode.rawValue)" + (http1Only ? " (HTTP/1.1)" : "") + (pacesUploads ? " (pace-uploads)" : "")
        relayLoop = try EventLoop(name: "bench-relay")
        let relayLoop = relayLoop
        let host = try RelayHost(BenchWorld.host)
        let profile = RelayProfile(secret: try ProxySecret(parsing: BenchWorld.secret), carrierMode: mode)
        let configuration = TestRelayConfiguration(host: host, profiles: [profile], limits: relayLimits)
        relay = try relayLoop.submitAndWait {
            try TestRelayServer.start(
                on: relayLoop, listen: .loopbackIPv4(port: 0), configuration: configuration,
                backends: [world.backend.localAddress], tls: http1Only ? world.http1ServerContext : world.serverContext)
        }
        let relayPort = relay.port
        wan = try shape.map { try WANLeg(to: .loopbackIPv4(port: relayPort), shape: $0) }
        let listenPort = unusedLoopbackPort()
        let link = "tg://webproxy?server=\(BenchWorld.host)&secret=\(BenchWorld.secret)"
        var relayConfiguration = try RelayConfiguration(
            quickLink: link, listen: "127.0.0.1:\(listenPort)", caFile: world.caPath,
            connectTo: "127.0.0.1:\(wan?.port ?? relay.port)")
        relayConfiguration.paceUploads = pacesUploads
        if pinsCarrier { relayConfiguration.carrier = CarrierChoice(rawValue: mode.rawValue) ?? .follow }
        metricsPort = unusedLoopbackPort()
        daemon = try Daemon(
            configuration: DaemonConfiguration(
                metrics: try ListenAddress(parsing: "127.0.0.1:\(metricsPort)"), logLevel: .warning,
                relays: [relayConfiguration]),
            configurationPath: nil, environment: [:],
            logger: Self.logger(), drainLimit: .seconds(2))
        port = listenPort
        startedAt = ProcessProbe.now()
        try daemon.start()
    }

    func stop() {
        daemon.requestStop()
        _ = daemon.waitUntilStopped()
        let relay = relay
        _ = try? relayLoop.submitAndWait { relay.stop() }
        relayLoop.stop()
        relayLoop.waitUntilStopped()
        wan?.stop()
    }

    /// The daemon's metrics text, read from its endpoint as an operator's scraper reads it.
    func metricsText() -> String? {
        guard let client = BlockingClient(port: metricsPort) else { return nil }
        defer { client.close() }
        guard client.send(Array("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)) else { return nil }
        return String(decoding: client.receive(count: 1 << 20), as: UTF8.self)
    }

    /// The sum of a metric's samples, read from the daemon's metrics endpoint.
    func metric(_ name: String) -> Int? {
        let values = (metricsText() ?? "").split(separator: "\n").filter { $0.hasPrefix(name + "{") }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
        return values.isEmpty ? nil : values.reduce(0, +)
    }

    /// The daemon loop's counters, from its `webproxyd_loop_*` metrics.
    func loopCounters() -> LoopCounters? {
        guard let text = metricsText() else { return nil }
        var samples: [Substring: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("webproxyd_loop_") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Int(parts[1]) { samples[parts[0]] = value }
        }
        func sample(_ name: String, _ direction: String? = nil) -> Int {
            samples[Substring("webproxyd_loop_\(name)_total" + (direction.map { "{direction=\"\($0)\"}" } ?? ""))] ?? 0
        }
        var counters = LoopCounters()
        counters.wakeups = sample("wakeups")
        counters.socketReads = sample("socket_calls", "read")
        counters.socketWrites = sample("socket_calls", "write")
        counters.tlsRecordsReceived = sample("tls_records", "down")
        counters.tlsRecordsSent = sample("tls_records", "up")
        counters.webSocketMessagesReceived = sample("websocket_messages", "down")
        counters.webSocketMessagesSent = sample("websocket_messages", "up")
        return counters
    }

    /// The daemon's log: discarded, or on stderr at the level named by BENCH_LOG (e.g. debug).
    static func logger() -> Logger {
        guard let name = ProcessInfo.processInfo.environment["BENCH_LOG"], let level = LogLevel(rawValue: name) else {
            return Logger(backend: DiscardingLogBackend(), level: .warning)
        }
        return Logger(backend: StandardErrorLogBackend(), level: level)
    }
}
