#if canImport(Glibc)
import Glibc
#endif

/// Where the control socket lives: `$RUNTIME_DIRECTORY/control.sock` under systemd
/// (`RuntimeDirectory=webproxyd`), else `/run/webproxyd/control.sock` when that directory is
/// writable, else `$XDG_RUNTIME_DIR/webproxyd/control.sock`.
enum ControlSocketPath {
    static let fileName = "control.sock"
    static let systemDirectory = "/run/webproxyd"

    /// Where the daemon creates its socket; nil when no candidate directory is usable.
    /// `isWritableDirectory` is a parameter so tests need not touch `/run`.
    static func forDaemon(
        environment: [String: String], isWritableDirectory: (String) -> Bool = Self.isWritableDirectory
    ) -> String? {
        if let runtime = runtimeDirectory(environment) { return runtime + "/" + fileName }
        if isWritableDirectory(systemDirectory) { return systemDirectory + "/" + fileName }
        if let user = userDirectory(environment) { return user + "/" + fileName }
        return nil
    }

    /// Where `webproxyd status` looks, in order: the first that exists is used.
    static func candidatesForClient(environment: [String: String]) -> [String] {
        let directories = [runtimeDirectory(environment), systemDirectory, userDirectory(environment)]
        return directories.compactMap { $0.map { $0 + "/" + fileName } }
    }

    /// The first of `RUNTIME_DIRECTORY` (systemd separates several with `:`).
    private static func runtimeDirectory(_ environment: [String: String]) -> String? {
        guard let value = environment["RUNTIME_DIRECTORY"], let first = value.split(separator: ":").first,
            first.hasPrefix("/")
        else { return nil }
        return String(first)
    }

    private static func userDirectory(_ environment: [String: String]) -> String? {
        guard let base = environment["XDG_RUNTIME_DIR"], base.hasPrefix("/") else { return nil }
        return base + "/webproxyd"
    }

    static func isWritableDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR && access(path, W_OK) == 0
    }
}
