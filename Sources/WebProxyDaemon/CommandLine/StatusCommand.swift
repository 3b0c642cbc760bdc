#if canImport(Glibc)
import Glibc
#endif

/// `webproxyd status [--json] [--socket PATH]`: asks the running daemon through its control
/// socket and prints a table, or the JSON document as received.
enum StatusCommand {
    static let help = """
        USAGE: webproxyd status [--json] [--socket PATH]

        Show each relay of the running daemon: state, carrier, streams, refused connections,
        bytes, sessions, reconnects and the last error. Exits 69 if the daemon is not running,
        77 if this user may not use its control socket (try sudo).

        OPTIONS:
          --json                 Print the daemon's JSON document instead of the table.
          --socket PATH          The control socket (default: $RUNTIME_DIRECTORY/control.sock,
                                 else /run/webproxyd/control.sock, else $XDG_RUNTIME_DIR/webproxyd/control.sock).
          --help                 Show this help.
        """

    static func run(_ arguments: [String], output: TextSink, errors: TextSink, environment: [String: String]) -> Int32 {
        var json = false
        var socket: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--help", "-h":
                output.write(help + "\n")
                return CommandLineTool.ExitCode.success
            case "--json" where !json:
                json = true
            case "--socket" where socket == nil && index + 1 < arguments.count:
                index += 1
                socket = arguments[index]
            case _ where argument.hasPrefix("--socket=") && socket == nil:
                socket = String(argument.dropFirst("--socket=".count))
            default:
                // Not echoed whole: a stray argument may be a link or secret.
                let shown = argument.hasPrefix("-") ? " '\(argument.prefix { $0 != "=" })'" : " (not shown: it may hold a secret)"
                errors.write("webproxyd status: unexpected argument\(shown)\n\n\(help)\n")
                return CommandLineTool.ExitCode.usage
            }
            index += 1
        }
        let candidates = ControlSocketPath.candidatesForClient(environment: environment)
        let path = socket ?? candidates.first(where: socketExists) ?? candidates.first ?? ControlSocketPath.systemDirectory
        switch ControlClient.status(path: path) {
        case .success(let document):
            output.write(json ? String(decoding: document.encoded(), as: UTF8.self) : StatusTable.render(document))
            return CommandLineTool.ExitCode.success
        case .failure(.notRunning(let path)):
            errors.write("webproxyd status: webproxyd is not running (nothing answers on \(path))\n")
            return CommandLineTool.ExitCode.unavailable
        case .failure(.permissionDenied(let path)):
            errors.write("webproxyd status: permission denied on \(path); run as root (sudo webproxyd status)\n")
            return CommandLineTool.ExitCode.noPermission
        case .failure(.badAnswer(let path, let reason)):
            errors.write("webproxyd status: \(path): \(reason)\n")
            return CommandLineTool.ExitCode.failure
        }
    }

    private static func socketExists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }
}

extension CommandLineTool.ExitCode {
    /// EX_UNAVAILABLE: the daemon is not running.
    public static let unavailable: Int32 = 69
    /// EX_NOPERM: the control socket is not ours to use.
    public static let noPermission: Int32 = 77
}
