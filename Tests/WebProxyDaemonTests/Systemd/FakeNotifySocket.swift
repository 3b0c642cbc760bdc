#if canImport(Glibc)
import Glibc
#endif
@testable import WebProxyDaemon

/// A unix datagram socket standing in for systemd's notification socket.
final class FakeNotifySocket {
    let fd: Int32
    /// The `NOTIFY_SOCKET` value that reaches this socket.
    let environmentValue: String

    /// Binds `environmentValue`: a path, or `@name` in the abstract namespace.
    init(_ environmentValue: String) throws {
        guard let address = NotifySocketAddress(parsing: environmentValue) else {
            throw ScratchError(errno: EINVAL)
        }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ScratchError(errno: errno) }
        self.environmentValue = environmentValue
        let status = address.withSockaddr { bind(fd, $0, $1) }
        guard status == 0 else {
            let error = errno
            close(fd)
            throw ScratchError(errno: error)
        }
    }

    deinit { close(fd) }

    /// Every datagram queued so far, oldest first.
    func receiveAll() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 { return messages }
            messages.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
    }
}
