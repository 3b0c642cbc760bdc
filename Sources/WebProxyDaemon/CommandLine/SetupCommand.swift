#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore

/// `webproxyd setup`: from a WEB proxy link to a running service in one command. It checks
/// the relay first and writes nothing if a stage fails; then it writes the secret as a
/// root-only systemd credential, the configuration and the drop-in that loads the
/// credential, and enables and (re)starts the service.
enum SetupCommand {
    static let help = """
        USAGE: webproxyd setup [LINK] [--name NAME] [--listen HOST:PORT] [--config FILE]
                               [--replace] [--no-start] [--ca-file PEM] [--connect-to HOST:PORT]
                               [--proxy URL] [--pin-sha256 PINS] [--carrier MODE]

        Configure the service for one relay, check it stage by stage, start it, and print the
        tg://proxy link for Telegram. Run as root. Without LINK (or with -) the link is read
        from standard input, without echo on a terminal, so it stays out of shell history.

        OPTIONS:
          --name NAME            The relay's name in the configuration and logs (default home).
          --listen HOST:PORT     Where Telegram connects (default 127.0.0.1:8443, or a free
                                 loopback port if that one is taken).
          --config FILE          The configuration file to write (default \(DaemonConfiguration.defaultPath)).
          --replace              Replace a configuration that setup did not write; the old one is
                                 kept as FILE.before-setup.
          --no-start             Write the files, but do not enable or start the service.
          --ca-file, --connect-to, --proxy, --pin-sha256, --carrier
                                 Written as the keys of the same names (see webproxyd.conf(5)).
          --help                 Show this help.
        """

    /// Where setup writes. Tests point it at a scratch directory.
    struct Paths {
        var credentialStore = "/etc/credstore"
        var dropIn = "/etc/systemd/system/webproxyd.service.d/50-webproxyd-setup.conf"
        /// Configurations setup may replace without --replace: the shipped examples.
        var examples = [
            "/usr/share/doc/webproxyd/examples/webproxyd.conf.example", "/etc/webproxyd/webproxyd.conf.example",
        ]
        /// Where systemd keeps its runtime state; absent when systemd is not PID 1.
        var systemdRuntime = "/run/systemd/system"
    }

    /// The first line of every configuration setup writes.
    static let marker = "# Written by webproxyd setup."
    static let defaultPort: UInt16 = 8443
    static let options = Set(["--name", "--listen", "--config"] + RelayConfiguration.quickOptionalFlags)
    static let flags: Set<String> = ["--replace", "--no-start"]

    static func run(
        _ arguments: [String], output: TextSink, errors: TextSink, environment: [String: String],
        paths: Paths = Paths(), readLink: (TextSink) -> String? = readLinkFromStandardInput
    ) -> Int32 {
        var arguments = arguments
        var givenLink: String?
        if let first = arguments.first, first == "-" || !first.hasPrefix("-") {
            givenLink = first == "-" ? nil : first
            arguments.removeFirst()
        }
        let values: [String: String]
        switch CommandLineTool.parse(
            arguments, command: "setup", help: help, allowed: options, flags: flags, output: output, errors: errors)
        {
        case .run(let parsed): values = parsed
        case .exit(let status): return status
        }
        guard let link = givenLink ?? readLink(errors), !link.isEmpty else {
            return usage("no link was given", errors)
        }
        let name = values["--name"] ?? "home"
        let configPath = values["--config"] ?? DaemonConfiguration.defaultPath
        let existing = readText(configPath)
        if let existing, !mayReplace(existing, paths: paths), values["--replace"] == nil {
            errors.write("""
                webproxyd setup: \(configPath) was not written by setup; nothing was changed.
                Edit it by hand, or pass --replace to replace it (it is kept as \(configPath).before-setup).

                """)
            return CommandLineTool.ExitCode.config
        }

        // The relay from the link and flags; the parser checks the name and every value.
        let listen = values["--listen"]
            ?? previousListen(existing, paths: paths)
            ?? "127.0.0.1:\(isFreeLoopbackPort(defaultPort) ? defaultPort : anyFreeLoopbackPort())"
        var relay: RelayConfiguration
        do {
            relay = try RelayConfiguration(quickLink: link, listen: listen, flags: values)
            relay.name = name
            _ = try DaemonConfiguration.parse(
                configurationText(relay, values: values, secretLine: "secret = \(relay.secret.hex)"),
                file: "setup", environment: [:])
        } catch {
            errors.write(error.description + "\n")
            return CommandLineTool.ExitCode.config
        }

        let status = CheckCommand.check(relay, output: output, errors: errors)
        guard status == CommandLineTool.ExitCode.success else {
            errors.write("webproxyd setup: the relay failed the check above; nothing was changed\n")
            return status
        }

        let credential = "webproxyd." + name
        do {
            try makeDirectory(paths.credentialStore, mode: 0o700)
            try writeFile(paths.credentialStore + "/" + credential, relay.secret.hex + "\n", mode: 0o600)
            if let existing, !mayReplace(existing, paths: paths) {
                try writeFile(configPath + ".before-setup", existing, mode: 0o644)
            }
            try writeFile(
                configPath, configurationText(relay, values: values, secretLine: "secret-credential = \(credential)"),
                mode: 0o644)
            try makeDirectory(String(paths.dropIn[..<(paths.dropIn.lastIndex(of: "/") ?? paths.dropIn.startIndex)]), mode: 0o755)
            try writeFile(paths.dropIn, "# Written by webproxyd setup: the secret of relay '\(name)'.\n[Service]\nLoadCredential=\(credential)\n", mode: 0o644)
        } catch {
            errors.write("webproxyd setup: \(error.message)\n")
            return CommandLineTool.ExitCode.failure
        }
        // What the service will read, read back the way it will read it.
        guard CommandLineTool.loadConfiguration(
            path: configPath, environment: ["CREDENTIALS_DIRECTORY": paths.credentialStore], errors: errors) != nil
        else {
            return CommandLineTool.ExitCode.config
        }
        output.write("wrote \(configPath), \(paths.credentialStore)/\(credential) (root only) and \(paths.dropIn)\n")

        if values["--no-start"] != nil {
            output.write("not started (--no-start): systemctl enable --now webproxyd\n")
        } else if access(paths.systemdRuntime, F_OK) != 0 {
            output.write("systemd is not running here; start the daemon with: webproxyd run --config \(configPath)\n")
        } else {
            for step in [["daemon-reload"], ["enable", "webproxyd.service"], ["restart", "webproxyd.service"]] {
                guard systemctl(step, environment: environment, errors: errors) else {
                    errors.write("webproxyd setup: see journalctl -u webproxyd and systemctl status webproxyd\n")
                    return CommandLineTool.ExitCode.failure
                }
            }
            output.write("webproxyd is running and starts at boot\n")
        }
        output.write("""

            Add this proxy to Telegram (the link holds the secret: share it with no one):
            \(LinkCommand.localLink(relay))

            \(CommandLineTool.telegramDesktopSteps)
            Or let webproxyd hand it to Telegram Desktop: sudo webproxyd link --open

            """)
        return CommandLineTool.ExitCode.success
    }

    // MARK: - The files

    static func configurationText(_ relay: RelayConfiguration, values: [String: String], secretLine: String) -> String {
        var lines = [
            marker + " Every key is explained in webproxyd.conf(5).",
            "# The secret is not in this file: it is a systemd credential (see the drop-in",
            "# webproxyd.service.d/50-webproxyd-setup.conf).",
            "[relay \(relay.name)]",
            "host = \(relay.host.name)",
        ]
        if let basePath = relay.basePath { lines.append("base-path = \(basePath.value)") }
        lines.append(secretLine)
        lines.append("listen = \(relay.listen)")
        for (flag, key) in [("--carrier", "carrier"), ("--ca-file", "ca-file"), ("--pin-sha256", "pin-sha256"),
                            ("--connect-to", "connect-to"), ("--proxy", "proxy")]
        {
            if let value = values[flag] { lines.append("\(key) = \(value)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A configuration setup wrote, or a shipped example, may be replaced without asking.
    static func mayReplace(_ text: String, paths: Paths) -> Bool {
        text.hasPrefix(marker) || paths.examples.contains { readText($0) == text }
    }

    /// The listen address of the relay a previous setup configured, so that re-running
    /// setup keeps the link Telegram already has.
    static func previousListen(_ existing: String?, paths: Paths) -> String? {
        guard let existing, existing.hasPrefix(marker) else { return nil }
        let loaded = try? DaemonConfiguration.parse(
            existing, file: "previous", environment: ["CREDENTIALS_DIRECTORY": paths.credentialStore])
        return loaded?.configuration.relays.first.map { $0.listen.description }
    }

    struct FileError: Error {
        let message: String
    }

    static func makeDirectory(_ path: String, mode: mode_t) throws(FileError) {
        guard mkdir(path, mode) == 0 || errno == EEXIST else {
            throw FileError(message: "cannot create \(path): \(String(cString: strerror(errno))) (run setup as root)")
        }
    }

    /// Writes through a temporary file and a rename, so a reader sees the old or the new
    /// file, never half of one; the mode is set before any byte is written.
    static func writeFile(_ path: String, _ text: String, mode: mode_t) throws(FileError) {
        let temporary = path + ".setup-new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else {
            throw FileError(message: "cannot write \(path): \(String(cString: strerror(errno))) (run setup as root)")
        }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0 && fchmod(fd, mode) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw FileError(message: "cannot write \(path): \(reason)")
        }
    }

    static func readText(_ path: String) -> String? {
        try? SmallFile(path: path, limit: 1 << 20, what: "file").text
    }

    // MARK: - The system

    static func isFreeLoopbackPort(_ port: UInt16) -> Bool { bindLoopback(port) != nil }

    static func anyFreeLoopbackPort() -> UInt16 { bindLoopback(0) ?? defaultPort }

    /// Binds 127.0.0.1:`port` and releases it; the bound port, or nil if it is taken.
    private static func bindLoopback(_ port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : nil
    }

    private static func systemctl(_ arguments: [String], environment: [String: String], errors: TextSink) -> Bool {
        guard let program = ExternalProgram("systemctl", environment: environment) else {
            errors.write("webproxyd setup: systemctl is not installed\n")
            return false
        }
        // restart waits for READY=1, which follows the first relay session or its failure.
        switch program.run(arguments, environment: environment, patience: .seconds(120)) {
        case .exited(0):
            return true
        case .exited(let status):
            errors.write("webproxyd setup: systemctl \(arguments.joined(separator: " ")) failed (status \(status))\n")
        case .stillRunning:
            errors.write("webproxyd setup: systemctl \(arguments.joined(separator: " ")) did not finish in 120 s\n")
        case .failedToStart(let reason):
            errors.write("webproxyd setup: cannot run systemctl: \(reason)\n")
        }
        return false
    }

    /// The link from standard input: on a terminal after a prompt, with echo off.
    static func readLinkFromStandardInput(_ prompt: TextSink) -> String? {
        var saved = termios()
        let terminal = isatty(0) != 0 && tcgetattr(0, &saved) == 0
        if terminal {
            prompt.write("Paste the WEB proxy link (tg://webproxy?… or https://t.me/webproxy?…; it is not shown): ")
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSANOW, &quiet)
        }
        defer {
            if terminal {
                tcsetattr(0, TCSANOW, &saved)
                prompt.write("\n")
            }
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 4096, read(0, &byte, 1) == 1, byte != 0x0A { bytes.append(byte) }
        let text = String(decoding: bytes, as: UTF8.self)
        return String(text.drop { $0 == " " || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\r" }.reversed())
    }

    private static func usage(_ message: String, _ errors: TextSink) -> Int32 {
        errors.write("webproxyd setup: \(message)\n\n\(help)\n")
        return CommandLineTool.ExitCode.usage
    }
}
