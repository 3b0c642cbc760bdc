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

/// A delegate that records everything a TCP connection reports and calls hooks.
final class RecordingDelegate: ByteStreamDelegate {
    var received: [UInt8] = []
    var sawEOF = false
    var closeError: NetError??
    var onRead: ((TCPConnection, [UInt8]) -> Void)?
    var onEOF: ((TCPConnection) -> Void)?
    var onWritable: ((TCPConnection) -> Void)?
    var onClose: ((NetError?) -> Void)?

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        let chunk = Array(bytes)
        received += chunk
        onRead?(tcp(stream), chunk)
    }

    func streamDidReachEnd(_ stream: any ByteStream, clean: Bool) {
        sawEOF = true
        onEOF?(tcp(stream))
    }

    func streamDidBecomeWritable(_ stream: any ByteStream) {
        onWritable?(tcp(stream))
    }

    func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
        let error = error.map(socketError)
        closeError = .some(error)
        onClose?(error)
    }
}

/// The TCP connection these test delegates serve (they are set on nothing else).
func tcp(_ stream: any ByteStream) -> TCPConnection {
    guard let connection = stream as? TCPConnection else { preconditionFailure("a test delegate of TCP streams got \(stream)") }
    return connection
}

/// A TCP stream fails only at the socket: its `.io` error.
func socketError(_ error: TransportError) -> NetError {
    guard case .io(let error) = error else { preconditionFailure("TCP reported \(error)") }
    return error
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
final class EchoDelegate: ByteStreamDelegate {
    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        try? stream.write(Array(bytes))
        if !stream.isWritable { stream.pauseReading() }
    }

    func streamDidBecomeWritable(_ stream: any ByteStream) {
        stream.resumeReading()
    }

    func streamDidReachEnd(_ stream: any ByteStream, clean: Bool) {
        tcp(stream).shutdownWrite()
    }

    func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {}
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
