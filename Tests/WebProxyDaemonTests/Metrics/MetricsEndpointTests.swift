import Testing
import WebProxyCore
import WebProxyTestSupport

@testable import WebProxyDaemon

/// `[daemon] metrics` served by a daemon running in-process, read with real HTTP GETs.
@Suite(.serialized) struct MetricsEndpointTests {
    static func get(port: UInt16, _ request: String) -> String? {
        guard let client = BlockingClient(port: port) else { return nil }
        defer { client.close() }
        guard client.send(Array(request.utf8)) else { return nil }
        return String(decoding: client.receive(count: 1 << 20), as: UTF8.self)
    }

    @Test func metricsOverLoopbackHTTP() throws {
        let metricsPort = unusedLoopbackPort()
        let fixture = try DaemonFixture(name: "metrics", metrics: try ListenAddress(parsing: "127.0.0.1:\(metricsPort)"))
        #expect(fixture.waitForSessionUp())
        #expect(fixture.daemon.metricsAddress()?.port == metricsPort)

        let response = try #require(Self.get(port: metricsPort, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        let parts = response.split(separator: "\r\n\r\n", maxSplits: 1).map(String.init)
        try #require(parts.count == 2)
        let head = parts[0].split(separator: "\r\n").map(String.init)
        #expect(head.first == "HTTP/1.1 200 OK")
        #expect(head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"))
        #expect(head.contains("Content-Length: \(parts[1].utf8.count)"))
        #expect(head.contains("Connection: close"))
        let lines = Set(parts[1].split(separator: "\n").map(String.init))
        for expected in [
            "webproxyd_build_info{version=\"\(WebProxyDaemon.version)\"} 1",
            "webproxyd_sessions_established_total{relay=\"default\"} 1",
            "webproxyd_session_up{relay=\"default\"} 1",
            "webproxyd_streams{relay=\"default\"} 0",
            "webproxyd_connections_refused_total{relay=\"default\"} 0",
            "webproxyd_reconnects_total{relay=\"default\"} 0",
            "webproxyd_bytes_total{relay=\"default\",direction=\"up\"} 0",
            "webproxyd_bytes_total{relay=\"default\",direction=\"down\"} 0",
            // HELLO and WELCOME.
            "webproxyd_frames_total{relay=\"default\",direction=\"up\"} 1",
            "webproxyd_frames_total{relay=\"default\",direction=\"down\"} 1",
            // The bridge page and the session creation, both answered.
            "webproxyd_carrier_request_seconds_count{relay=\"default\",carrier=\"bootstrap\"} 2",
            "webproxyd_carrier_request_seconds_bucket{relay=\"default\",carrier=\"bootstrap\",le=\"+Inf\"} 2",
        ] {
            #expect(lines.contains(expected), "missing: \(expected)")
        }
        #expect(!lines.contains { $0.hasPrefix("webproxyd_errors_total{") })
        // The bootstrap's connection at least, counted whether or not it resumed.
        let httpConnections = lines.filter { $0.hasPrefix("webproxyd_tls_connections_total{relay=\"default\",use=\"http\"") }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
        #expect(httpConnections.count == 2 && httpConnections.reduce(0, +) >= 1, "\(httpConnections)")
        #expect(lines.contains { $0.hasPrefix("webproxyd_requests_per_connection{relay=\"default\"} ") })

        let missing = try #require(Self.get(port: metricsPort, "GET /other HTTP/1.1\r\n\r\n"))
        #expect(missing.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        let post = try #require(Self.get(port: metricsPort, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"))
        #expect(post.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        let huge = try #require(Self.get(port: metricsPort, "GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: 9000)))
        #expect(huge.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))

        #expect(fixture.stop() == 0)
        // The port is free again, so another test's listener may have taken it: what counts is
        // that our endpoint no longer answers there.
        let afterStop = Self.get(port: metricsPort, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(afterStop?.contains("webproxyd_build_info") != true, "the endpoint closes with the daemon")
    }

    @Test func aNonLoopbackMetricsAddressNeedsTheOptIn() throws {
        let refused = #"""
            [daemon]
            metrics = 0.0.0.0:9100
            [relay home]
            link = tg://webproxy?server=proxy.example.com&secret=000102030405060708090a0b0c0d0e0f
            listen = 127.0.0.1:8443
            """#
        #expect(throws: ConfigurationError.self) { try DaemonConfiguration.parse(refused, file: "t.conf", environment: [:]) }
        let allowed = refused.replacing("[daemon]\n", with: "[daemon]\nallow-non-loopback = yes\n")
        let loaded = try DaemonConfiguration.parse(allowed, file: "t.conf", environment: [:])
        #expect(loaded.configuration.metrics?.description == "0.0.0.0:9100")
        #expect(loaded.warnings.count == 1)
    }
}
