import Testing
@testable import WebProxyNet

@Suite struct HTTPRequestParserTests {
    /// Requests as recorded in 02/03/07 fixtures, plus a raw target and duplicate headers.
    static let conversation: (input: [UInt8], expected: [ParsedEvent]) = {
        var input: [UInt8] = []
        var expected: [ParsedEvent] = []
        func add(_ head: HTTPRequestHead, body: [UInt8]?, keepAlive: Bool = true) {
            input += try! head.encoded(body: body)
            var parsed = head
            if let body, !head.headers.contains("Content-Length") {
                parsed.headers.append(name: "Content-Length", value: String(body.count))
            }
            expected.append(.requestHead(parsed))
            if let body, !body.isEmpty { expected.append(.body(body)) }
            expected.append(.end(keepAlive: keepAlive))
        }
        add(
            HTTPRequestHead(
                method: "GET", target: "/?bridge=MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk",
                headers: [("Host", "proxy.example.com")]), body: nil)
        add(
            HTTPRequestHead(
                method: "POST", target: "/api/v1/session",
                headers: [
                    ("Host", "proxy.example.com"), ("Authorization", "Bearer CUlFmH0UWFfccKoXTzJtH-GCBE5_8_q5CLVZQJxblJw"),
                    ("Content-Type", "application/octet-stream"),
                ]), body: hexBytes("100000000000000101"))
        add(
            WebSocketHandshake.upgradeRequest(
                target: "/api/v1/ws", host: "proxy.example.com", key: "dGhlIHNhbXBsZSBub25jZQ==",
                fields: WebSocketHandshake.upgradeFields(
                    subprotocol: "tproxy-v1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY",
                    origin: "https://proxy.example.com")), body: nil)
        add(
            HTTPRequestHead(
                method: "POST", target: "/api/v1/up?x=%2F&y=%zz#frag",
                headers: [("Host", "a"), ("Cookie", "a=1"), ("cookie", "b=2"), ("X-Empty", ""), ("Content-Length", "0")]),
            body: [])
        add(
            HTTPRequestHead(method: "DELETE", target: "/api/v1/session", headers: [("Connection", "close")]),
            body: nil, keepAlive: false)
        return (input, expected)
    }()

    @Test func parsesConversationAtEverySplitPoint() {
        let (input, expected) = Self.conversation
        for pieces in everySplit(of: input) {
            let events = parseRequests(pieces)
            #expect(events == expected, "split into \(pieces.map(\.count))")
            if events != expected { return }
        }
    }

    @Test func keepsTheRawTargetAndHeaderOrder() throws {
        let wire = "GET /a//b/../c?q=%41&q=B HTTP/1.1\r\nX-B: 2\r\nx-a: 1\r\nX-B: 3\r\n\r\n"
        var parser = HTTPRequestParser()
        parser.receive(Array(wire.utf8))
        let head = HTTPRequestHead(
            method: "GET", target: "/a//b/../c?q=%41&q=B", headers: [("X-B", "2"), ("x-a", "1"), ("X-B", "3")])
        #expect(try parser.next() == .head(head))
        #expect(head.headers.values("x-b") == ["2", "3"])
        #expect(try parser.next() == .end(keepAlive: true))
        #expect(try parser.next() == nil)
        #expect(parser.isIdle)
    }

    @Test func http10RequestIsNotKeptAlive() throws {
        var parser = HTTPRequestParser()
        parser.receive(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        #expect(try parser.next() == .head(HTTPRequestHead(method: "GET", target: "/", version: .http1_0)))
        #expect(try parser.next() == .end(keepAlive: false))
    }

    @Test func upgradeLeavesTheFollowingBytes() throws {
        var parser = HTTPRequestParser()
        let request = WebSocketHandshake.upgradeRequest(
            target: "/api/v1/ws", host: "h", key: "dGhlIHNhbXBsZSBub25jZQ==",
            fields: WebSocketHandshake.upgradeFields(subprotocol: "p"))
        let frame = hexBytes("828037fa213d")
        parser.receive(try request.encoded() + frame)
        #expect(try parser.next() == .head(request))
        #expect(try parser.next() == .end(keepAlive: true))
        #expect(parser.takeUnparsedBytes() == frame)
    }

    static let malformed: [(String, HTTPError)] = [
        ("POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", .chunkedRequestUnsupported),
        ("POST /up HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", .conflictingContentLength),
        ("POST /up HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding),
        ("POST /up HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding),
        ("POST /up HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", .invalidContentLength),
        ("GET /x HTTP/1.1 extra\r\n\r\n", .invalidRequestLine),
        ("GET  /x HTTP/1.1\r\n\r\n", .invalidRequestLine),
        ("GET /x\r\n\r\n", .invalidRequestLine),
        ("G(T /x HTTP/1.1\r\n\r\n", .invalidRequestLine),
        ("GET /x HTTP/1.1 \r\n\r\n", .invalidRequestLine),
        ("GET /x http/1.1\r\n\r\n", .invalidRequestLine),
        ("\r\nGET /x HTTP/1.1\r\n\r\n", .invalidRequestLine),
        ("GET /x HTTP/1.7\r\n\r\n", .unsupportedVersion),
        ("GET /\u{7F} HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET /é HTTP/1.1\r\n\r\n", .invalidTarget),
        ("GET /x\tHTTP/1.1\r\n\r\n", .invalidRequestLine),
        ("GET /x HTTP/1.1\r\nHost: a\r\n b\r\n\r\n", .obsoleteLineFolding),
        ("GET /x HTTP/1.1\nHost: a\r\n\r\n", .bareLineFeed),
        ("GET /x HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", .bareCarriageReturn),
        ("GET /x HTTP/1.1\r\nHost : a\r\n\r\n", .invalidHeaderName),
        ("GET /x HTTP/1.1\r\nHost: a\u{0}\r\n\r\n", .invalidHeaderValue),
    ]

    @Test(arguments: malformed.indices)
    func malformedRequestIsRejected(index: Int) {
        let (text, error) = Self.malformed[index]
        let input = Array(text.utf8)
        for pieces in [[input[...]], input.indices.map { input[$0...$0] }] {
            let events = parseRequests(pieces)
            #expect(events.last == .failed(error), "case \(index): \(events)")
        }
    }

    @Test func bodyCapAndTruncation() throws {
        var limits = HTTPParserLimits()
        limits.maxBodyBytes = 4
        let head = HTTPRequestHead(method: "POST", target: "/up", headers: [("Content-Length", "5")])
        let input = try head.encoded(body: Array("hello".utf8))
        // The head still arrives, so a server can answer it before closing.
        #expect(parseRequests([input[...]], limits: limits) == [.requestHead(head), .failed(.bodyTooLarge)])
        #expect(parseRequests([input.dropLast()]) == [.requestHead(head), .body(Array("hell".utf8)), .failed(.truncatedMessage)])
        #expect(parseRequests([Array("GET / HTTP/1.1\r\nHost".utf8)[...]]) == [.failed(.truncatedMessage)])
        #expect(parseRequests([]) == [])
    }
}
