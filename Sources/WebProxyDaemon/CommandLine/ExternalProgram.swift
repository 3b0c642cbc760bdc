#if canImport(Glibc)
import Glibc
#endif
import CWebProxyLinux

/// Runs another program (systemctl, xdg-open) the way a shell would not: found in PATH,
/// started with execve, its arguments passed as they are, never through a shell.
struct ExternalProgram {
    /// The absolute path of the program.
    let path: String

    enum Outcome: Equatable {
        case exited(Int32)
        /// Still running when the patience ran out; it is left to run.
        case stillRunning
        case failedToStart(String)
    }

    /// The program `name` in `environment`'s PATH, or nil.
    init?(_ name: String, environment: [String: String]) {
        let directories = (environment["PATH"] ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .split(separator: ":")
        guard let found = directories.map({ $0 + "/" + name }).first(where: { access($0, X_OK) == 0 }) else {
            return nil
        }
        path = found
    }

    /// Runs the program and waits for it at most `patience`. With `user`, the child runs
    /// as that user and group.
    func run(
        _ arguments: [String], environment: [String: String], user: (uid: uid_t, gid: gid_t)? = nil,
        patience: Duration
    ) -> Outcome {
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let pid = cwpl_spawn(path, argv, envp, user?.uid ?? uid_t.max, user?.gid ?? gid_t.max)
        guard pid > 0 else { return .failedToStart(String(cString: strerror(errno))) }
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while true {
            var status: Int32 = 0
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid {
                // WIFEXITED / WEXITSTATUS are macros Swift does not import.
                let signal = status & 0x7F
                return signal == 0 ? .exited((status >> 8) & 0xFF) : .exited(128 + signal)
            }
            if waited < 0 && errno != EINTR { return .failedToStart(String(cString: strerror(errno))) }
            if clock.now >= deadline { return .stillRunning }
            usleep(20_000)
        }
    }
}
