import Glibc
import Testing
import WebProxyNet
import WebProxyTestSupport

@testable import WebProxyDaemon

/// What the metrics endpoint answers to each kind of request, over loopback sockets.
@Suite(.serialized) struct MetricsServerTests {
    static let get = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\nAccept: */*\r\n\r\n".utf8)

    /// The status line answered to `pieces`, each sent on its own, or nil without an answer.
    static func statusLine(port: UInt16, _ pieces: [[UInt8]]) -> String? {
        guard let client = BlockingClient(port: port) else { return nil }
        defer { client.close() }
        for piece in pieces where !piece.isEmpty {
            guard client.send(piece) else { return nil }
        }
        let answer = String(decoding: client.receiveUntilClosed().bytes, as: UTF8.self)
        return answer.split(separator: "\r\n", maxSplits: 1).first.map(String.init)
    }

    @Test func everySplitPointWaitsForTheWholeHead() throws {
        let server = try MetricsServerFixture()
        defer { server.stop() }
        for split in 0..<Self.get.count {
            let status = Self.statusLine(port: server.port, [Array(Self.get[..<split]), Array(Self.get[split...])])
            #expect(status == "HTTP/1.1 200 OK", "split at \(split)")
        }
    }

    @Test func eachRequestGetsItsAnswer() throws {
        let server = try MetricsServerFixture()
        defer { server.stop() }
        for (request, expected) in [
            ("GET /metrics?x=1 HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK"),
            ("GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
            ("GET /metricsx HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
            ("POST /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"),
            ("HEAD /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"),
            ("GET /metrics\r\n\r\n", "HTTP/1.1 400 Bad Request"),
            ("GET /metrics HTTP/2.0\r\n\r\n", "HTTP/1.1 400 Bad Request"),
            ("GET  /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"),
            ("POST /metrics HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", "HTTP/1.1 413 Content Too Large"),
        ] {
            #expect(Self.statusLine(port: server.port, [Array(request.utf8)]) == expected, "\(request)")
        }
    }

    @Test func aHeadIsRefusedPastTheBound() throws {
        let server = try MetricsServerFixture()
        defer { server.stop() }
        // A whole head of `maxHeadBytes` is read; that many bytes without the head's end are
        // refused.
        let start = Array("GET /metrics HTTP/1.1\r\nX: ".utf8)
        let end = Array("\r\n\r\n".utf8)
        let fill = MetricsServer.maxHeadBytes - start.count - end.count
        let atBound = start + [UInt8](repeating: 0x61, count: fill) + end
        #expect(Self.statusLine(port: server.port, [atBound]) == "HTTP/1.1 200 OK")
        let endless = start + [UInt8](repeating: 0x61, count: MetricsServer.maxHeadBytes - start.count)
        #expect(Self.statusLine(port: server.port, [endless]) == "HTTP/1.1 431 Request Header Fields Too Large")
    }

    @Test func clientsPastTheBoundAreReset() throws {
        let server = try MetricsServerFixture()
        defer { server.stop() }
        // Connected and silent, each holds a place until `requestTimeout`.
        let held = (0..<MetricsServer.maxConnections).compactMap { _ in BlockingClient(port: server.port) }
        defer { held.forEach { $0.close() } }
        try #require(held.count == MetricsServer.maxConnections)
        #expect(Self.statusLine(port: server.port, [Self.get]) == nil, "one more is reset")
        held[0].close()
        // The server hears of the close on its own time: ask again until it has (a safety
        // bound of 5 s, not a speed assertion).
        var answered: String?
        for _ in 0..<250 where answered == nil {
            answered = Self.statusLine(port: server.port, [Self.get])
            if answered == nil { usleep(20_000) }
        }
        #expect(answered == "HTTP/1.1 200 OK", "a place freed is taken again")
    }
}

/// A metrics endpoint on loopback, on a loop of its own, whose text is `metric 1`.
final class MetricsServerFixture {
    private let loop: EventLoop
    private let server: LoopBox<MetricsServer>
    let port: UInt16

    init() throws {
        loop = try EventLoop(name: "metrics-test")
        let box = LoopBox<MetricsServer>()
        do {
            port = try loop.submitAndWait { [loop] in
                let server = try MetricsServer(address: .loopbackIPv4(port: 0), loop: loop) { "metric 1\n" }
                box.value = server
                return server.localAddress?.port ?? 0
            }
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
        }
        server = box
    }

    func stop() {
        loop.execute { [server] in server.value?.close() }
        loop.stop()
        loop.waitUntilStopped()
    }
}
