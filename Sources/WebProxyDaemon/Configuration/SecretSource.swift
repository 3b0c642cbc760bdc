#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore

/// Where a relay's secret comes from: inline in the configuration, a file, or a systemd
/// credential (`LoadCredential=`), read from `$CREDENTIALS_DIRECTORY/<name>` in the service
/// and from systemd's credential stores outside it.
enum SecretSource: Equatable {
    case inline(String)
    case file(path: String)
    case credential(name: String)

    /// A secret file holds one secret and maybe a newline; anything bigger is a mistake.
    static let maxFileSize = 4096

    /// Where systemd looks for `LoadCredential=NAME` without a path, and so where commands
    /// run outside the service look when `CREDENTIALS_DIRECTORY` is not set.
    static let systemCredentialStores = ["/etc/credstore", "/run/credstore", "/usr/lib/credstore"]

    /// The secret, plus a warning when a secret file is readable by group or others.
    func load(environment: [String: String], credentialStores: [String] = Self.systemCredentialStores)
        throws(ConfigurationValueError) -> (secret: ProxySecret, warning: ConfigurationValueError?)
    {
        switch self {
        case .inline(let text):
            return (try Self.parse(text), nil)
        case .file(let path):
            try requireAbsolutePath(path)
            let file = try SmallFile(path: path, limit: Self.maxFileSize, what: "secret file")
            var warning: ConfigurationValueError?
            if file.mode & 0o044 != 0 {
                warning = ConfigurationValueError(
                    "The secret file can be read by other users",
                    hint: "run chmod 600 on it, or load it with LoadCredential= and secret-credential")
            }
            return (try Self.parse(file.text), warning)
        case .credential(let name):
            guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
                throw ConfigurationValueError(
                    "A credential name may not be empty, '.', '..' or contain '/'",
                    hint: "use the name given to LoadCredential=, e.g. home.secret")
            }
            let path: String
            if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
                path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            } else if let stored = credentialStores.map({ $0 + "/" + name }).first(where: { access($0, F_OK) == 0 }) {
                // Outside the service (link, check-config): where LoadCredential=NAME finds it.
                path = stored
            } else {
                throw ConfigurationValueError(
                    "secret-credential needs systemd credentials, but CREDENTIALS_DIRECTORY is not set and no \(credentialStores.map { $0 + "/" + name }.joined(separator: " or ")) exists",
                    hint: "add LoadCredential=\(name):/path/to/secret to the service, or use secret-file")
            }
            let file = try SmallFile(path: path, limit: Self.maxFileSize, what: "credential '\(name)'")
            return (try Self.parse(file.text), nil)
        }
    }

    private static func parse(_ text: String) throws(ConfigurationValueError) -> ProxySecret {
        try keepingMessage { () throws(IdentityError) in try ProxySecret(parsing: text) }
    }
}

/// Refuses relative paths: under systemd the working directory is `/`, so a relative path
/// would mean something else there than in a shell.
func requireAbsolutePath(_ path: String) throws(ConfigurationValueError) {
    guard path.hasPrefix("/") else {
        throw ConfigurationValueError(
            "The path must be absolute", hint: "the working directory under systemd is /; start the path with /")
    }
}

/// A small regular file read whole, with its permission bits.
struct SmallFile {
    let text: String
    let mode: mode_t

    /// Reads at most `limit` bytes of valid UTF-8 from a regular file.
    init(path: String, limit: Int, what: String) throws(ConfigurationValueError) {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ConfigurationValueError("Cannot open the \(what) \(path): \(reason)")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ConfigurationValueError("The \(what) \(path) is not a regular file")
        }
        guard status.st_size <= limit else {
            throw ConfigurationValueError("The \(what) \(path) is larger than \(limit) bytes")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw ConfigurationValueError("Cannot read the \(what) \(path): \(reason)")
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            guard bytes.count <= limit else {
                throw ConfigurationValueError("The \(what) \(path) is larger than \(limit) bytes")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationValueError("The \(what) \(path) is not valid UTF-8 text")
        }
        self.text = text
        self.mode = status.st_mode & 0o7777
    }
}
