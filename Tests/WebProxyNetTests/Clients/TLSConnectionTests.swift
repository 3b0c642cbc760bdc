import Testing
import WebProxyTestSupport

@testable import WebProxyNet

/// Records a `TLSConnection`'s plaintext and end; pauses reading on request.
final class PlaintextRecorder: ByteStreamDelegate {
    var received: [UInt8] = []
    var end: Bool?
    var closeError: TransportError??
    var onRead: ((any ByteStream) -> Void)?
    var onClose: (() -> Void)?

    func stream(_ connection: any ByteStream, didRead plaintext: UnsafeRawBufferPointer) {
        received += plaintext
        onRead?(connection)
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        end = clean
        connection.close()
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        closeError = .some(error)
        onClose?()
    }
}

@Suite("TLSConnection and SecureDialer over loopback")
struct TLSConnectionTests {
    struct Outcome: Sendable {
        var atPause = 0
        var afterWait = 0
        var total = 0
        var cleanEnd: Bool?
        var resumedSecondTime = false
        var alpn: String?
    }

    @Test func pausingStopsDeliveryUntilResumedAndSessionsResume() async throws {
        let tls = try ClientTLS()
        let body = payload(2 << 20, seed: 5)
        try await withLoopAndResolver { loop, resolver in
            let outcome: Outcome = try await onLoop(loop, timeout: .seconds(30)) { done in
                var outcome = Outcome()
                let server = try startTestServer(
                    on: loop, context: tls.server,
                    configuration: HTTPServer.Configuration(parserLimits: HTTPParserLimits(maxBodyBytes: 4 << 20))
                ) { _, responder in
                    responder.respond(
                        HTTPResponseHead(status: 200, reason: "OK", headers: [("Connection", "close")]), body: body)
                }
                let dialer = SecureDialer(context: tls.client)
                let request = Array("GET / HTTP/1.1\r\nHost: proxy.example.com\r\n\r\n".utf8)
                _ = dialer.connect(to: endpoint(of: server), on: loop, resolver: resolver) { result in
                    guard case .success(let connection) = result else { return done(outcome) }
                    outcome.alpn = connection.engine.negotiatedALPN
                    let recorder = PlaintextRecorder()
                    recorder.onRead = { connection in
                        guard recorder.received.count > 100_000, outcome.atPause == 0 else { return }
                        connection.pauseReading()
                        outcome.atPause = recorder.received.count
                        loop.scheduleTimer(after: .milliseconds(200)) {
                            outcome.afterWait = recorder.received.count
                            connection.resumeReading()
                        }
                    }
                    recorder.onClose = {
                        outcome.total = recorder.received.count
                        outcome.cleanEnd = recorder.end
                        // A second connection resumes the session the first one received.
                        _ = dialer.connect(to: endpoint(of: server), on: loop, resolver: resolver) { second in
                            if case .success(let connection) = second {
                                outcome.resumedSecondTime = connection.engine.isSessionResumed
                                connection.close()
                            }
                            done(outcome)
                        }
                    }
                    connection.delegate = recorder
                    try? connection.write(request)
                }
            }
            #expect(outcome.alpn == "http/1.1")
            #expect(outcome.atPause > 100_000)
            #expect(outcome.afterWait == outcome.atPause)
            #expect(outcome.total > body.count)
            #expect(outcome.cleanEnd == true)
            #expect(outcome.resumedSecondTime)
        }
    }

    @Test func theHandshakeDeadlineIsATLSStageError() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let error: TransportError? = try await onLoop(loop) { done in
                // A TCP server that accepts and never speaks TLS.
                var held: [TCPConnection] = []
                let silent = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    connection.delegate = RecordingDelegate()
                    held.append(connection)
                }
                let dialer = SecureDialer(context: tls.client, handshakeTimeout: .milliseconds(200))
                let target = SecureEndpoint(
                    origin: testOrigin, connectTo: DialTarget(host: "127.0.0.1", port: silent.localAddress.port)!)
                _ = dialer.connect(to: target, on: loop, resolver: resolver) { result in done(result.failure) }
            }
            guard case .tls(let tlsError) = try #require(error) else {
                Issue.record("expected a TLS-stage error, got \(String(describing: error))")
                return
            }
            #expect(tlsError.kind == .handshakeFailed)
            #expect(tlsError.message.contains("timed out"))
        }
    }

    /// A server that takes the connection and never answers the ClientHello, as on a path
    /// that went silent: the handshake fails at its silence bound, not its 60 s deadline.
    @Test func aHandshakeWhosePathMovesNothingFailsAtItsSilenceBound() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (error, elapsed): (TransportError?, Duration) = try await onLoop(loop) { done in
                var held: [TCPConnection] = []
                let silent = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    connection.delegate = RecordingDelegate()
                    held.append(connection)
                }
                let dialer = SecureDialer(
                    context: tls.client, handshakeTimeout: .seconds(60), handshakeSilence: .milliseconds(300))
                let target = SecureEndpoint(
                    origin: testOrigin, connectTo: DialTarget(host: "127.0.0.1", port: silent.localAddress.port)!)
                let started = loop.now
                _ = dialer.connect(to: target, on: loop, resolver: resolver) { result in
                    done((result.failure, loop.now - started))
                }
            }
            guard case .tls(let tlsError) = try #require(error) else {
                Issue.record("expected a TLS-stage error, got \(String(describing: error))")
                return
            }
            #expect(tlsError.kind == .handshakeFailed)
            #expect(tlsError.message.contains("moved nothing for"))
            // Not a timing test: only that the silence bound, not the deadline, ended it.
            #expect(elapsed < .seconds(30))
        }
    }

    @Test func hostHeaderAndDialTargetOfEndpoints() {
        #expect(SecureEndpoint(origin: DialTarget("relay.example.com:443")!).hostHeader == "relay.example.com")
        #expect(SecureEndpoint(origin: DialTarget("relay.example.com:8443")!).hostHeader == "relay.example.com:8443")
        #expect(SecureEndpoint(origin: DialTarget("[2001:db8::1]:443")!).hostHeader == "[2001:db8::1]")
        let overridden = SecureEndpoint(
            origin: DialTarget("relay.example.com:443")!, connectTo: DialTarget("192.0.2.7:8443")!)
        #expect(overridden.dialTarget == DialTarget("192.0.2.7:8443")!)
        #expect(overridden.hostHeader == "relay.example.com")
    }

    @Test(arguments: [
        (NetError(.resolution, call: "getaddrinfo", message: "Name or service not known"), "resolve"),
        (NetError.syscall("connect", errno: 111), "connect"),
        (NetError(.timedOut, call: "connect", message: "dial timed out"), "connect"),
        (NetError(.proxy, call: "socks5", message: "refused"), "proxy"),
        (NetError.syscall("proxy connect", errno: 111), "proxy"),
        (NetError(.resolution, call: "proxy getaddrinfo", message: "no address"), "proxy"),
    ])
    func dialErrorsAreSortedByStage(error: NetError, stage: String) {
        let classified = TransportError.classifyDial(error)
        #expect(classified.description.hasPrefix("\(stage) failed: "))
    }
}
