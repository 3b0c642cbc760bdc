#if canImport(Glibc)
import Glibc
#endif

/// A blocking loopback TCP client for the demo's traffic (use it from a plain thread), with
/// Nagle off so a 64-byte message leaves at once.
final class DemoConnection: @unchecked Sendable {
    /// What one `receive` call saw.
    enum Received: Equatable {
        case bytes(Int)
        /// Nothing arrived within the receive timeout.
        case timedOut
        case closed
        case failed(errno: Int32)
    }

    private let fd: Int32

    /// Connects to `127.0.0.1:port`. Sends fail after `sendTimeout`; receives return
    /// `.timedOut` after `receiveTimeout`.
    init(port: UInt16, sendTimeout: Duration, receiveTimeout: Duration) throws(DemoFailure) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DemoFailure("cannot create a socket (errno \(errno))") }
        var enabled: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &enabled, socklen_t(MemoryLayout<Int32>.size))
        Self.setTimeout(fd, SO_SNDTIMEO, sendTimeout)
        Self.setTimeout(fd, SO_RCVTIMEO, receiveTimeout)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(fd)
            throw DemoFailure("cannot connect to 127.0.0.1:\(port) (errno \(error))")
        }
    }

    deinit { Glibc.close(fd) }

    /// Sends every byte of `bytes`; false if the peer went away or the send timed out.
    func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Reads what is available into `buffer`, waiting at most the receive timeout.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> Received {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .timedOut
            case let error: return .failed(errno: error)
            }
        }
    }

    private static func setTimeout(_ fd: Int32, _ option: Int32, _ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, option, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}
