import Testing

@testable import WebProxyNet

/// HTTP2Session client and server in memory, bytes moved by hand: the events each side
/// reports and what it sends, with no sockets or timers.
@Suite struct HTTP2SessionTests {
    /// Moves everything each side has to say to the other until both are quiet; returns the
    /// events each side saw.
    @discardableResult
    static func exchange(
        _ client: HTTP2Session, _ server: HTTP2Session
    ) throws -> (client: [HTTP2Session.Event], server: [HTTP2Session.Event]) {
        var clientEvents: [HTTP2Session.Event] = []
        var serverEvents: [HTTP2Session.Event] = []
        for _ in 0..<20 {
            let toServer = client.takeOutput(limit: 1 << 20)
            let toClient = server.takeOutput(limit: 1 << 20)
            if toServer.isEmpty && toClient.isEmpty { break }
            try toServer.withUnsafeBytes { try server.receive($0) }
            try toClient.withUnsafeBytes { try client.receive($0) }
            clientEvents += client.takeEvents()
            serverEvents += server.takeEvents()
        }
        return (clientEvents, serverEvents)
    }

    static func request(_ path: String) -> [HTTPField] {
        [
            HTTPField(name: ":method", value: "POST"), HTTPField(name: ":authority", value: "relay.example.com"),
            HTTPField(name: ":scheme", value: "https"), HTTPField(name: ":path", value: path),
        ]
    }

    @Test func aRequestAndItsResponseCrossWithBodiesLargerThanTheDefaultWindow() throws {
        let client = try HTTP2Session(role: .client, settings: .browser)
        let server = try HTTP2Session(role: .server, settings: .front)
        let body = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let stream = try #require(client.submitRequest(Self.request("/up"), body: body))
        let first = try Self.exchange(client, server)
        #expect(first.server.first == .settings)
        #expect(first.server.contains(.headers(stream: stream, fields: Self.request("/up"))))
        let announced = first.server.reduce(0) { total, event in
            if case .data(stream, let count) = event { total + count } else { total }
        }
        #expect(announced == body.count)
        #expect(server.takeReceivedBody(of: stream) == body)
        #expect(server.receivedBodyCount(of: stream) == 0)
        #expect(first.server.contains(.endStream(stream: stream)))

        #expect(server.submitResponse(stream: stream, fields: [HTTPField(name: ":status", value: "200")], body: body))
        let second = try Self.exchange(client, server)
        #expect(client.takeReceivedBody(of: stream) == body)
        #expect(second.client.contains(.headers(stream: stream, fields: [HTTPField(name: ":status", value: "200")])))
        #expect(second.client.contains(.endStream(stream: stream)))
        #expect(second.client.contains(.streamClosed(stream: stream, errorCode: 0)))
        #expect(client.peerMaxConcurrentStreams == 250)
    }

    @Test func aStreamPastTheGoAwaysLastOneIsReportedRefused() throws {
        let client = try HTTP2Session(role: .client, settings: .browser)
        let server = try HTTP2Session(role: .server, settings: .front)
        let kept = try #require(client.submitRequest(Self.request("/a"), body: nil))
        try Self.exchange(client, server)
        server.goAway()  // last processed: `kept`
        let late = try #require(client.submitRequest(Self.request("/b"), body: nil))
        // The GOAWAY and the late request cross on the path.
        let goAway = server.takeOutput(limit: 1 << 20)
        let request = client.takeOutput(limit: 1 << 20)
        try request.withUnsafeBytes { try server.receive($0) }
        try goAway.withUnsafeBytes { try client.receive($0) }
        let events = client.takeEvents()
        #expect(events.contains(.goAway(lastStream: kept, errorCode: 0)))
        #expect(events.contains(.streamClosed(stream: late, errorCode: HTTP2Session.ErrorCode.refusedStream)))
        #expect(!events.contains { if case .streamClosed(kept, _) = $0 { true } else { false } })
        // The server never handed the late request on.
        #expect(!server.takeEvents().contains { if case .headers(late, _) = $0 { true } else { false } })
        // The kept stream may still finish.
        #expect(server.submitResponse(stream: kept, fields: [HTTPField(name: ":status", value: "204")], body: nil))
        let finish = try Self.exchange(client, server)
        #expect(finish.client.contains(.endStream(stream: kept)))
    }

    @Test func aResetAndAPingAreReported() throws {
        let client = try HTTP2Session(role: .client, settings: .browser)
        let server = try HTTP2Session(role: .server, settings: .front)
        let stream = try #require(client.submitRequest(Self.request("/poll"), body: nil))
        try Self.exchange(client, server)
        server.reset(stream: stream, errorCode: HTTP2Session.ErrorCode.internalError)
        client.ping()
        let events = try Self.exchange(client, server)
        #expect(events.client.contains(.streamClosed(stream: stream, errorCode: HTTP2Session.ErrorCode.internalError)))
        #expect(events.client.contains(.pingAcknowledged))
    }

    @Test func garbageFromThePeerIsAnErrorNotATrap() throws {
        let server = try HTTP2Session(role: .server, settings: .front)
        let garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        #expect(throws: HTTP2Error.self) { try garbage.withUnsafeBytes { try server.receive($0) } }
    }
}
