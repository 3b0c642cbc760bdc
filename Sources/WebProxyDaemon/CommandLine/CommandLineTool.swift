#if canImport(Glibc)
import Glibc
#endif

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
          help                 Show this help.
          version              Print the version.

        Every subcommand accepts --help.
        """

    /// Runs the command line and returns the process exit status.
    public static func run(arguments: [String], output: TextSink = .standardOutput,
                           errors: TextSink = .standardError) -> Int32 {
        guard let first = arguments.first else {
            errors.write(usage + "\n")
            return ExitCode.usage
        }
        switch first {
        case "help", "--help", "-h":
            output.write(usage + "\n")
            return ExitCode.success
        case "version", "--version":
            if arguments.count > 1, arguments[1] == "--help" {
                output.write("USAGE: webproxyd version\n\nPrint the version and exit.\n")
                return ExitCode.success
            }
            guard arguments.count == 1 else {
                errors.write("webproxyd: version takes no arguments\n")
                return ExitCode.usage
            }
            output.write("webproxyd \(WebProxyDaemon.version)\n")
            return ExitCode.success
        default:
            errors.write("webproxyd: unknown subcommand '\(first)'\n\n" + usage + "\n")
            return ExitCode.usage
        }
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
