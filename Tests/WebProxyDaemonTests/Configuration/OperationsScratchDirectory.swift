#if canImport(Glibc)
import Glibc
#endif

/// A private temporary directory for configuration, secret and socket files; removed
/// (with the files written through it) when released.
final class OperationsScratchDirectory {
    let path: String
    private var created: [String] = []

    init() throws {
        var template = Array("/tmp/webproxyd-ops-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        guard let created else { throw ScratchError(errno: errno) }
        path = created
    }

    deinit {
        for file in created.reversed() { unlink(file) }
        rmdir(path)
    }

    /// Writes `contents` to `name` with permission bits `mode` and returns the full path.
    @discardableResult
    func write(_ name: String, _ contents: String, mode: mode_t = 0o600) throws -> String {
        let file = path + "/" + name
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ScratchError(errno: errno) }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count,
              fchmod(fd, mode) == 0
        else { throw ScratchError(errno: errno) }
        created.append(file)
        return file
    }

    /// Registers a file created by other means (a socket) for removal.
    func adopt(_ name: String) -> String {
        let file = path + "/" + name
        created.append(file)
        return file
    }
}

struct ScratchError: Error {
    let errno: Int32
}
