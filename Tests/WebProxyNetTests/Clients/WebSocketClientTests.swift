import Testing
import WebProxyTestSupport

@testable import WebProxyNet

typealias UpgradeResult = Result<WebSocketEndpoint, WebSocketClientError>

/// Opens a client WebSocket to `server` on the loop.
@discardableResult
func connectWebSocket(
    to server: HTTPServer, loop: EventLoop, resolver: Resolver, context: TLSContext, target: String = "/ws",
    subprotocol: String = "relay.v1", completion: @escaping (UpgradeResult) -> Void
) -> WebSocketClient {
    WebSocketClient.connect(
        to: endpoint(of: server), dialer: SecureDialer(context: context), resolver: resolver, loop: loop,
        configuration: WebSocketClient.Configuration(
            target: target, subprotocol: subprotocol,
            fields: WebSocketHandshake.upgradeFields(subprotocol: subprotocol, origin: "https://web.example.org"),
            maxMessageBytes: 8 << 20),
        completion: completion)
}

@Suite("WebSocketClient and server endpoints over loopback TLS")
struct WebSocketClientTests {
    struct EchoOutcome: Sendable {
        var echoedMatches = false
        var messageCount = 0
        var pongs: [[UInt8]] = []
        var sawDrainOrNeverBlocked = false
        var clientOutcome: WebSocketCloseOutcome?
        var serverOutcome: WebSocketCloseOutcome?
        var upgradeHeaders: [String] = []
    }

    @Test func echoesMebibytesOfMessagesPingsAndClosesCleanly() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let outcome: EchoOutcome = try await onLoop(loop, timeout: .seconds(60)) { done in
                var outcome = EchoOutcome()
                // 4 messages of 1 MiB and 200 small ones: several MiB in total.
                let messages =
                    (0..<4).map { payload(1 << 20, seed: UInt8($0)) } + (0..<200).map { payload($0 + 1, seed: 3) }
                var serverEcho: EchoWebSocket?
                let server = try startTestServer(
                    on: loop, context: tls.server,
                    handler: { request, responder in
                        outcome.upgradeHeaders = request.head.headers.fields.map(\.name)
                        webSocketEchoHandler(serverSide: { echo in
                            serverEcho = echo
                            echo.onClose = { outcome.serverOutcome = $0 }
                        })(request, responder)
                    })
                let recorder = WebSocketRecorder()
                var next = 0
                var blocked = false
                func sendMore(_ endpoint: WebSocketEndpoint) {
                    while next < messages.count && endpoint.isWritable {
                        try? endpoint.send(messages[next])
                        next += 1
                    }
                    blocked = blocked || next < messages.count
                }
                connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client) { result in
                    guard case .success(let endpoint) = result else {
                        done(outcome)
                        return
                    }
                    recorder.onMessage = { endpoint, _ in
                        guard recorder.messages.count == messages.count else { return }
                        outcome.echoedMatches = recorder.messages == messages
                        outcome.messageCount = recorder.messages.count
                        _ = endpoint.sendPing([7, 7])
                    }
                    recorder.onPong = { endpoint, payload in
                        outcome.pongs.append(payload)
                        endpoint.close(code: .normalClosure)
                    }
                    recorder.onClose = { result in
                        outcome.clientOutcome = result
                        outcome.sawDrainOrNeverBlocked = !blocked || recorder.drained > 0
                        // The server's close callback runs when its TCP side finishes.
                        func finishWhenServerDone(_ tries: Int) {
                            if outcome.serverOutcome != nil || tries == 0 {
                                _ = serverEcho
                                done(outcome)
                            } else {
                                loop.scheduleTimer(after: .milliseconds(20)) { finishWhenServerDone(tries - 1) }
                            }
                        }
                        finishWhenServerDone(100)
                    }
                    recorder.onDrain = { sendMore($0) }
                    endpoint.delegate = recorder
                    sendMore(endpoint)
                }
            }
            #expect(outcome.messageCount == 204)
            #expect(outcome.echoedMatches)
            #expect(outcome.pongs == [[7, 7]])
            #expect(outcome.sawDrainOrNeverBlocked)
            #expect(outcome.clientOutcome == .clean(code: .normalClosure, reason: ""))
            #expect(outcome.serverOutcome == .clean(code: .normalClosure, reason: ""))
            #expect(
                outcome.upgradeHeaders == [
                    "Host", "Upgrade", "Connection", "Sec-WebSocket-Version", "Sec-WebSocket-Key",
                    "Sec-WebSocket-Protocol", "Origin",
                ])
        }
    }

    @Test func aDroppedConnectionWithoutCloseFrameIsEndOfStream() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let outcome: WebSocketCloseOutcome? = try await onLoop(loop) { done in
                let server = try startTestServer(on: loop, context: tls.server, handler: webSocketEchoHandler())
                let recorder = WebSocketRecorder()
                connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client) { result in
                    guard case .success(let endpoint) = result else { return done(nil) }
                    recorder.onClose = { done($0) }
                    endpoint.delegate = recorder
                    try? endpoint.send(Array("drop".utf8))
                }
            }
            #expect(outcome == .endOfStream)
        }
    }

    @Test func aRefusedUpgradeCarriesTheStatusAndHeaders() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let results: [WebSocketClientError?] = try await onLoop(loop) { done in
                let server = try startTestServer(
                    on: loop, context: tls.server, handler: webSocketEchoHandler(echoedSubprotocol: "other.v1"))
                connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client, target: "/missing") {
                    refused in
                    connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client) { mismatched in
                        done([refused.failure, mismatched.failure])
                    }
                }
            }
            let refused = try #require(results[0])
            guard case .upgradeRejected(let head) = refused else {
                Issue.record("expected upgradeRejected, got \(refused)")
                return
            }
            #expect(head.status == 404)
            #expect(head.headers.first("X-Reason") == "no such path")
            #expect(refused.description == "WebSocket upgrade refused with HTTP 404")
            let mismatched = try #require(results[1])
            guard case .invalidUpgrade(let error, let response) = mismatched else {
                Issue.record("expected invalidUpgrade, got \(mismatched)")
                return
            }
            #expect(error == .subprotocolMismatch)
            #expect(response.status == 101)
        }
    }

    @Test func cancellingWhileConnectingDropsTheCompletion() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (ran, later): (Bool, Bool) = try await onLoop(loop) { done in
                let server = try startTestServer(on: loop, context: tls.server, handler: webSocketEchoHandler())
                var ran = false
                let attempt = connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client) { _ in
                    ran = true
                }
                attempt.cancel()
                // A second upgrade completing proves the loop ran well past the first.
                connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client) { result in
                    if case .success(let endpoint) = result { endpoint.abort() }
                    done((ran, (try? result.get()) != nil))
                }
            }
            #expect(!ran)
            #expect(later)
        }
    }

    @Test func aCloseTheServerNeverAnswersTimesOut() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let outcome: WebSocketCloseOutcome? = try await onLoop(loop) { done in
                var serverEndpoints: [WebSocketEndpoint] = []
                // The server upgrades but sets no delegate, so it never reads our Close.
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    guard let upgrade = try? WebSocketHandshake.validateUpgradeRequest(request.head),
                        let endpoint = responder.upgradeToWebSocket(
                            response101: WebSocketHandshake.upgradeResponse(key: upgrade.key, subprotocol: "relay.v1"))
                    else { return }
                    serverEndpoints.append(endpoint)
                }
                let recorder = WebSocketRecorder()
                _ = WebSocketClient.connect(
                    to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver, loop: loop,
                    configuration: WebSocketClient.Configuration(
                        target: "/ws", subprotocol: "relay.v1", closeTimeout: .milliseconds(300))
                ) { result in
                    guard case .success(let endpoint) = result else { return done(nil) }
                    recorder.onClose = { done($0) }
                    endpoint.delegate = recorder
                    endpoint.close()
                }
            }
            #expect(outcome == .timedOut)
        }
    }

    @Test func anUnansweredUpgradeTimesOut() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let outcome: WebSocketCloseOutcome? = try await onLoop(loop) { done in
                var parked: [HTTPResponder] = []
                // The server accepts TLS and the upgrade request but never answers: the
                // client's upgrade deadline fires first.
                let server = try startTestServer(on: loop, context: tls.server) { _, responder in
                    parked.append(responder)
                }
                _ = WebSocketClient.connect(
                    to: endpoint(of: server), dialer: SecureDialer(context: tls.client), resolver: resolver, loop: loop,
                    configuration: WebSocketClient.Configuration(
                        target: "/ws", subprotocol: "relay.v1", upgradeTimeout: .milliseconds(300))
                ) { result in
                    if case .failure(.timedOut) = result { done(.timedOut) } else { done(nil) }
                }
            }
            #expect(outcome == .timedOut)
        }
    }
}
