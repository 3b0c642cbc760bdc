#if canImport(Glibc)
import Glibc
#endif

/// `webproxyd check`: diagnoses relays stage by stage and exits with the failed stage's code.
enum CheckCommand {
    static let help = """
        USAGE: webproxyd check [--config FILE [--relay NAME]] [--dc N]
               webproxyd check --link LINK [--ca-file PEM] [--connect-to HOST:PORT] [--proxy URL]
                               [--pin-sha256 PINS] [--carrier MODE] [--dc N]

        Diagnose a relay stage by stage with timings: resolve, tcp, tls, bridge (the bridge page),
        session (a test session, deleted at once), carrier (a session started as `run` does) and
        stream (an MTProxy handshake and req_pq_multi through that session). Without --relay,
        every relay of the file is checked. Secrets, tokens and bridge URLs are never printed.

        OPTIONS:
          --config FILE          The configuration file (default \(DaemonConfiguration.defaultPath)).
          --relay NAME           Check only this relay of the file.
          --link LINK            One relay by its WEB proxy link (tg://webproxy?… or https://t.me/webproxy?…).
          --ca-file PEM          Trust these CA certificates instead of the system store, with --link.
          --connect-to HOST:PORT Connect TCP here instead of the relay host, with --link.
          --proxy URL            Reach the relay through socks5://… or http://… (as the file's proxy key), with --link.
          --pin-sha256 PINS      Comma-separated SPKI SHA-256 pins (base64) the relay's chain must match, with --link.
          --carrier MODE         Require this carrier (as the file's carrier key), with --link.
          --dc N                 The DC id of the MTProxy handshake (default 2).
          --help                 Show this help.

        EXIT STATUS:
          0   every stage passed (a backend that echoes the request is reported as a warning)
          10  resolve: the relay host has no address
          11  tcp: no address accepted a connection
          12  tls: handshake, certificate, name or pin failure
          13  bridge: no valid bridge page (wrong secret or host, or not a WEB relay)
          14  session: the relay refused to create a session
          15  carrier: no session on the relay's carrier, or no round trip on it
          16  stream: the stream got no MTProxy answer from a DC
          64  usage error
          78  configuration error
        """

    static let options = Set(["--config", "--relay", "--link", "--dc"] + RelayConfiguration.quickOptionalFlags)

    /// Runs the subcommand on `arguments` (after `check`).
    static func run(_ arguments: [String], output: TextSink, errors: TextSink, environment: [String: String]) -> Int32 {
        let values: [String: String]
        switch CommandLineTool.parse(
            arguments, command: "check", help: help, allowed: options, output: output, errors: errors)
        {
        case .run(let parsed): values = parsed
        case .exit(let status): return status
        }
        var checkOptions = RelayCheck.Options()
        if let dc = values["--dc"] {
            guard let number = Int16(dc), number != 0, (-1000...1000).contains(number) else {
                return usage("--dc needs a DC number such as 2 (negative for media DCs)", errors)
            }
            checkOptions.dc = number
        }
        let relays: [RelayConfiguration]
        if let link = values["--link"] {
            if let conflicting = ["--config", "--relay"].first(where: { values[$0] != nil }) {
                return usage("\(conflicting) cannot be combined with --link", errors)
            }
            do {
                // The listener is replaced by an ephemeral one; this only satisfies the parser.
                relays = [try RelayConfiguration(quickLink: link, listen: "127.0.0.1:1", flags: values)]
            } catch {
                errors.write(error.description + "\n")
                return CommandLineTool.ExitCode.config
            }
        } else {
            if let flag = RelayConfiguration.quickOptionalFlags.first(where: { values[$0] != nil }) {
                return usage("\(flag) needs --link", errors)
            }
            let path = values["--config"] ?? DaemonConfiguration.defaultPath
            let configuration: DaemonConfiguration
            do {
                let loaded = try DaemonConfiguration.load(path: path, environment: environment)
                for warning in loaded.warnings { errors.write("\(warning)\n") }
                configuration = loaded.configuration
            } catch {
                errors.write(error.description + "\n")
                return CommandLineTool.ExitCode.config
            }
            if let name = values["--relay"] {
                guard let relay = configuration.relays.first(where: { $0.name == name }) else {
                    errors.write("webproxyd check: \(path) has no relay '\(name)'\n")
                    return CommandLineTool.ExitCode.config
                }
                relays = [relay]
            } else {
                relays = configuration.relays
            }
        }
        var status = CommandLineTool.ExitCode.success
        for relay in relays {
            if relays.count > 1 { output.write("[relay \(relay.name)]\n") }
            let code = check(relay, options: checkOptions, output: output, errors: errors)
            if status == CommandLineTool.ExitCode.success { status = code }
        }
        return status
    }

    /// Checks one relay, printing a line per stage; returns the exit status of the check.
    static func check(
        _ relay: RelayConfiguration, options: RelayCheck.Options = RelayCheck.Options(), output: TextSink,
        errors: TextSink
    ) -> Int32 {
        let plain = isatty(1) == 0
        output.write("checking \(relay.host.name)\(relay.basePath.map { $0.pathPrefix } ?? "")\n")
        let check: RelayCheck
        do {
            check = try RelayCheck(relay: relay, options: options) { output.write($0.line(plain: plain) + "\n") }
        } catch {
            errors.write("webproxyd check: \(error)\n")
            return CommandLineTool.ExitCode.failure
        }
        return CheckResult.exitCode(of: check.run())
    }

    private static func usage(_ message: String, _ errors: TextSink) -> Int32 {
        errors.write("webproxyd check: \(message)\n\n\(help)\n")
        return CommandLineTool.ExitCode.usage
    }
}
