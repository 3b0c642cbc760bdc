import Testing
@testable import WebProxyNet

/// Response heads recorded in 03-https-carrier.json (steps 2, 3, 5, 10) and 01-bridge-page.json.
enum RecordedResponses {
    static let date = ("Date", "Mon, 30 Nov 2026 06:40:09 GMT")

    static let createSession = HTTPResponseHead(
        status: 200, reason: "OK",
        headers: [
            ("Cache-Control", "no-store"), ("Content-Length", "8"),
            ("Content-Type", "application/octet-stream"), ("X-Carrier-Mode", "https"),
            ("X-Down-Cursor", "0"), ("X-Session-Token", "VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"), date,
        ])
    static let welcome = hexBytes("1100000000000000")

    static let upAck = HTTPResponseHead(
        status: 204, reason: "No Content", headers: [("Cache-Control", "no-store"), ("X-Up-Ack", "1"), date])

    static let downBatch = HTTPResponseHead(
        status: 200, reason: "OK",
        headers: [
            ("Cache-Control", "no-store"), ("Content-Length", "36"),
            ("Content-Type", "application/octet-stream"), ("X-Down-Cursor", "1"), date,
        ])
    static let batch = hexBytes("040000010000000400000010020000010000001030313233343536373839616263646566")

    static let notFound = HTTPResponseHead(
        status: 404, reason: "Not Found",
        headers: [
            ("Cache-Control", "no-store"), ("Content-Type", "text/plain; charset=utf-8"),
            ("X-Content-Type-Options", "nosniff"), date, ("Content-Length", "19"),
        ])
    static let notFoundBody = Array("404 page not found\n".utf8)

    /// The bridge page head, answered to a HEAD request: Content-Length but no body.
    static let bridgePage = HTTPResponseHead(
        status: 200, reason: "OK",
        headers: [
            ("Cache-Control", "no-store"), ("Content-Length", "18389"),
            ("Content-Type", "text/html; charset=utf-8"), ("Referrer-Policy", "no-referrer"), date,
        ])
}

@Suite struct HTTPResponseParserTests {
    /// Eight responses back to back: fixture heads serialized to wire form, HEAD, 1xx,
    /// chunked with extensions and trailers, 304, and a read-until-EOF body.
    static let conversation: (input: [UInt8], methods: [String], expected: [ParsedEvent]) = {
        var input: [UInt8] = []
        var expected: [ParsedEvent] = []
        var methods: [String] = []
        func add(_ method: String, _ head: HTTPResponseHead, body: [UInt8]?, keepAlive: Bool = true) {
            input += try! head.encoded(body: body)
            methods.append(method)
            expected.append(.responseHead(head))
            if let body, !body.isEmpty { expected.append(.body(body)) }
            expected.append(.end(keepAlive: keepAlive))
        }
        add("POST", RecordedResponses.createSession, body: RecordedResponses.welcome)
        add("POST", RecordedResponses.upAck, body: nil)
        add("POST", RecordedResponses.downBatch, body: RecordedResponses.batch)
        add("HEAD", RecordedResponses.bridgePage, body: nil)

        methods.append("GET")
        input += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        expected.append(.informational(HTTPResponseHead(status: 100, reason: "Continue")))
        input += Array(
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n00006 ; x\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n").utf8)
        expected += [
            .responseHead(HTTPResponseHead(status: 200, reason: "OK", headers: [("Transfer-Encoding", "chunked")])),
            .body(Array("hello world".utf8)), .end(keepAlive: true),
        ]

        let notModified = HTTPResponseHead(status: 304, reason: "Not Modified", headers: [("Content-Length", "50")])
        add("GET", notModified, body: nil)
        add("GET", RecordedResponses.notFound, body: RecordedResponses.notFoundBody)

        methods.append("GET")
        let closing = HTTPResponseHead(status: 200, reason: "OK", headers: [("Connection", "close")])
        input += try! closing.encoded() + Array("until the end".utf8)
        expected += [.responseHead(closing), .body(Array("until the end".utf8)), .end(keepAlive: false)]
        return (input, methods, expected)
    }()

    @Test func serializesRecordedHeadsExactly() throws {
        let wire = try RecordedResponses.upAck.encoded()
        #expect(
            String(decoding: wire, as: UTF8.self)
                == "HTTP/1.1 204 No Content\r\nCache-Control: no-store\r\nX-Up-Ack: 1\r\n"
                + "Date: Mon, 30 Nov 2026 06:40:09 GMT\r\n\r\n")
        let notFound = try RecordedResponses.notFound.encoded(body: RecordedResponses.notFoundBody)
        #expect(
            String(decoding: notFound, as: UTF8.self)
                == "HTTP/1.1 404 Not Found\r\nCache-Control: no-store\r\n"
                + "Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n"
                + "Date: Mon, 30 Nov 2026 06:40:09 GMT\r\nContent-Length: 19\r\n\r\n404 page not found\n")
    }

    @Test func parsesConversationAtEverySplitPoint() {
        let (input, methods, expected) = Self.conversation
        for pieces in everySplit(of: input) {
            let events = parseResponses(pieces, methods: methods)
            #expect(events == expected, "split into \(pieces.map(\.count))")
            if events != expected { return }
        }
    }

    @Test func bodiesAreSlicesOfReceivedBytesNotCopies() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(toMethod: "GET")
        let body = [UInt8](repeating: 7, count: 100_000)
        parser.receive(Array("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n".utf8))
        #expect(try parser.next() != nil)
        var total = 0
        for _ in 0..<3 {
            parser.receive(body)
            guard case .body(let slice)? = try parser.next() else {
                Issue.record("expected a body slice")
                return
            }
            // A whole read comes back as one slice of the very array that was passed in.
            #expect(slice.count == body.count)
            let sliceBase = slice.withUnsafeBufferPointer { $0.baseAddress }
            let bodyBase = body.withUnsafeBufferPointer { $0.baseAddress }
            #expect(sliceBase == bodyBase)
            total += slice.count
        }
        #expect(total == 300_000)
        #expect(try parser.next() == .end(keepAlive: true))
        #expect(parser.isIdle)
    }

    @Test func keepAliveFollowsVersionAndConnection() {
        func keepAlive(_ head: String) -> [ParsedEvent] {
            parseResponses([Array(head.utf8)[...]], methods: ["GET"], endOfStream: false).filter {
                if case .end = $0 { true } else { false }
            }
        }
        #expect(keepAlive("HTTP/1.1 204 No Content\r\n\r\n") == [.end(keepAlive: true)])
        #expect(keepAlive("HTTP/1.1 204 No Content\r\nConnection: keep-alive, Close\r\n\r\n") == [.end(keepAlive: false)])
        #expect(keepAlive("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n") == [.end(keepAlive: false)])
        #expect(keepAlive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") == [.end(keepAlive: true)])
    }

    @Test func switchingProtocolsHandsOverTheFollowingBytes() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(toMethod: "GET")
        let head = WebSocketHandshake.upgradeResponse(key: "dGhlIHNhbXBsZSBub25jZQ==", subprotocol: "p")
        let frames = hexBytes("820c040000010000000400000010 8900")
        parser.receive(try head.encoded() + frames)
        #expect(!parser.isIdle)
        #expect(try parser.next() == .switchedProtocols(head))
        #expect(head.headers.first("sec-websocket-protocol") == "p")
        #expect(try parser.next() == nil)
        #expect(parser.takeUnparsedBytes() == frames)
    }

    @Test func endOfStreamOutcomes() {
        let idle = parseResponses([], methods: [])
        #expect(idle == [])
        #expect(parseResponses([], methods: ["GET"]) == [.failed(.closedBeforeResponse)])
        #expect(parseResponses([Array("HTTP/1.1 200 OK\r\nConte".utf8)[...]], methods: ["GET"]) == [.failed(.truncatedMessage)])
        let head = HTTPResponseHead(status: 200, reason: "OK", headers: [("Content-Length", "5")])
        let partialBody = try! head.encoded() + Array("abc".utf8)
        #expect(
            parseResponses([partialBody[...]], methods: ["GET"])
                == [.responseHead(head), .body(Array("abc".utf8)), .failed(.truncatedMessage)])
        let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n".utf8)
        #expect(parseResponses([chunked[...]], methods: ["GET"]).last == .failed(.truncatedMessage))
    }

    @Test func responseWithoutRequestIsRefused() {
        let input = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
        #expect(parseResponses([input[...]], methods: []) == [.failed(.unsolicitedResponse)])
        #expect(parseResponses([input[...] + input[...]], methods: ["GET"]).last == .failed(.unsolicitedResponse))
    }

    @Test func errorsAreSticky() {
        var parser = HTTPResponseParser()
        parser.expectResponse(toMethod: "GET")
        parser.receive(Array("HTTP/1.1 200 OK\nX: y\r\n\r\n".utf8))
        #expect(throws: HTTPError.bareLineFeed) { try parser.next() }
        parser.receive(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8))
        #expect(throws: HTTPError.bareLineFeed) { try parser.next() }
    }

    static let malformed: [(String, HTTPError)] = [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", .conflictingContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", .contentLengthWithTransferEncoding),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n", .chunkSizeOverflow),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100000000000000000000\r\n", .chunkSizeOverflow),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", .missingChunkTerminator),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\rX", .missingChunkTerminator),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "e", count: 1100) + "\r\n", .chunkLineTooLong),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "t", count: 5000) + "\r\n\r\n", .trailersTooLarge),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n", .obsoleteLineFolding),
        ("HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\n\r\n", .obsoleteLineFolding),
        ("HTTP/1.1 200 OK\r\n\tX-A: b\r\n\r\n", .obsoleteLineFolding),
        ("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", .bareLineFeed),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n", .bareLineFeed),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n", .bareLineFeed),
        ("HTTP/1.1 200 OK\r\nX-A: b\rX-Injected: c\r\n\r\n", .bareCarriageReturn),
        ("HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", .bareCarriageReturn),
        ("HTTP/1.1 200 OK\r\nX-A: b\u{0}c\r\n\r\n", .invalidHeaderValue),
        ("HTTP/1.1 200 OK\r\nX-A: b\u{1}c\r\n\r\n", .invalidHeaderValue),
        ("HTTP/1.1 200 OK\r\nX-A: b\u{7F}\r\n\r\n", .invalidHeaderValue),
        ("HTTP/1.1 200 OK\r\nX-A : b\r\n\r\n", .invalidHeaderName),
        ("HTTP/1.1 200 OK\r\nX(A): b\r\n\r\n", .invalidHeaderName),
        ("HTTP/1.1 200 OK\r\n: b\r\n\r\n", .invalidHeaderName),
        ("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", .invalidHeaderName),
        ("HTTP/1.1 20 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 2000 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 200OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1  200 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 099 Low\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 600 High\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 2x0 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.1 200 O\u{1}K\r\n\r\n", .invalidStatusLine),
        ("http/1.1 200 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/2 200 OK\r\n\r\n", .invalidStatusLine),
        ("ICY 200 OK\r\n\r\n", .invalidStatusLine),
        ("\r\nHTTP/1.1 200 OK\r\n\r\n", .invalidStatusLine),
        ("HTTP/1.2 200 OK\r\n\r\n", .unsupportedVersion),
        ("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", .bodyNotAllowed),
        ("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", .bodyNotAllowed),
        ("HTTP/1.1 100 Continue\r\nContent-Length: 1\r\n\r\n", .bodyNotAllowed),
    ]

    @Test(arguments: malformed.indices)
    func malformedResponseIsRejected(index: Int) {
        let (text, error) = Self.malformed[index]
        let input = Array(text.utf8)
        for pieces in [[input[...]], input.indices.map { input[$0...$0] }] {
            let events = parseResponses(pieces, methods: ["GET"])
            #expect(events.last == .failed(error), "case \(index): \(events)")
        }
    }

    @Test func invalidUTF8InHeaderValueIsRejected() {
        let input = Array("HTTP/1.1 200 OK\r\nX-A: ".utf8) + [0xC3, 0x28] + Array("\r\n\r\n".utf8)
        #expect(parseResponses([input[...]], methods: ["GET"]) == [.failed(.invalidHeaderValue)])
        let valid = Array("HTTP/1.1 200 OK\r\nX-A: ".utf8) + [0xC3, 0xA9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        let events = parseResponses([valid[...]], methods: ["GET"])
        #expect(events == [.responseHead(HTTPResponseHead(status: 200, reason: "OK", headers: [("X-A", "é"), ("Content-Length", "0")])), .end(keepAlive: true)])
    }

    @Test func identicalDuplicateContentLengthsAndEmptyReasonAreAccepted() {
        let input = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nhi".utf8)
        let events = parseResponses([input[...]], methods: ["GET"])
        #expect(events.dropFirst() == [.body(Array("hi".utf8)), .end(keepAlive: true)])
        for line in ["HTTP/1.1 204 \r\n\r\n", "HTTP/1.1 204\r\n\r\n"] {
            #expect(
                parseResponses([Array(line.utf8)[...]], methods: ["GET"])
                    == [.responseHead(HTTPResponseHead(status: 204, reason: "")), .end(keepAlive: true)])
        }
    }

    @Test func headLimitsAreEnforced() {
        let limits = HTTPParserLimits()
        var hundred = "HTTP/1.1 204 No Content\r\n"
        for index in 0..<100 { hundred += "X-\(index): v\r\n" }
        let ok = parseResponses([Array((hundred + "\r\n").utf8)[...]], methods: ["GET"], limits: limits)
        #expect(ok.last == .end(keepAlive: true))
        let tooMany = parseResponses([Array((hundred + "X-100: v\r\n\r\n").utf8)[...]], methods: ["GET"], limits: limits)
        #expect(tooMany == [.failed(.tooManyHeaders)])

        let filler = String(repeating: "a", count: 16 << 10)
        let huge = Array("HTTP/1.1 204 No Content\r\nX-Big: \(filler)\r\n\r\n".utf8)
        #expect(parseResponses([huge[...]], methods: ["GET"]) == [.failed(.headTooLarge)])
        // Never terminated: refused once the limit is passed, not buffered forever.
        var parser = HTTPResponseParser()
        parser.expectResponse(toMethod: "GET")
        parser.receive(Array("HTTP/1.1 200 OK\r\nX: ".utf8))
        var events: [ParsedEvent] = []
        for _ in 0..<20 {
            parser.receive([UInt8](repeating: UInt8(ascii: "a"), count: 1024))
            parser.drain(into: &events)
        }
        #expect(events == [.failed(.headTooLarge)])

        var custom = HTTPParserLimits()
        custom.maxHeaderCount = 1
        let two = Array("HTTP/1.1 204 No Content\r\nA: 1\r\nB: 2\r\n\r\n".utf8)
        #expect(parseResponses([two[...]], methods: ["GET"], limits: custom) == [.failed(.tooManyHeaders)])
    }

    @Test func bodyCapIsPerRequest() throws {
        let head = HTTPResponseHead(status: 200, reason: "OK", headers: [("Content-Length", "5")])
        var parser = HTTPResponseParser()
        parser.expectResponse(toMethod: "GET", maxBodyBytes: 4)
        parser.expectResponse(toMethod: "GET", maxBodyBytes: 5)
        parser.receive(try head.encoded(body: Array("hello".utf8)) + head.encoded(body: Array("hello".utf8)))
        var events: [ParsedEvent] = []
        parser.drain(into: &events)
        #expect(events == [.responseHead(head), .failed(.bodyTooLarge)])

        var second = HTTPResponseParser()
        second.expectResponse(toMethod: "GET", maxBodyBytes: 5)
        second.receive(try head.encoded(body: Array("hello".utf8)))
        var ok: [ParsedEvent] = []
        second.drain(into: &ok)
        #expect(ok.last == .end(keepAlive: true))

        let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n".utf8)
        var limits = HTTPParserLimits()
        limits.maxBodyBytes = 5
        #expect(parseResponses([chunked[...]], methods: ["GET"], limits: limits).last == .failed(.bodyTooLarge))
        let untilEnd = Array("HTTP/1.1 200 OK\r\n\r\n123456".utf8)
        #expect(parseResponses([untilEnd[...]], methods: ["GET"], limits: limits).last == .failed(.bodyTooLarge))
        limits.maxBodyBytes = 6
        #expect(parseResponses([chunked[...]], methods: ["GET"], limits: limits).last == .end(keepAlive: true))
        #expect(parseResponses([untilEnd[...]], methods: ["GET"], limits: limits).last == .end(keepAlive: false))
    }
}
