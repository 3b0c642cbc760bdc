import Glibc
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

@Suite struct SocketTests {
    static let families: [SocketAddress] =
        hasIPv6Loopback ? [.loopbackIPv4(port: 0), .loopbackIPv6(port: 0)] : [.loopbackIPv4(port: 0)]

    /// Sends `payload` to an echo server, half-closes, and returns what came back.
    func echo(_ payload: [UInt8], via listenAddress: SocketAddress, loop: EventLoop) async throws -> [UInt8] {
        try await onLoop(loop) { done in
            let listener = try startEchoServer(on: listenAddress, loop: loop)
            #expect(listener.localAddress.port != 0)
            #expect(listener.localAddress.family == listenAddress.family)
            _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                guard case .success(let connection) = result else {
                    Issue.record("connect failed: \(String(describing: result.failure))")
                    return done([])
                }
                #expect(connection.remoteAddress == listener.localAddress)
                #expect(connection.localAddress?.family == listenAddress.family)
                let client = RecordingDelegate()
                connection.delegate = client
                client.onClose = { error in
                    #expect(error == nil)
                    #expect(client.sawEOF)
                    done(client.received)
                }
                client.write(payload, to: connection, inPiecesOf: 100_000)
            }
        }
    }

    @Test(arguments: families)
    func echoRoundTrip(listenAddress: SocketAddress) async throws {
        try await withLoop { loop in
            let payload = Array("hello over loopback".utf8)
            let echoed = try await echo(payload, via: listenAddress, loop: loop)
            #expect(echoed == payload)
        }
    }

    @Test func largeTransferUsesQueueWatermarksAndBackpressure() async throws {
        try await withLoop { loop in
            let payload = patternBytes(3 * 1024 * 1024 + 17)
            let echoed = try await echo(payload, via: .loopbackIPv4(port: 0), loop: loop)
            #expect(echoed.count == payload.count)
            #expect(echoed == payload)
        }
    }

    @Test func halfCloseLetsEachSideFinishItsDirection() async throws {
        try await withLoop { loop in
            let (serverGot, clientGot): ([UInt8], [UInt8]) = try await onLoop(loop) { done in
                let server = RecordingDelegate()
                var results: (server: [UInt8]?, client: [UInt8]?) = (nil, nil)
                func finishIfBoth() {
                    if let s = results.server, let c = results.client { done((s, c)) }
                }
                server.onEOF = { connection in
                    // The client's write side is shut; ours still works.
                    try? connection.write(Array("bye".utf8))
                    connection.shutdownWrite()
                }
                server.onClose = { error in
                    #expect(error == nil)
                    results.server = server.received
                    finishIfBoth()
                }
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    connection.delegate = server
                }
                _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                    guard case .success(let connection) = result else { return }
                    let client = RecordingDelegate()
                    connection.delegate = client
                    try? connection.write(Array("hello".utf8))
                    connection.shutdownWrite()
                    let refused = #expect(throws: TransportError.self) { try connection.write([1]) }
                    #expect(refused.map(socketError)?.code == .closed)
                    client.onClose = { error in
                        #expect(error == nil)
                        #expect(client.sawEOF)
                        results.client = client.received
                        finishIfBoth()
                    }
                }
            }
            #expect(serverGot == Array("hello".utf8))
            #expect(clientGot == Array("bye".utf8))
        }
    }

    /// The kernel's count of acknowledged bytes moves when the peer's kernel takes them, even
    /// though the peer application reads nothing: what the HTTP client's silence bound needs.
    @Test func pathProgressCountsBytesThePeerAcknowledged() async throws {
        try await withLoop { loop in
            let (before, after): (UInt64?, UInt64?) = try await onLoop(loop) { done in
                var held: [TCPConnection] = []
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { held.append($0) }
                _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                    guard case .success(let connection) = result else { return done((nil, nil)) }
                    let before = connection.pathProgress
                    try? connection.write([UInt8](repeating: 1, count: 50_000))
                    func check(_ attempts: Int) {
                        let now = connection.pathProgress
                        if attempts == 0 || (now ?? 0) >= (before ?? 0) + 50_000 {
                            _ = listener
                            connection.abort()
                            return done((before, now))
                        }
                        loop.scheduleTimer(after: .milliseconds(20)) { check(attempts - 1) }
                    }
                    check(250)
                }
            }
            let start = try #require(before)
            #expect(try #require(after) >= start + 50_000)
        }
    }

    @Test func abortiveCloseIsSeenAsConnectionReset() async throws {
        try await withLoop { loop in
            let error: NetError? = try await onLoop(loop) { done in
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    connection.abort()
                    #expect(!connection.isOpen)
                }
                _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                    guard case .success(let connection) = result else { return }
                    let client = RecordingDelegate()
                    client.onClose = { done($0) }
                    connection.delegate = client
                }
            }
            #expect(error?.code == .syscall)
            #expect(error?.errno == ECONNRESET)
            #expect(error?.message == NetError.strerror(ECONNRESET))
        }
    }

    @Test func connectToAClosedPortIsRefused() async throws {
        try await withLoop { loop in
            let result: Result<SocketAddress, NetError> = try await onLoop(loop) { done in
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { _ in }
                let address = listener.localAddress
                listener.close()
                _ = TCPConnection.connect(to: address, on: loop, timeout: .seconds(5)) { done($0.map(\.remoteAddress)) }
            }
            let error = try #require(result.failure)
            #expect(error.errno == ECONNREFUSED)
            #expect(error.call == "connect")
            #expect(error.description == "connect: \(NetError.strerror(ECONNREFUSED)) (errno \(ECONNREFUSED))")
        }
    }

    @Test func connectTimesOutWhenTheListenQueueIsFull() async throws {
        try await withLoop { loop in
            let result: Result<SocketAddress, NetError> = try await onLoop(loop) { done in
                // A raw listener with backlog 0 that never accepts: once its queue is full the
                // kernel drops further SYNs, so a connect can only time out.
                let fd = try Syscall.tcpSocket(AF_INET)
                try Syscall.bind(fd, to: .loopbackIPv4(port: 0))
                try Syscall.listen(fd, backlog: 0)
                let address = try Syscall.localAddress(fd)
                var fillers: [ConnectAttempt] = []
                func attempt(_ remaining: Int) {
                    fillers.append(
                        TCPConnection.connect(to: address, on: loop, timeout: .milliseconds(300)) { result in
                            if case .failure(let error) = result {
                                Syscall.close(fd)
                                done(.failure(error))
                            } else if remaining > 0 {
                                attempt(remaining - 1)
                            } else {
                                Syscall.close(fd)
                                done(result.map(\.remoteAddress))
                            }
                        })
                }
                attempt(8)
            }
            #expect(result.failure?.code == .timedOut)
        }
    }

    @Test func writesPastTheLimitAreRefusedAndWritesAfterCloseThrowClosed() async throws {
        try await withLoop { loop in
            let errors: [NetError] = try await onLoop(loop) { done in
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    connection.pauseReading()
                    connection.delegate = RecordingDelegate()
                }
                _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                    guard case .success(let connection) = result else { return }
                    connection.delegate = RecordingDelegate()
                    connection.writeLimits = .init(highWatermark: 1024, lowWatermark: 512, limit: 4096)
                    var errors: [NetError] = []
                    let chunk = patternBytes(4096)
                    // The kernel takes the first writes; keep going until the queue fills.
                    for _ in 0..<10_000 {
                        do throws(TransportError) {
                            try connection.write(chunk)
                        } catch {
                            errors.append(socketError(error))
                            break
                        }
                    }
                    #expect(!connection.isWritable)
                    #expect(connection.queuedWriteBytes <= 4096)
                    connection.abort()
                    do throws(TransportError) {
                        try connection.write([1])
                    } catch {
                        errors.append(socketError(error))
                    }
                    done(errors)
                }
            }
            #expect(errors.map(\.code) == [.writeBufferFull, .closed])
        }
    }

    @Test func pushedBackBytesArriveBeforeTheStreamAndOnlyWithADelegate() async throws {
        try await withLoop { loop in
            let received: [UInt8] = try await onLoop(loop) { done in
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    try? connection.write(Array("stream".utf8))
                    connection.close()
                }
                _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                    guard case .success(let connection) = result else { return }
                    connection.pushBack(Array("early-".utf8))
                    // No delegate yet: nothing may be read and lost.
                    loop.scheduleTimer(after: .milliseconds(20)) {
                        let client = RecordingDelegate()
                        client.onEOF = { $0.close() }
                        client.onClose = { _ in done(client.received) }
                        connection.delegate = client
                    }
                }
            }
            #expect(received == Array("early-stream".utf8))
        }
    }

    @Test func acceptErrorPolicyPausesOnResourceExhaustion() {
        for errno in [EMFILE, ENFILE, ENOBUFS, ENOMEM] {
            #expect(AcceptErrorPolicy.action(for: errno) == .pauseAccepting)
        }
        for errno in [ECONNABORTED, EPROTO, EPERM, ENETUNREACH] {
            #expect(AcceptErrorPolicy.action(for: errno) == .continueAccepting)
        }
        for errno in [EBADF, EINVAL, ENOTSOCK] {
            #expect(AcceptErrorPolicy.action(for: errno) == .stopListening)
        }
    }

    @Test func socketAddressesParseAndPrint() {
        #expect(SocketAddress(ipAddress: "127.0.0.1", port: 80)?.description == "127.0.0.1:80")
        #expect(SocketAddress(ipAddress: "::1", port: 443)?.description == "[::1]:443")
        #expect(SocketAddress(ipAddress: "2001:db8::1", port: 1)?.family == .ipv6)
        #expect(SocketAddress(ipAddress: "example.com", port: 1) == nil)
        #expect(SocketAddress(ipAddress: "[::1]", port: 1) == nil)
        #expect(SocketAddress.loopbackIPv4(port: 9) == SocketAddress(ipAddress: "127.0.0.1", port: 9))
        #expect(SocketAddress.loopbackIPv6(port: 9) == SocketAddress(ipAddress: "::1", port: 9))
        #expect(SocketAddress(ipAddress: "10.1.2.3", port: 0)?.addressBytes == [10, 1, 2, 3])
        #expect(SocketAddress.loopbackIPv6(port: 0).addressBytes == Array(repeating: 0, count: 15) + [1])
    }

    @Test func dialTargetsParseAndValidate() {
        #expect(DialTarget("relay.example.com:443") == DialTarget(host: "relay.example.com", port: 443))
        #expect(DialTarget("[::1]:18443") == DialTarget(host: "::1", port: 18443))
        #expect(DialTarget("[::1]:18443")?.description == "[::1]:18443")
        #expect(DialTarget("127.0.0.1:1")?.isIPLiteral == true)
        #expect(DialTarget("relay.example.com:443")?.isIPLiteral == false)
        for bad in ["relay", "relay:", "relay:0", "relay:65536", ":443", "::1:443", "[::1]443", "[relay]:1",
            "a b:1", "a/b:1", "user@host:1", "host\r\n:1"]
        {
            #expect(DialTarget(bad) == nil, "\(bad)")
        }
        #expect(DialTarget(host: String(repeating: "a", count: 256), port: 1) == nil)
    }
}
