import Foundation
import Glibc
import Testing

@testable import WebProxyNet

/// A socket failure in the loopback test harness.
private struct SocketFailure: Error, CustomStringConvertible {
    let description: String
    init(_ call: String) { description = "\(call) failed: errno \(errno)" }
}

/// Drives a `TLSEngine` over a blocking socket: what the event loop will do, minus epoll.
private final class BlockingTLSConnection {
    let socket: Int32
    let engine: TLSEngine
    private var receiveBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(socket: Int32, engine: TLSEngine) {
        self.socket = socket
        self.engine = engine
    }

    deinit { close(socket) }

    /// Accepts one connection on `listener` and completes the server handshake.
    static func accepted(on listener: Int32, context: TLSContext) throws -> BlockingTLSConnection {
        let accepted = accept(listener, nil, nil)
        guard accepted >= 0 else { throw SocketFailure("accept") }
        limitReceiveTime(accepted)
        let connection = BlockingTLSConnection(socket: accepted, engine: try TLSEngine(serverContext: context))
        try connection.handshake()
        return connection
    }

    /// Connects to 127.0.0.1:`port` and completes the client handshake for the relay's name.
    static func connected(to port: UInt16, context: TLSContext) throws -> BlockingTLSConnection {
        let socket = try connectToLoopback(port: port)
        limitReceiveTime(socket)
        let connection = BlockingTLSConnection(
            socket: socket, engine: try TLSEngine(clientContext: context, serverName: TLSFixture.relayName))
        try connection.handshake()
        return connection
    }

    func flush() throws {
        let bytes = engine.takeCiphertext()
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw SocketFailure("send") }
            offset += sent
        }
    }

    /// Feeds one `recv` worth of ciphertext (or the end of file) to the engine.
    func receive() throws {
        let count = receiveBuffer.withUnsafeMutableBytes {
            recv(socket, $0.baseAddress, $0.count, 0)
        }
        guard count >= 0 else { throw SocketFailure("recv") }
        if count == 0 {
            engine.feedEOF()
        } else {
            receiveBuffer.withUnsafeBytes {
                engine.feed(UnsafeRawBufferPointer(rebasing: $0[..<count]))
            }
        }
    }

    func handshake() throws {
        for _ in 0..<100 {
            let progress = try engine.handshake()
            try flush()
            if progress == .complete { return }
            try receive()
        }
        throw SocketFailure("handshake loop")
    }

    func writeAll(_ data: [UInt8]) throws {
        var offset = 0
        while offset < data.count {
            offset += try engine.write(data[offset...])
            try flush()
        }
    }

    /// Reads until `count` bytes or the end of the stream; returns the bytes and how it ended.
    func read(upTo count: Int) throws -> (bytes: [UInt8], end: TLSEngine.ReadResult?) {
        var bytes: [UInt8] = []
        while bytes.count < count {
            let result = try engine.readPlaintext(into: &bytes, maxCount: count - bytes.count)
            try flush()
            switch result {
            case .bytes: continue
            case .wantRead: try receive()
            case .eof: return (bytes, result)
            }
        }
        return (bytes, nil)
    }
}

/// Binds 127.0.0.1 on port 0; returns the listening socket and its port.
private func listenOnLoopback() throws -> (socket: Int32, port: UInt16) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { throw SocketFailure("socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(listener, pointer, length) == 0 && listen(listener, 4) == 0
                && getsockname(listener, pointer, &length) == 0
        }
    }
    guard bound else {
        close(listener)
        throw SocketFailure("bind/listen")
    }
    return (listener, UInt16(bigEndian: address.sin_port))
}

private func connectToLoopback(port: UInt16) throws -> Int32 {
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard client >= 0 else { throw SocketFailure("socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else {
        close(client)
        throw SocketFailure("connect")
    }
    return client
}

/// A receive timeout so a broken exchange fails the test instead of hanging it. Generous:
/// under ThreadSanitizer the 300 KB echo alone takes about 5 s.
private func limitReceiveTime(_ socket: Int32) {
    var timeout = timeval(tv_sec: 60, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
}

/// Runs blocking work on its own thread (never on the cooperative pool) and awaits it.
private func onThread<Value: Sendable>(
    _ work: @escaping @Sendable () throws -> Value
) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try work() })
        }
    }
}

/// Starts blocking work on its own thread at once, for awaiting later. Unlike an `async let`
/// of `onThread`, it does not wait for a cooperative-pool thread, which busy synchronous
/// tests can hold longer than the peer's receive timeout (seen under the sanitizers).
private func startOnThread<Value: Sendable>(
    _ work: @escaping @Sendable () throws -> Value
) -> AsyncStream<Result<Value, any Error>> {
    let (result, continuation) = AsyncStream.makeStream(of: Result<Value, any Error>.self)
    Thread.detachNewThread {
        continuation.yield(Result { try work() })
        continuation.finish()
    }
    return result
}

/// The result of work started with `startOnThread`.
private func value<Value>(of result: AsyncStream<Result<Value, any Error>>) async throws -> Value {
    for await outcome in result { return try outcome.get() }
    throw CancellationError()
}

@Suite("TLSEngine over loopback sockets")
struct TLSLoopbackTests {
    @Test func echoOverRealSocketsWithCloseNotify() async throws {
        let fixture = try TLSFixture()
        let serverContext = try fixture.serverContext()
        let clientContext = try fixture.clientContext(pins: [fixture.authority.spkiPin])
        let (listener, port) = try listenOnLoopback()
        defer { close(listener) }
        let request = payload(300_000, seed: 7)

        let serverSide: AsyncStream<Result<(echoed: Int, end: TLSEngine.ReadResult?), any Error>> = startOnThread {
            let connection = try BlockingTLSConnection.accepted(on: listener, context: serverContext)
            let received = try connection.read(upTo: request.count)
            try connection.writeAll(received.bytes.reversed())
            let end = try connection.read(upTo: 1).end
            _ = try connection.engine.shutdown()
            try connection.flush()
            return (received.bytes.count, end)
        }
        let clientSide: (reply: [UInt8], alpn: String?, end: TLSEngine.ReadResult?) =
            try await onThread {
                let connection = try BlockingTLSConnection.connected(to: port, context: clientContext)
                try connection.writeAll(request)
                let reply = try connection.read(upTo: request.count)
                #expect(try connection.engine.shutdown() == false)
                try connection.flush()
                let end = try connection.read(upTo: 1).end
                return (reply.bytes, connection.engine.negotiatedALPN, end)
            }
        let server = try await value(of: serverSide)
        #expect(server.echoed == request.count)
        #expect(server.end == .eof(clean: true))
        #expect(clientSide.reply == request.reversed())
        #expect(clientSide.alpn == "http/1.1")
        #expect(clientSide.end == .eof(clean: true))
    }

    @Test func closingTheSocketWithoutCloseNotifyIsTruncation() async throws {
        let fixture = try TLSFixture()
        let serverContext = try fixture.serverContext()
        let clientContext = try fixture.clientContext()
        let (listener, port) = try listenOnLoopback()
        defer { close(listener) }

        let served = startOnThread {
            let connection = try BlockingTLSConnection.accepted(on: listener, context: serverContext)
            try connection.writeAll(payload(1_000))
            // The connection deinit closes the socket: no close_notify.
        }
        let read = try await onThread {
            let connection = try BlockingTLSConnection.connected(to: port, context: clientContext)
            return try connection.read(upTo: 10_000)
        }
        try await value(of: served)
        #expect(read.bytes == payload(1_000))
        #expect(read.end == .eof(clean: false))
    }
}
