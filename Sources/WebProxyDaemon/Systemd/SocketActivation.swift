#if canImport(Glibc)
import Glibc
#endif
internal import CWebProxySystemd

/// Listening sockets handed over by a systemd socket unit (`webproxyd.socket`), named by
/// `FileDescriptorName=` after the relay section that should use them.
public enum SocketActivation {
    /// The passed sockets by name, via `sd_listen_fds_with_names`. Empty when the process
    /// was not socket-activated. With `unsetEnvironment`, `LISTEN_*` are removed so they
    /// do not leak further. Every descriptor is checked to be a listening stream socket
    /// and is set close-on-exec.
    public static func listeningSockets(unsetEnvironment: Bool = true)
        throws(SocketActivationError) -> [String: Int32]
    {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(unsetEnvironment ? 1 : 0, &names)
        defer {
            if let names {
                for index in 0..<Int(max(count, 0)) { free(names[index]) }
                free(names)
            }
        }
        guard count >= 0 else {
            throw SocketActivationError(
                "The sockets passed by systemd are unusable: \(String(cString: strerror(-count)))")
        }
        var sockets: [String: Int32] = [:]
        for index in 0..<Int(count) {
            let fd = SD_LISTEN_FDS_START + Int32(index)
            let name = names?[index].map { String(cString: $0) } ?? "unknown"
            guard sd_is_socket(fd, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1) > 0 else {
                throw SocketActivationError(
                    "Socket '\(name)' (fd \(fd)) is not a listening stream socket; use ListenStream= in the socket unit")
            }
            guard sockets.updateValue(fd, forKey: name) == nil else {
                throw SocketActivationError(
                    "Two sockets are named '\(name)'; use one socket unit per relay, each with its own FileDescriptorName=")
            }
        }
        return sockets
    }
}

/// The sockets systemd passed cannot be used as relay listeners.
public struct SocketActivationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    init(_ message: String) { self.message = message }

    public var description: String { message }
}
