#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore
import WebProxyDaemon
import WebProxyTestRelay
import WebProxyTestSupport

/// `webproxyd-demo`: the real daemon in front of our in-process test relay, traffic through
/// every carrier, and a table of what was measured.
///
/// It is its own executable so that the installed `webproxyd` links no test code: only this
/// target joins the daemon (`WebProxyDaemon`) to the test relay (`WebProxyTestRelay`). The
/// relay set-up and the workload live in `WebProxyTestRelay` so the tests run the same code.
enum DemoCommand {
    static let help = """
        USAGE: webproxyd-demo [--bytes SIZE] [--seconds S] [--round-trips N] [--carrier NAME]

        Start a test relay in this process (real TLS with a throw-away test CA, an echo
        backend, one secret per carrier) and the real daemon in front of it, push traffic
        through each carrier from local TCP connections, check every byte that comes back, and
        print throughput and round-trip times. Nothing leaves the machine. Exits 1 if any
        carrier fails.

        OPTIONS:
          --bytes SIZE       Bulk echo per carrier over \(defaultConnections) connections (default 128M; K/M/G = KiB/MiB/GiB).
          --seconds S        End a carrier's bulk echo after S seconds, SIZE reached or not (default 3).
          --round-trips N    \(DemoWorkload.messageBytes)-byte round trips per carrier (default 200).
          --carrier NAME     Run one carrier: \(CarrierMode.allCases.map(\.rawValue).joined(separator: ", ")).
          --help             Show this help.
        """

    static let defaultConnections = 4

    /// Runs the demo and returns the process exit status.
    static func run(
        arguments: [String], output: TextSink = .standardOutput, errors: TextSink = .standardError
    ) -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            output.write(help + "\n")
            return CommandLineTool.ExitCode.success
        }
        let options: DemoOptions
        do {
            options = try DemoOptions(parsing: arguments)
        } catch {
            errors.write("webproxyd-demo: \(error)\n\n" + help + "\n")
            return CommandLineTool.ExitCode.usage
        }
        do {
            return try runDemo(options, output: output, errors: errors)
        } catch {
            errors.write("webproxyd-demo: \(error)\n")
            return CommandLineTool.ExitCode.failure
        }
    }

    private static func runDemo(_ options: DemoOptions, output: TextSink, errors: TextSink) throws -> Int32 {
        let profiles = DemoEnvironment.profiles.filter { options.carrier == nil || $0.carrier == options.carrier }
        let environment = try DemoEnvironment.start()
        defer { environment.stop() }
        let log = MemoryLogBackend()
        let daemon = try startDaemon(
            for: profiles, relayPort: environment.relayPort, caPEM: environment.caPEM, log: log)
        let listeners = daemon.listenAddresses()
        let workload = DemoWorkload(
            bulkBytes: options.bulkBytes, connections: defaultConnections, bulkTimeLimit: options.bulkTimeLimit,
            roundTrips: options.roundTrips)

        output.write(DemoTable.header(workload: workload))
        var failures: [(CarrierMode, DemoFailure)] = []
        for profile in profiles {
            let report: DemoCarrierReport
            if let port = listeners[profile.carrier.rawValue]?.port {
                report = workload.run(port: port)
            } else {
                report = DemoCarrierReport(failure: DemoFailure("the daemon has no listener for this carrier"))
            }
            output.write(DemoTable.row(profile.carrier, report))
            if let failure = report.failure { failures.append((profile.carrier, failure)) }
        }
        daemon.requestStop()
        _ = daemon.waitUntilStopped()

        guard failures.isEmpty else {
            for (carrier, failure) in failures { errors.write("webproxyd-demo: \(carrier) failed: \(failure)\n") }
            let problems = log.records.filter { $0.level >= .warning }.suffix(10)
            if !problems.isEmpty {
                errors.write("The daemon's last warnings:\n")
                for record in problems { errors.write("  " + StandardErrorLogBackend.line(for: record)) }
            }
            return CommandLineTool.ExitCode.failure
        }
        let carriers = profiles.count == 1 ? "the carrier" : "all \(profiles.count) carriers"
        output.write("Every byte came back unchanged through \(carriers).\n")
        return CommandLineTool.ExitCode.success
    }

    /// Starts the daemon with one relay section per carrier, each on its own loopback
    /// listener, trusting the demo CA and dialing the relay's loopback port.
    private static func startDaemon(
        for profiles: [DemoEnvironment.Profile], relayPort: UInt16, caPEM: String, log: MemoryLogBackend
    ) throws -> Daemon {
        let caFile = try DemoTemporaryFile(contents: caPEM)
        // The daemon reads the CA file while it starts; it is not needed after that.
        defer { caFile.remove() }
        var relays: [RelayConfiguration] = []
        for profile in profiles {
            relays.append(RelayConfiguration(
                name: profile.carrier.rawValue, host: try RelayHost(DemoEnvironment.host), basePath: nil,
                secret: profile.secret, listen: try ListenAddress(parsing: "127.0.0.1:\(try freeLoopbackPort())"),
                carrier: CarrierChoice(rawValue: profile.carrier.rawValue) ?? .follow, caFile: caFile.path,
                connectTo: try HostAndPort(parsing: "127.0.0.1:\(relayPort)")))
        }
        let daemon = try Daemon(
            configuration: DaemonConfiguration(relays: relays), configurationPath: nil, environment: [:],
            logger: Logger(backend: log, level: .info).redacting(profiles.map(\.secret)))
        try daemon.start()
        return daemon
    }

    /// A loopback port nothing listens on now (the daemon's listen address needs a number).
    private static func freeLoopbackPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DemoFailure("cannot create a socket (errno \(errno))") }
        defer { close(fd) }
        guard let port = bindLoopback(fd) else {
            throw DemoFailure("cannot find a free loopback port (errno \(errno))")
        }
        return port
    }
}
