import Glibc
import Synchronization
import Testing
@testable import WebProxyNet

/// A loop for one test, stopped and joined when the test ends.
func withLoop<T>(_ name: String = "test-loop", _ body: (EventLoop) async throws -> T) async throws -> T {
    let loop = try EventLoop(name: name)
    try ProcessSignal.ignoreBrokenPipes()
    defer {
        loop.stop()
        loop.waitUntilStopped()
    }
    return try await body(loop)
}

/// Whether ::1 can be bound here (some CI containers have no IPv6).
let hasIPv6Loopback: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return (try? Syscall.bind(fd, to: .loopbackIPv6(port: 0))) != nil
}()

/// A delegate that records everything a connection reports and calls hooks.
final class RecordingDelegate: TCPConnectionDelegate {
    var received: [UInt8] = []
    var sawEOF = false
    var closeError: NetError??
    var onRead: ((TCPConnection, [UInt8]) -> Void)?
    var onEOF: ((TCPConnection) -> Void)?
    var onWritable: ((TCPConnection) -> Void)?
    var onClose: ((NetError?) -> Void)?

    func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        let chunk = Array(bytes)
        received += chunk
        onRead?(connection, chunk)
    }

    func connectionDidReadEOF(_ connection: TCPConnection) {
        sawEOF = true
        onEOF?(connection)
    }

    func connectionDidBecomeWritable(_ connection: TCPConnection) {
        onWritable?(connection)
    }

    func connection(_ connection: TCPConnection, didCloseWith error: NetError?) {
        closeError = .some(error)
        onClose?(error)
    }
}

extension RecordingDelegate {
    /// Writes `payload` on `connection` in pieces of `piece` bytes whenever it is writable
    /// (now and on each `onWritable`), then half-closes it.
    func write(_ payload: [UInt8], to connection: TCPConnection, inPiecesOf piece: Int) {
        var offset = 0
        func pump() {
            while offset < payload.count && connection.isWritable {
                let end = min(offset + piece, payload.count)
                try? connection.write(Array(payload[offset..<end]))
                offset = end
            }
            if offset == payload.count { connection.shutdownWrite() }
        }
        onWritable = { _ in pump() }
        pump()
    }
}

/// Echoes what it reads, pausing reads while its write queue is above the high watermark,
/// and half-closes after the peer's EOF.
final class EchoDelegate: TCPConnectionDelegate {
    func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        try? connection.write(Array(bytes))
        if !connection.isWritable { connection.pauseReading() }
    }

    func connectionDidBecomeWritable(_ connection: TCPConnection) {
        connection.resumeReading()
    }

    func connectionDidReadEOF(_ connection: TCPConnection) {
        connection.shutdownWrite()
    }

    func connection(_ connection: TCPConnection, didCloseWith error: NetError?) {}
}

/// Starts an echo listener on `address`; its connections live until the loop stops.
func startEchoServer(on address: SocketAddress, loop: EventLoop) throws -> TCPListener {
    try TCPListener.listen(on: address, loop: loop) { connection in
        connection.delegate = EchoDelegate()
    }
}

/// Bytes 0, 1, 2, … of `count` length, wrapping at 251 so chunk borders are visible.
func patternBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8($0 % 251) }
}

/// A value shared between test threads.
final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<R: Sendable>(_ body: (inout sending Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }
}

extension Result {
    /// The error, if this is a failure.
    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
