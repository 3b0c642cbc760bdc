import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

@testable import WebProxyDaemon

/// The relay shell over real TLS and sockets: bridge page, session, echo through the backend.
@Suite struct TestRelayServerTests {
    /// Fetches the bridge page and creates a session of `mode`.
    static func establish(_ harness: RelayServerHarness, mode: CarrierMode) async throws
        -> EstablishedSession
    {
        let pageResponse = try await harness.send(
            BridgePage.request(
                host: RelayServerHarness.host, basePath: "",
                capability: harness.capability.urlSafeValue))
        #expect(pageResponse.status == 200)
        guard case .accepted(let page) = BridgePage.judge(pageResponse) else {
            Issue.record("the bridge page was not accepted")
            throw RelayServerTimeout()
        }
        #expect(page.carrierMode == mode)
        let creation = SessionCreation(page: page, api: harness.api)
        let created = try await harness.send(creation.request)
        #expect(created.status == 200)
        guard case .accepted(let session) = creation.judge(created) else {
            Issue.record("the session was not created")
            throw RelayServerTimeout()
        }
        #expect(session.carrierMode == mode)
        return session
    }

    @Test func httpsSessionEchoesThroughTheBackend() async throws {
        let harness = try await RelayServerHarness(mode: .https)
        do {
            let session = try await Self.establish(harness, mode: .https)
            #expect(try await harness.withRelay { $0.sessionCount } == 1)

            let stream = StreamID.first
            let payload = Array("hello relay".utf8)
            let upBody = [Frame.open(stream: stream), Frame.data(stream: stream, payload: payload[...])]
                .encodedBatch()
            let up = try await harness.send(
                harness.api.up(session: session.token, sequence: 1, lane: nil, body: upBody))
            #expect(up.status == 204)

            // Poll until the echo came back (the relay parks the poll until frames are ready).
            var echoed: [UInt8] = []
            var windowCredit: UInt64 = 0
            var cursor: UInt64 = 0
            var polls = 0
            while echoed.count < payload.count, polls < 10 {
                polls += 1
                let down = try await harness.send(
                    harness.api.down(session: session.token, cursor: cursor, lane: nil))
                if down.status == 204 { continue }
                #expect(down.status == 200)
                #expect(down.header("Content-Length") == String(down.body.count))
                if let next = down.header("X-Down-Cursor").flatMap({ UInt64($0) }) { cursor = next }
                for frame in try FrameBatch.decode(down.body[...], direction: .relayToClient) {
                    switch frame {
                    case .data(let id, let bytes):
                        #expect(id == stream)
                        echoed += bytes
                    case .window(let id, let delta):
                        #expect(id == stream)
                        windowCredit += UInt64(delta)
                    default:
                        Issue.record("unexpected frame \(frame.type)")
                    }
                }
            }
            #expect(echoed == payload)
            #expect(windowCredit == UInt64(payload.count))

            let deleted = try await harness.send(harness.api.deleteSession(session: session.token))
            #expect(deleted.status == 204)
            #expect(try await harness.withRelay { $0.sessionCount } == 0)
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }

    @Test func parkedPollIsAnsweredByTheTickAndARefusedDialClosesTheStream() async throws {
        var limits = RelayLimits()
        limits.longPoll = .milliseconds(100)
        let harness = try await RelayServerHarness(mode: .https, limits: limits, deadBackend: true)
        do {
            let session = try await Self.establish(harness, mode: .https)
            // Nothing to send: the relay parks the poll and its timer answers 204.
            let idle = try await harness.send(
                harness.api.down(session: session.token, cursor: 0, lane: nil))
            #expect(idle.status == 204)
            #expect(idle.header("X-Down-Cursor") == "0")

            // OPEN to a backend that refuses the dial: the relay answers CLOSE.
            let stream = StreamID.first
            let up = try await harness.send(
                harness.api.up(
                    session: session.token, sequence: 1, lane: nil,
                    body: [Frame.open(stream: stream)].encodedBatch()))
            #expect(up.status == 204)
            var frames: [Frame] = []
            var polls = 0
            while !frames.contains(.close(stream: stream)), polls < 10 {
                polls += 1
                let down = try await harness.send(
                    harness.api.down(session: session.token, cursor: 0, lane: nil))
                if down.status == 200 {
                    frames += try FrameBatch.decode(down.body[...], direction: .relayToClient)
                }
            }
            #expect(frames == [.close(stream: stream)])
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }
}

/// The `websocket` carrier through the shell: upgrade, echo, then the session ends with the socket.
@Suite struct TestRelayServerWebSocketTests {
    /// The echo's frames and how the relay ended the socket, gathered on the loop.
    struct Outcome: Sendable {
        var echoed: [UInt8]
        var credit: UInt64
        var decodeFailed: Bool
        var sessionsAfterEcho: Int
        var close: WebSocketCloseOutcome?
    }

    @Test func websocketSessionEchoesThroughTheBackend() async throws {
        let harness = try await RelayServerHarness(mode: .websocket)
        do {
            let session = try await TestRelayServerTests.establish(harness, mode: .websocket)
            let upgrade = WebSocketUpgrade(
                channel: CarrierChannel(api: harness.api, session: session.token, lane: nil))
            let configuration = try #require(RelayTransport.webSocketConfiguration(upgrade.request, timeout: .seconds(20)))
            let endpoint = SecureEndpoint(
                origin: DialTarget(host: RelayServerHarness.host, port: 443)!,
                connectTo: DialTarget(host: "127.0.0.1", port: harness.port)!)
            let dialer = SecureDialer(dialer: Dialer(timeout: .seconds(5)), context: harness.clientContext)
            let stream = StreamID.first
            let payload = Array("hello relay".utf8)
            let message = [Frame.open(stream: stream), Frame.data(stream: stream, payload: payload[...])]
                .encodedBatch()
            let resolver = harness.resolver
            let loop = harness.loop

            let outcome: Outcome = try await onRelayLoop(loop) { [harness] done in
                let probe = RelayWebSocketProbe()
                var client: WebSocketClient?
                client = WebSocketClient.connect(
                    to: endpoint, dialer: dialer, resolver: resolver, loop: loop,
                    configuration: configuration
                ) { result in
                    _ = client
                    guard case .success(let socket) = result else {
                        return done(.failure(RelayServerTimeout()))
                    }
                    var result = Outcome(
                        echoed: [], credit: 0, decodeFailed: false, sessionsAfterEcho: -1, close: nil)
                    probe.onProgress = {
                        guard result.sessionsAfterEcho < 0, probe.data(on: stream).count >= payload.count,
                            probe.credit(on: stream) >= UInt64(payload.count)
                        else { return }
                        result.echoed = probe.data(on: stream)
                        result.credit = probe.credit(on: stream)
                        result.decodeFailed = probe.decodeFailed
                        result.sessionsAfterEcho = harness.relay?.sessionCount ?? -1
                        socket.close(code: .normalClosure)
                    }
                    probe.onClose = { outcome in
                        result.close = outcome
                        done(.success(result))
                    }
                    socket.delegate = probe
                    do { try socket.send(message) } catch { done(.failure(error)) }
                }
            }
            #expect(outcome.echoed == payload)
            #expect(outcome.credit == UInt64(payload.count))
            #expect(!outcome.decodeFailed)
            #expect(outcome.sessionsAfterEcho == 1)
            #expect(outcome.close == .clean(code: .normalClosure, reason: ""))
            #expect(try await harness.withRelay { $0.sessionCount } == 0)
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }
}
