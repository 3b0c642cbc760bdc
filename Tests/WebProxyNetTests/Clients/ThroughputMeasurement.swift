import Glibc
import Testing
import WebProxyTestSupport

@testable import WebProxyNet

/// Loopback figures for Docs/NETWORK.md. Not a timed test: it asserts only that the data
/// arrived intact, prints what it measured, and runs only when asked for:
///
///     WEBPROXYD_MEASURE=1 swift test -c release -Xswiftc -enable-testing \
///         --filter ThroughputMeasurement
@Suite("Throughput measurement (WEBPROXYD_MEASURE=1)", .enabled(if: getenv("WEBPROXYD_MEASURE") != nil))
struct ThroughputMeasurement {
    struct Figures: Sendable {
        var seconds = 0.0
        var count = 0
        var bytes = 0
        var intact = true
    }

    static func seconds(from start: MonotonicTime, to end: MonotonicTime) -> Double {
        Double((end - start).components.seconds) + Double((end - start).components.attoseconds) / 1e18
    }

    /// Sequential requests on one keep-alive connection; the server echoes the body.
    func httpsRoundTrips(count: Int, bodyBytes: Int) async throws -> Figures {
        let tls = try ClientTLS()
        let body = payload(bodyBytes, seed: 1)
        return try await withLoopAndResolver { loop, resolver in
            try await onLoop(loop, timeout: .seconds(300)) { done in
                let server = try startTestServer(
                    on: loop, context: tls.server,
                    configuration: HTTPServer.Configuration(parserLimits: HTTPParserLimits(maxBodyBytes: 64 << 20))
                ) { request, responder in
                    responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: request.body)
                }
                let client = makeClient(
                    for: server, loop: loop, resolver: resolver, context: tls.client,
                    configuration: HTTPClient.Configuration(parserLimits: HTTPParserLimits(maxBodyBytes: 64 << 20)))
                var figures = Figures()
                let request = HTTPClientRequest(method: "POST", target: "/echo", body: body)
                var start = loop.now
                func next(_ remaining: Int) {
                    guard remaining > 0 else {
                        figures.seconds = Self.seconds(from: start, to: loop.now)
                        return done(figures)
                    }
                    client.execute(request) { result in
                        figures.intact = figures.intact && (try? result.get().body) == body
                        figures.count += 1
                        figures.bytes += 2 * body.count
                        next(remaining - 1)
                    }
                }
                // One warm-up request opens the connection outside the measurement.
                client.execute(request) { _ in
                    start = loop.now
                    next(count)
                }
            }
        }
    }

    /// The client streams `count` messages of `size` bytes (keeping the send queue full)
    /// and the server echoes them; timed until the last echo arrives.
    func webSocketEcho(count: Int, size: Int) async throws -> Figures {
        let tls = try ClientTLS()
        let message = payload(size, seed: 2)
        return try await withLoopAndResolver { loop, resolver in
            try await onLoop(loop, timeout: .seconds(300)) { done in
                let server = try startTestServer(on: loop, context: tls.server, handler: webSocketEchoHandler())
                let recorder = WebSocketRecorder()
                var figures = Figures()
                var sent = 0
                var start = loop.now
                func sendMore(_ endpoint: WebSocketEndpoint) {
                    while sent < count && endpoint.isWritable {
                        try? endpoint.send(message)
                        sent += 1
                    }
                }
                connectWebSocket(to: server, loop: loop, resolver: resolver, context: tls.client) { result in
                    guard case .success(let endpoint) = result else { return done(figures) }
                    recorder.onMessage = { endpoint, received in
                        figures.intact = figures.intact && received == message
                        figures.count += 1
                        figures.bytes += received.count
                        recorder.messages.removeAll(keepingCapacity: true)
                        if figures.count == count {
                            figures.seconds = Self.seconds(from: start, to: loop.now)
                            endpoint.abort()
                            done(figures)
                        }
                    }
                    recorder.onDrain = { sendMore($0) }
                    endpoint.delegate = recorder
                    start = loop.now
                    sendMore(endpoint)
                }
            }
        }
    }

    @Test func httpsAndWebSocketOnLoopback() async throws {
        var lines: [String] = []
        for (count, size) in [(2_000, 1_024), (40, 4 << 20)] {
            let figures = try await httpsRoundTrips(count: count, bodyBytes: size)
            #expect(figures.intact && figures.count == count)
            lines.append(
                "HTTPS POST echo \(size) B x \(count): \(Int(Double(count) / figures.seconds)) req/s, "
                    + "\(Int(figures.seconds / Double(count) * 1e6)) us/req, "
                    + "\(Int(Double(figures.bytes) / figures.seconds / 1_048_576)) MiB/s (both directions)")
        }
        for (count, size) in [(100_000, 64), (8_192, 16_384), (256, 1 << 20)] {
            let figures = try await webSocketEcho(count: count, size: size)
            #expect(figures.intact && figures.count == count)
            lines.append(
                "WebSocket echo \(size) B x \(count): \(Int(Double(count) / figures.seconds)) msg/s, "
                    + "\(Int(Double(figures.bytes) / figures.seconds / 1_048_576)) MiB/s echoed")
        }
        for line in lines { print("MEASURE \(line)") }
    }
}
