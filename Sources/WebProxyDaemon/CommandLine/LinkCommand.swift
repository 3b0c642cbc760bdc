#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore

/// `webproxyd link`: the tg://proxy link of each relay, as text, as a QR code, or handed to
/// xdg-open so that Telegram Desktop offers to add the proxy.
enum LinkCommand {
    static let help = """
        USAGE: webproxyd link [--config FILE] [--relay NAME] [--qr] [--open]

        Print, for each relay, the tg://proxy link Telegram should use to reach webproxyd, and
        how to enter it in Telegram Desktop. The links contain the relay's secret.

        OPTIONS:
          --config FILE          The configuration file (default \(DaemonConfiguration.defaultPath)).
          --relay NAME           Only this relay of the file.
          --qr                   Also draw each link as a QR code, for Telegram on a phone that
                                 can reach the listen address (a LAN address, allow-non-loopback).
          --open                 Hand the link to xdg-open: Telegram Desktop offers to add the proxy.
                                 Through sudo, xdg-open runs as the user who called sudo.
          --help                 Show this help.
        """

    static let options: Set<String> = ["--config", "--relay"]
    static let flags: Set<String> = ["--qr", "--open"]

    static func run(_ arguments: [String], output: TextSink, errors: TextSink, environment: [String: String]) -> Int32 {
        let values: [String: String]
        switch CommandLineTool.parse(
            arguments, command: "link", help: help, allowed: options, flags: flags, output: output, errors: errors)
        {
        case .run(let parsed): values = parsed
        case .exit(let status): return status
        }
        let path = values["--config"] ?? DaemonConfiguration.defaultPath
        guard var relays = CommandLineTool.loadConfiguration(path: path, environment: environment, errors: errors)?.relays else {
            return CommandLineTool.ExitCode.config
        }
        if let name = values["--relay"] {
            relays = relays.filter { $0.name == name }
            guard !relays.isEmpty else {
                errors.write("webproxyd link: \(path) has no relay '\(name)'\n")
                return CommandLineTool.ExitCode.config
            }
        }
        if values["--open"] != nil, relays.count > 1 {
            errors.write("webproxyd link: --open takes one relay; choose it with --relay NAME\n")
            return CommandLineTool.ExitCode.usage
        }
        var text = ""
        for relay in relays {
            let link = localLink(relay)
            text += "[relay \(relay.name)]\n" + link + "\n"
            if values["--qr"] != nil {
                guard let code = TerminalQRCode(link) else {
                    errors.write("webproxyd link: the link of relay '\(relay.name)' does not fit in a QR code\n")
                    return CommandLineTool.ExitCode.failure
                }
                text += code.lines(colours: isatty(1) != 0).joined(separator: "\n") + "\n"
                if relay.listen.isLoopback {
                    text += "(\(relay.listen) is a loopback address: only Telegram on this machine can use it)\n"
                }
            }
            text += "\n"
        }
        output.write(text + CommandLineTool.telegramDesktopSteps + "\n")
        if values["--open"] != nil, let relay = relays.first {
            return open(localLink(relay), errors: errors, environment: environment)
        }
        return CommandLineTool.ExitCode.success
    }

    static func localLink(_ relay: RelayConfiguration) -> String {
        ProxyLink.localProxyLink(server: relay.listen.host, port: relay.listen.port, secret: relay.secret)
    }

    /// Hands `link` to xdg-open. Under sudo the desktop belongs to the user who called it,
    /// so xdg-open runs as that user, with the variables that find their session.
    static func open(_ link: String, errors: TextSink, environment: [String: String]) -> Int32 {
        guard let opener = ExternalProgram("xdg-open", environment: environment) else {
            errors.write("webproxyd link: xdg-open is not installed (apt-get install xdg-utils); open the link above by hand\n")
            return CommandLineTool.ExitCode.failure
        }
        var childEnvironment = environment
        var user: (uid: uid_t, gid: gid_t)?
        if geteuid() == 0, let uid = environment["SUDO_UID"].flatMap(uid_t.init), uid != 0,
           let gid = environment["SUDO_GID"].flatMap(gid_t.init)
        {
            user = (uid, gid)
            childEnvironment = desktopEnvironment(of: uid, from: environment)
        }
        switch opener.run([link], environment: childEnvironment, user: user, patience: .seconds(10)) {
        case .exited(0), .stillRunning:
            return CommandLineTool.ExitCode.success
        case .exited(let status):
            let reason = status == 126 ? "could not run as the sudo user" : "exited with status \(status)"
            errors.write("webproxyd link: xdg-open \(reason); open the link above by hand\n")
            return CommandLineTool.ExitCode.failure
        case .failedToStart(let reason):
            errors.write("webproxyd link: cannot start xdg-open: \(reason)\n")
            return CommandLineTool.ExitCode.failure
        }
    }

    /// What a desktop program of user `uid` needs to find its session, kept from sudo's
    /// environment (which keeps DISPLAY, XAUTHORITY and XDG_CURRENT_DESKTOP) or rebuilt.
    static func desktopEnvironment(of uid: uid_t, from environment: [String: String]) -> [String: String] {
        var result: [String: String] = [:]
        for name in ["PATH", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_CURRENT_DESKTOP", "LANG"] {
            result[name] = environment[name]
        }
        if let entry = getpwuid(uid) {
            result["HOME"] = String(cString: entry.pointee.pw_dir)
            result["USER"] = String(cString: entry.pointee.pw_name)
            result["LOGNAME"] = result["USER"]
        }
        let runtime = "/run/user/\(uid)"
        result["XDG_RUNTIME_DIR"] = runtime
        if access(runtime + "/bus", F_OK) == 0 {
            result["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(runtime)/bus"
        }
        return result
    }
}
