#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Every executable the package builds answers `--help` with its usage on standard output
/// (exit 0) and refuses an unknown flag with its usage on standard error (exit 64), without
/// doing anything else: `webproxyd-bench --help` used to run the whole benchmark.
@Suite struct ExecutableUsageTests {
    /// The build directory: the test bundle sits beside the products it was built with.
    static let binDirectory = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
        .deletingLastPathComponent()

    struct Outcome {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs `executable` with `arguments`, its output in temporary files, and waits for it.
    static func run(_ executable: String, _ arguments: [String]) throws -> Outcome {
        let path = binDirectory.appendingPathComponent(executable).path
        try #require(FileManager.default.isExecutableFile(atPath: path), "\(path) was not built")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("usage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outPath = directory.appendingPathComponent("out").path
        let errPath = directory.appendingPathComponent("err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        try #require(spawned == 0, "cannot start \(executable): \(String(cString: strerror(spawned)))")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7F == 0
        try #require(exited, "\(executable) ended by signal \(status & 0x7F)")
        return Outcome(
            status: (status >> 8) & 0xFF,
            output: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    static let executables = ["webproxyd", "webproxyd-bench", "webproxyd-testrelay"]

    @Test(arguments: executables)
    func helpPrintsUsageAndDoesNothingElse(executable: String) throws {
        let outcome = try Self.run(executable, ["--help"])
        #expect(outcome.status == 0, "\(executable) --help: \(outcome.errors)")
        #expect(outcome.output.contains("USAGE: \(executable)"), "\(executable) --help printed: \(outcome.output)")
        #expect(outcome.errors.isEmpty, "\(executable) --help wrote to standard error: \(outcome.errors)")
    }

    @Test(arguments: executables)
    func anUnknownFlagIsAUsageError(executable: String) throws {
        let arguments = executable == "webproxyd" ? ["run", "--no-such-flag"] : ["--no-such-flag"]
        let outcome = try Self.run(executable, arguments)
        #expect(outcome.status == 64, "\(executable) \(arguments) exited \(outcome.status)")
        #expect(outcome.errors.contains("USAGE: \(executable)"), "\(executable): \(outcome.errors)")
        #expect(outcome.output.isEmpty)
    }

    /// Subcommands of the benchmark take only their own options.
    @Test(arguments: [["soak", "--quick"], ["profile", "--mib", "none"], ["--carriers", "carrier-pigeon"], ["--out"]])
    func benchModesRefuseWhatIsNotTheirs(arguments: [String]) throws {
        let outcome = try Self.run("webproxyd-bench", arguments)
        #expect(outcome.status == 64, "webproxyd-bench \(arguments) exited \(outcome.status)")
    }
}
