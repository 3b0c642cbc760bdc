import Foundation
import Glibc

/// A blocking loopback TCP client driven from a plain thread, speaking `BenchBackend`'s
/// one-byte protocol. Every wait is bounded by the socket timeout.
final class LoadClient: @unchecked Sendable {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 256 << 10)
    private static let payload = [UInt8]((0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    init?(port: UInt16, timeoutSeconds: Int = 30) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
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
            Glibc.close(fd)
            return nil
        }
    }

    deinit { Glibc.close(fd) }

    /// Sends the mode byte (and the count for upload/download).
    func begin(_ mode: BenchBackend.Mode, count: UInt64 = 0) -> Bool {
        var header = [mode.rawValue]
        if mode != .echo { header += (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> (8 * $0)) } }
        return send(header)
    }

    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send($0) }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Sends `count` bytes of a fixed pattern.
    func sendBulk(_ count: Int) -> Bool {
        var left = count
        return Self.payload.withUnsafeBytes { pattern in
            while left > 0 {
                let piece = min(left, pattern.count)
                guard send(UnsafeRawBufferPointer(rebasing: pattern[..<piece])) else { return false }
                left -= piece
            }
            return true
        }
    }

    /// Reads and discards exactly `count` bytes; false on EOF, error or timeout first.
    func receiveDiscarding(_ count: Int) -> Bool {
        var left = count
        while left > 0 {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min(left, $0.count), 0) }
            guard got > 0 else { return false }
            left -= got
        }
        return true
    }

    /// Reads exactly `count` bytes into `into`.
    func receive(into target: inout [UInt8]) -> Bool {
        var offset = 0
        while offset < target.count {
            let got = target.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, $0.count - offset, 0) }
            guard got > 0 else { return false }
            offset += got
        }
        return true
    }

    /// Shortens both socket timeouts (for probing whether a path is up).
    func setTimeout(milliseconds: Int) {
        var timeout = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// Runs `body(index)` on `count` fresh threads and waits for all of them.
func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = ThreadResults<T>(count)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            let value = body(index)
            results.lock.lock()
            results.values[index] = value
            results.lock.unlock()
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
    return results.values.map { $0! }
}

/// The values `onThreads` collects, one slot per thread.
final class ThreadResults<T>: @unchecked Sendable {
    var values: [T?]
    let lock = NSLock()
    init(_ count: Int) { values = Array(repeating: nil, count: count) }
}
