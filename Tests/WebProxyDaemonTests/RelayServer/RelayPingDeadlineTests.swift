import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

@testable import WebProxyDaemon

/// The relay's WebSocket read deadline (twice `longPoll`) through the shell: a client Ping
/// refreshes it, as the reference relay's does.
@Suite struct RelayPingDeadlineTests {
    static let longPoll = Duration.milliseconds(200)
    /// Three read deadlines: long enough for a silent socket to be dropped with margin.
    static let watch = Duration.milliseconds(1200)

    /// Opens the `websocket` session socket and never reads from it, so the relay's own
    /// Pings go unanswered; sends a Ping every `pingEvery` (nil: never) for `watch`, then
    /// returns how many sessions the relay still has.
    func sessionsLeft(pingEvery: Duration?) async throws -> Int {
        var limits = RelayLimits()
        limits.longPoll = Self.longPoll
        let harness = try await RelayServerHarness(mode: .websocket, limits: limits)
        do {
            let session = try await TestRelayServerTests.establish(harness, mode: .websocket)
            let upgrade = WebSocketUpgrade(channel: CarrierChannel(api: harness.api, session: session.token, lane: nil))
            let configuration = try #require(RelayTransport.webSocketConfiguration(upgrade.request, timeout: .seconds(20)))
            let endpoint = SecureEndpoint(
                origin: DialTarget(host: RelayServerHarness.host, port: 443)!,
                connectTo: DialTarget(host: "127.0.0.1", port: harness.port)!)
            let dialer = SecureDialer(dialer: Dialer(timeout: .seconds(5)), context: harness.clientContext)
            let resolver = harness.resolver
            let loop = harness.loop
            let left: Int = try await onRelayLoop(loop) { [harness] done in
                var client: WebSocketClient?
                client = WebSocketClient.connect(
                    to: endpoint, dialer: dialer, resolver: resolver, loop: loop, configuration: configuration
                ) { result in
                    _ = client
                    guard case .success(let socket) = result else { return done(.failure(RelayServerTimeout())) }
                    // No delegate: nothing is read, so no Pong ever answers the relay.
                    var pinging = true
                    func ping(every interval: Duration) {
                        loop.scheduleTimer(after: interval) {
                            guard pinging else { return }
                            socket.sendPing(Array("keepalive".utf8))
                            ping(every: interval)
                        }
                    }
                    if let pingEvery { ping(every: pingEvery) }
                    loop.scheduleTimer(after: Self.watch) {
                        pinging = false
                        let count = harness.relay?.sessionCount ?? -1
                        socket.abort()
                        done(.success(count))
                    }
                }
            }
            await harness.shutdown()
            return left
        } catch {
            await harness.shutdown()
            throw error
        }
    }

    @Test func aClientThatOnlyPingsIsNotDropped() async throws {
        #expect(try await sessionsLeft(pingEvery: .milliseconds(100)) == 1)
    }

    @Test func aSilentClientIsDroppedAtTheReadDeadline() async throws {
        #expect(try await sessionsLeft(pingEvery: nil) == 0)
    }
}
