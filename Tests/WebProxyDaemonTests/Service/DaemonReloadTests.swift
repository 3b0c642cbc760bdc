#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyNet
import WebProxyTestSupport

@testable import WebProxyDaemon

/// Reload (as SIGHUP does it): added relays start, unchanged ones keep running, a bad file
/// keeps the running configuration and says why.
@Suite(.serialized) struct DaemonReloadTests {
    static func relaySection(_ name: String, port: UInt16) -> String {
        """
        [relay \(name)]
        link = tg://webproxy?server=proxy.example.com&secret=000102030405060708090a0b0c0d0e0f
        listen = 127.0.0.1:\(port)
        connect-to = 127.0.0.1:\(unusedLoopbackPort())

        """
    }

    /// Polls `condition` every 20 ms for up to 5 s.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test func reloadStartsAddedRelaysAndKeepsTheOldConfigurationOnErrors() throws {
        let (homePort, workPort) = (unusedLoopbackPort(), unusedLoopbackPort())
        let home = Self.relaySection("home", port: homePort)
        let path = temporaryFile(named: "reload.conf", home)
        let loaded = try DaemonConfiguration.load(path: path, environment: [:])
        let backend = MemoryLogBackend()
        let daemon = try Daemon(
            configuration: loaded.configuration, configurationPath: path, environment: [:],
            logger: Logger(backend: backend), drainLimit: .milliseconds(500))
        try daemon.start()
        #expect(daemon.listenAddresses().mapValues(\.port) == ["home": homePort])

        _ = temporaryFile(named: "reload.conf", home + Self.relaySection("work", port: workPort))
        daemon.requestReload()
        #expect(Self.eventually { daemon.listenAddresses().mapValues(\.port) == ["home": homePort, "work": workPort] })
        #expect(backend.records.contains { $0.message == "reload: 1 added, 0 removed, 0 changed, 1 unchanged" })

        _ = temporaryFile(named: "reload.conf", home + "[relay broken]\nlisten = nowhere\n")
        daemon.requestReload()
        #expect(Self.eventually { backend.records.contains { $0.message.hasPrefix("reload refused, keeping the running configuration: ") } })
        #expect(daemon.listenAddresses().mapValues(\.port) == ["home": homePort, "work": workPort])

        _ = temporaryFile(named: "reload.conf", home)
        daemon.requestReload()
        #expect(Self.eventually { daemon.listenAddresses().mapValues(\.port) == ["home": homePort] })

        daemon.requestStop()
        #expect(daemon.waitUntilStopped() == 0)
    }

    /// `[daemon]` keys apply on reload too: a new `log-level` reaches every relay's logger,
    /// and the metrics endpoint moves, starts or stops, with unchanged relays left running.
    @Test func reloadAppliesTheLogLevelAndTheMetricsAddress() throws {
        let homePort = unusedLoopbackPort()
        let home = Self.relaySection("home", port: homePort)
        let path = temporaryFile(named: "reload-daemon.conf", "[daemon]\nlog-level = warning\n\n" + home)
        let loaded = try DaemonConfiguration.load(path: path, environment: [:])
        let backend = MemoryLogBackend()
        let daemon = try Daemon(
            configuration: loaded.configuration, configurationPath: path, environment: [:],
            logger: Logger(backend: backend, level: loaded.configuration.logLevel), drainLimit: .milliseconds(500))
        try daemon.start()
        #expect(daemon.metricsAddress() == nil)
        #expect(!backend.records.contains { $0.level < .warning }, "records below warning before the reload")

        let metricsPort = unusedLoopbackPort()
        _ = temporaryFile(
            named: "reload-daemon.conf", "[daemon]\nlog-level = debug\nmetrics = 127.0.0.1:\(metricsPort)\n\n" + home)
        daemon.requestReload()
        #expect(Self.eventually { daemon.metricsAddress()?.port == metricsPort })
        #expect(Self.eventually { backend.records.contains { $0.message == "log level is now debug" } })
        #expect(backend.records.contains { $0.message == "reload: 0 added, 0 removed, 0 changed, 1 unchanged" })
        #expect(daemon.listenAddresses().mapValues(\.port) == ["home": homePort])

        _ = temporaryFile(named: "reload-daemon.conf", "[daemon]\nlog-level = debug\n\n" + home)
        daemon.requestReload()
        #expect(Self.eventually { backend.records.contains { $0.message == "metrics are off" } })
        #expect(daemon.metricsAddress() == nil)

        daemon.requestStop()
        #expect(daemon.waitUntilStopped() == 0)
    }
}
