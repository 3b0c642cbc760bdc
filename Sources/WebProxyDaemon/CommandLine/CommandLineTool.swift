#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore

/// The `webproxyd` command line. `main.swift` only calls `run(arguments:)`, so every
/// subcommand and its exit status can be tested in-process.
public enum CommandLineTool {
    /// Exit statuses from sysexits(3), so scripts and systemd can tell failures apart.
    public enum ExitCode {
        public static let success: Int32 = 0
        public static let failure: Int32 = 1
        public static let usage: Int32 = 64
        public static let config: Int32 = 78
    }

    public static let usage = """
        webproxyd — carry local MTProxy connections to a Telegram WEB proxy relay

        USAGE: webproxyd <subcommand> [options]

        SUBCOMMANDS:
          setup                Configure the service for a relay, check it and start it (as root).
          run                  Serve the relays of a configuration file, or one relay given by flags.
          check-config         Check a configuration file and report every problem.
          link                 Print the tg://proxy link Telegram should use for each relay.
          status               Show the running daemon's relays (--json for the JSON document).
          check                Diagnose a relay stage by stage (exit 10–16 names the failed stage).
          help                 Show this help.
          version              Print the version.

        Every subcommand accepts --help.
        """

    static let runHelp = """
        USAGE: webproxyd run [--config FILE]
               webproxyd run --link LINK --listen HOST:PORT [--ca-file PEM] [--connect-to HOST:PORT]
                             [--proxy URL] [--pin-sha256 PINS] [--carrier MODE]

        Serve until SIGTERM or SIGINT; SIGHUP re-reads the configuration file.

        OPTIONS:
          --config FILE          The configuration file (default \(DaemonConfiguration.defaultPath)).
          --link LINK            One relay, named 'default', by its WEB proxy link (tg://webproxy?… or https://t.me/webproxy?…).
          --listen HOST:PORT     Where Telegram connects (a loopback address), with --link.
          --ca-file PEM          Trust these CA certificates instead of the system store, with --link.
          --connect-to HOST:PORT Connect TCP here instead of the relay host (TLS still checks its name), with --link.
          --proxy URL            Reach the relay through socks5://[user:pass@]host:port or http://…, with --link
                                 (a password here shows in the process list: keep it in the file instead).
          --pin-sha256 PINS      Comma-separated SPKI SHA-256 pins (base64) the relay's chain must match, with --link.
          --carrier MODE         Require https, https-lanes, websocket or websocket-lanes (default: follow the relay), with --link.
          --control-socket PATH  Where `webproxyd status` asks (default: see `webproxyd status --help`).
          --help                 Show this help.
        """

    static let checkConfigHelp = """
        USAGE: webproxyd check-config [--config FILE]

        Check a configuration file. Prints every problem as `file:line: error: message (hint)`
        and exits 78 if there is an error, 0 otherwise.

        OPTIONS:
          --config FILE          The configuration file (default \(DaemonConfiguration.defaultPath)).
          --help                 Show this help.
        """

    static let versionHelp = """
        USAGE: webproxyd version

        Print the version and exit.
        """

    /// Runs the command line and returns the process exit status.
    public static func run(
        arguments: [String], output: TextSink = .standardOutput, errors: TextSink = .standardError,
        environment: [String: String] = ProcessEnvironment.current()
    ) -> Int32 {
        run(arguments: arguments, output: output, errors: errors, environment: environment, logBackend: nil, started: nil)
    }

    /// As `run(arguments:output:errors:environment:)`; tests pass a log backend, and
    /// `started` receives a running daemon (to stop it).
    static func run(
        arguments: [String], output: TextSink, errors: TextSink, environment: [String: String],
        logBackend: (any LogBackend)?, started: ((Daemon) -> Void)?
    ) -> Int32 {
        guard let first = arguments.first else {
            errors.write(usage + "\n")
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        let command: Command
        switch first {
        case "help", "--help", "-h":
            output.write(usage + "\n")
            return ExitCode.success
        case "version", "--version":
            command = .version
        case "run":
            command = .run
        case "check-config":
            command = .checkConfig
        case "setup":
            return SetupCommand.run(rest, output: output, errors: errors, environment: environment)
        case "link":
            return LinkCommand.run(rest, output: output, errors: errors, environment: environment)
        case "status":
            return StatusCommand.run(rest, output: output, errors: errors, environment: environment)
        case "check":
            return CheckCommand.run(rest, output: output, errors: errors, environment: environment)
        case "demo":
            // The demo links the test relay, so it is a program of its own that is never installed.
            errors.write("webproxyd: the demo is its own program: run webproxyd-demo from a source build (see the README)\n")
            return ExitCode.usage
        default:
            // Only a word is echoed: a link or secret typed in place of a subcommand is not.
            let isWord = first.count <= 32 && first.utf8.allSatisfy { (0x61...0x7A).contains($0) || $0 == 0x2D }
            let shown = isWord ? "'\(first)'" : "(not shown: it may hold a secret)"
            errors.write("webproxyd: unknown subcommand \(shown)\n\n" + usage + "\n")
            return ExitCode.usage
        }
        let options: [String: String]
        switch parse(rest, command: command.name, help: command.help, allowed: command.options, output: output, errors: errors) {
        case .run(let parsed): options = parsed
        case .exit(let status): return status
        }
        let context = Invocation(
            options: options, output: output, errors: errors, environment: environment, logBackend: logBackend)
        switch command {
        case .version:
            output.write("webproxyd \(WebProxyDaemon.version)\n")
            return ExitCode.success
        case .run:
            return runDaemon(context, started: started)
        case .checkConfig:
            return checkConfig(context)
        }
    }

    // MARK: Subcommands

    private enum Command {
        case version, run, checkConfig

        var name: String {
            switch self {
            case .version: "version"
            case .run: "run"
            case .checkConfig: "check-config"
            }
        }

        var help: String {
            switch self {
            case .version: versionHelp
            case .run: runHelp
            case .checkConfig: checkConfigHelp
            }
        }

        var options: Set<String> {
            switch self {
            case .version: []
            case .run: Set(["--config", "--link", "--listen", "--control-socket"] + RelayConfiguration.quickOptionalFlags)
            case .checkConfig: ["--config"]
            }
        }
    }

    private struct Invocation {
        let options: [String: String]
        let output: TextSink
        let errors: TextSink
        let environment: [String: String]
        let logBackend: (any LogBackend)?

        var configPath: String { options["--config"] ?? DaemonConfiguration.defaultPath }
    }

    struct UsageError: Error {
        let message: String
    }

    /// What a subcommand's arguments ask for: a run with these options, or an exit with this
    /// status (after `--help`, or a usage error printed with the help).
    enum ParsedArguments {
        case run([String: String])
        case exit(Int32)
    }

    /// Parses a subcommand's arguments: `--help` or `-h` prints `help`; a usage error prints
    /// `webproxyd COMMAND: message` and `help` to `errors`.
    static func parse(
        _ arguments: [String], command: String, help: String, allowed: Set<String>, flags: Set<String> = [],
        output: TextSink, errors: TextSink
    ) -> ParsedArguments {
        if arguments.contains("--help") || arguments.contains("-h") {
            output.write(help + "\n")
            return .exit(ExitCode.success)
        }
        do {
            return .run(try parseOptions(arguments, allowed: allowed, flags: flags))
        } catch {
            errors.write("webproxyd \(command): \(error.message)\n\n\(help)\n")
            return .exit(ExitCode.usage)
        }
    }

    /// `--name VALUE` or `--name=VALUE`, and `--flag` alone for `flags` (its value is ""),
    /// each at most once.
    static func parseOptions(
        _ arguments: [String], allowed: Set<String>, flags: Set<String> = []
    ) throws(UsageError) -> [String: String] {
        var options: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            if flags.contains(argument) {
                guard options.updateValue("", forKey: argument) == nil else {
                    throw UsageError(message: "\(argument) is given twice")
                }
                index += 1
                continue
            }
            guard allowed.contains(name) else {
                // A stray argument is not echoed: it is often a link or secret given without --link.
                throw UsageError(
                    message: argument.hasPrefix("-")
                        ? "unknown option '\(name)'"
                        : "unexpected argument (not shown: it may hold a secret); a value follows its option, as in --link LINK")
            }
            if value == nil {
                index += 1
                guard index < arguments.count else { throw UsageError(message: "\(name) needs a value") }
                value = arguments[index]
            }
            guard options.updateValue(value ?? "", forKey: name) == nil else {
                throw UsageError(message: "\(name) is given twice")
            }
            index += 1
        }
        return options
    }

    /// Loads the file, printing warnings (and errors) to `errors`; nil on error.
    static func loadConfiguration(path: String, environment: [String: String], errors: TextSink) -> DaemonConfiguration? {
        do {
            let loaded = try DaemonConfiguration.load(path: path, environment: environment)
            for warning in loaded.warnings { errors.write("\(warning)\n") }
            return loaded.configuration
        } catch {
            errors.write(error.description + "\n")
            return nil
        }
    }

    private static func load(_ context: Invocation) -> DaemonConfiguration? {
        loadConfiguration(path: context.configPath, environment: context.environment, errors: context.errors)
    }

    private static func checkConfig(_ context: Invocation) -> Int32 {
        guard let configuration = load(context) else { return ExitCode.config }
        let count = configuration.relays.count
        context.output.write("\(context.configPath): OK, \(count) relay\(count == 1 ? "" : "s")\n")
        return ExitCode.success
    }

    static let telegramDesktopSteps = """
        In Telegram Desktop, open the link above, or enter it by hand:
          Settings → Advanced → Connection type → Use custom proxy → MTProxy,
          with the server, port and secret of the link.
        """

    private static func runDaemon(_ context: Invocation, started: ((Daemon) -> Void)?) -> Int32 {
        let options = context.options
        let quick = (["--link", "--listen"] + RelayConfiguration.quickOptionalFlags).filter { options[$0] != nil }
        let configuration: DaemonConfiguration
        let path: String?
        if quick.isEmpty {
            guard let loaded = load(context) else { return ExitCode.config }
            configuration = loaded
            path = context.configPath
        } else {
            guard options["--config"] == nil else {
                context.errors.write("webproxyd run: --config cannot be combined with \(quick[0])\n\n\(runHelp)\n")
                return ExitCode.usage
            }
            guard let link = options["--link"], let listen = options["--listen"] else {
                let missing = options["--link"] == nil ? "--link" : "--listen"
                context.errors.write("webproxyd run: \(missing) is required with \(quick[0])\n\n\(runHelp)\n")
                return ExitCode.usage
            }
            do {
                let relay = try RelayConfiguration(quickLink: link, listen: listen, flags: options)
                configuration = DaemonConfiguration(relays: [relay])
            } catch {
                context.errors.write(error.description + "\n")
                return ExitCode.config
            }
            path = nil
        }
        let backend = context.logBackend ?? Logger.automaticBackend(environment: context.environment)
        var logger = Logger(backend: backend, level: configuration.logLevel)
        logger = logger.redacting(configuration.relays.map(\.secret))
        let daemon: Daemon
        do {
            let activated = context.environment["LISTEN_FDS"] == nil ? [:] : try SocketActivation.listeningSockets()
            daemon = try Daemon(
                configuration: configuration, configurationPath: path, environment: context.environment, logger: logger,
                controlSocketPath: options["--control-socket"] ?? ControlSocketPath.forDaemon(environment: context.environment),
                controlSocketRequired: options["--control-socket"] != nil, activatedSockets: activated)
            try daemon.start()
            try daemon.watchSignals()
        } catch {
            // The log goes to standard error or the journal: the one report of the failure.
            logger.error("cannot start: \(error)")
            return ExitCode.failure
        }
        started?(daemon)
        return daemon.waitUntilStopped()
    }
}

/// Where command output goes: a file descriptor, or a buffer in tests.
public struct TextSink: Sendable {
    private let sink: @Sendable (String) -> Void

    public init(_ sink: @escaping @Sendable (String) -> Void) { self.sink = sink }

    public func write(_ text: String) { sink(text) }

    public static let standardOutput = TextSink { writeAll(fd: 1, $0) }
    public static let standardError = TextSink { writeAll(fd: 2, $0) }

    private static func writeAll(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(n)
        }
    }
}
