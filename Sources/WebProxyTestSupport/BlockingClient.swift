#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A blocking TCP client of a loopback port, for tests, benchmarks and the demo: use it from a
/// plain thread. Every wait is bounded by the socket timeouts. Copies share one descriptor,
/// which the first `close()` of any copy releases; later calls do nothing, so a client
/// closed twice never closes a descriptor number the process has since reused for
/// something else. Nothing closes it implicitly.
public struct BlockingClient: Sendable {
    /// What one `receiveSome` call saw.
    public enum Received: Equatable, Sendable {
        case bytes(Int)
        /// Nothing arrived within the receive timeout.
        case timedOut
        case closed
        case failed(errno: Int32)
    }

    /// Why a connection could not be made: the failing call and its errno.
    public struct ConnectFailure: Error, Sendable {
        /// `socket` or `connect`.
        public let call: String
        public let errno: Int32
    }

    /// The socket, for options a test sets itself.
    public let fd: Int32
    private let closer: Closer

    /// Connects to `127.0.0.1:port` with both timeouts set to `timeoutSeconds`; nil on failure.
    public init?(port: UInt16, timeoutSeconds: Int = 5, noDelay: Bool = false) {
        do {
            try self.init(
                port: port, sendTimeout: .seconds(timeoutSeconds), receiveTimeout: .seconds(timeoutSeconds),
                noDelay: noDelay)
        } catch {
            return nil
        }
    }

    /// Connects to `127.0.0.1:port`. Sends fail after `sendTimeout`; receives give up after
    /// `receiveTimeout`. `noDelay` turns Nagle off, so a small message leaves at once.
    public init(port: UInt16, sendTimeout: Duration, receiveTimeout: Duration, noDelay: Bool = false)
        throws(ConnectFailure)
    {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ConnectFailure(call: "socket", errno: errno) }
        Self.setTimeout(fd, SO_SNDTIMEO, sendTimeout)
        Self.setTimeout(fd, SO_RCVTIMEO, receiveTimeout)
        if noDelay {
            var enabled: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &enabled, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let fd = fd
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(fd)
            throw ConnectFailure(call: "connect", errno: error)
        }
        closer = Closer(fd)
    }

    /// Sends every byte of `bytes`; false if the peer went away or a send timed out.
    public func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send($0) }
    }

    /// Sends every byte of `bytes`; false if the peer went away or a send timed out.
    public func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
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
    public func receiveSome(into buffer: UnsafeMutableRawBufferPointer) -> Received {
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

    /// Reads until at least `count` bytes arrived, the peer closed, or a receive timed out.
    public func receive(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            received += buffer[..<n]
        }
        return received
    }

    /// Fills `target` exactly; false on EOF, error or timeout first.
    public func receive(into target: inout [UInt8]) -> Bool {
        var offset = 0
        while offset < target.count {
            let got = target.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, $0.count - offset, 0) }
            guard got > 0 else { return false }
            offset += got
        }
        return true
    }

    /// Reads and discards exactly `count` bytes; false on EOF, error or timeout first.
    public func receiveDiscarding(_ count: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: min(count, 256 << 10))
        var left = count
        while left > 0 {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min(left, $0.count), 0) }
            guard got > 0 else { return false }
            left -= got
        }
        return true
    }

    /// Reads until the peer closes or a receive times out; returns the bytes and whether it closed.
    public func receiveUntilClosed(limit: Int = 64 << 20) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.count <= limit {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) { return (received, true) }
            guard n > 0 else { return (received, false) }
            received += buffer[..<n]
        }
        return (received, false)
    }

    /// Whether the peer closed (EOF or reset) within the receive timeout, with no data first.
    public func waitForClose() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    /// Half-closes: no more bytes from this side (the peer reads EOF).
    public func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Sets the kernel's send and receive buffers (small buffers make backpressure reach the
    /// peer sooner instead of filling the kernel).
    public func setBuffers(_ bytes: Int32) {
        var value = bytes
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sets both socket timeouts (shorter ones probe whether a path is up).
    public func setTimeouts(_ duration: Duration) {
        Self.setTimeout(fd, SO_SNDTIMEO, duration)
        Self.setTimeout(fd, SO_RCVTIMEO, duration)
    }

    /// Closes the socket; call it once.
    public func close() { closer.close() }

    /// Closes the shared descriptor once.
    private final class Closer: Sendable {
        private let fd: Int32
        private let isOpen = Atomic(true)

        init(_ fd: Int32) { self.fd = fd }

        func close() {
            if isOpen.exchange(false, ordering: .acquiringAndReleasing) { Glibc.close(fd) }
        }
    }

    private static func setTimeout(_ fd: Int32, _ option: Int32, _ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, option, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}
