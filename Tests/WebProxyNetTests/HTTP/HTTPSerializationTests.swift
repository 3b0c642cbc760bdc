import Testing
@testable import WebProxyNet

@Suite struct HTTPSerializationTests {
    @Test func requestWithBodyGetsContentLengthLast() throws {
        let head = HTTPRequestHead(
            method: "POST", target: "/api/v1/session",
            headers: [("Host", "proxy.example.com"), ("Content-Type", "application/octet-stream")])
        let wire = try head.encoded(body: hexBytes("100000000000000101"))
        #expect(
            wire
                == Array(
                    ("POST /api/v1/session HTTP/1.1\r\nHost: proxy.example.com\r\n"
                        + "Content-Type: application/octet-stream\r\nContent-Length: 9\r\n\r\n").utf8)
                + hexBytes("100000000000000101"))
    }

    @Test func nothingIsAddedWithoutABody() throws {
        let head = HTTPRequestHead(method: "GET", target: "/api/v1/down", headers: [("Host", "h"), ("X-Down-Cursor", "0")])
        #expect(try head.encoded() == Array("GET /api/v1/down HTTP/1.1\r\nHost: h\r\nX-Down-Cursor: 0\r\n\r\n".utf8))
        let empty = HTTPRequestHead(method: "POST", target: "/up")
        #expect(try empty.encoded(body: []) == Array("POST /up HTTP/1.1\r\nContent-Length: 0\r\n\r\n".utf8))
    }

    @Test func callerContentLengthMustMatch() throws {
        let head = HTTPRequestHead(method: "POST", target: "/up", headers: [("Content-Length", "3"), ("Host", "h")])
        #expect(try head.encoded(body: Array("abc".utf8)) == Array("POST /up HTTP/1.1\r\nContent-Length: 3\r\nHost: h\r\n\r\nabc".utf8))
        #expect(throws: HTTPError.contentLengthMismatch) { try head.encoded(body: Array("ab".utf8)) }
    }

    static let refusedRequests: [(HTTPRequestHead, HTTPError)] = [
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A", "a\r\nX-Evil: 1")]), .invalidHeaderValue),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A", "a\nb")]), .invalidHeaderValue),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A", "a\u{0}")]), .invalidHeaderValue),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A", " padded")]), .invalidHeaderValue),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A", "padded\t")]), .invalidHeaderValue),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X A", "v")]), .invalidHeaderName),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A:", "v")]), .invalidHeaderName),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("X-A\r\nX-B", "v")]), .invalidHeaderName),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("", "v")]), .invalidHeaderName),
        (HTTPRequestHead(method: "GET", target: "/", headers: [("Transfer-Encoding", "chunked")]), .unsupportedTransferEncoding),
        (HTTPRequestHead(method: "GE T", target: "/"), .invalidMethod),
        (HTTPRequestHead(method: "", target: "/"), .invalidMethod),
        (HTTPRequestHead(method: "GET", target: "/a b"), .invalidTarget),
        (HTTPRequestHead(method: "GET", target: "/a\r\nHost: evil"), .invalidTarget),
        (HTTPRequestHead(method: "GET", target: ""), .invalidTarget),
    ]

    @Test(arguments: refusedRequests.indices)
    func unsafeRequestHeadsAreRefused(index: Int) {
        let (head, error) = Self.refusedRequests[index]
        #expect(throws: error) { try head.encoded() }
    }

    @Test func unsafeResponseHeadsAreRefused() {
        #expect(throws: HTTPError.invalidStatusCode) { try HTTPResponseHead(status: 600, reason: "X").encoded() }
        #expect(throws: HTTPError.invalidStatusCode) { try HTTPResponseHead(status: 99, reason: "X").encoded() }
        #expect(throws: HTTPError.invalidReasonPhrase) { try HTTPResponseHead(status: 200, reason: "OK\r\nX: y").encoded() }
        #expect(throws: HTTPError.bodyNotAllowed) { try HTTPResponseHead(status: 204, reason: "No Content").encoded(body: []) }
        #expect(throws: HTTPError.bodyNotAllowed) { try HTTPResponseHead(status: 101, reason: "Switching Protocols").encoded(body: [1]) }
        #expect(throws: HTTPError.invalidHeaderValue) {
            try HTTPResponseHead(status: 200, reason: "OK", headers: [("Set-Cookie", "a\rb")]).encoded(body: [])
        }
    }

    @Test func responseWithBodyGetsContentLength() throws {
        let head = HTTPResponseHead(status: 200, reason: "OK", headers: [("Content-Type", "application/octet-stream")])
        #expect(
            try head.encoded(body: [1, 2])
                == Array("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 2\r\n\r\n".utf8) + [1, 2])
    }

    /// A client reserves a declared body once, never more than its cap, and nothing for a
    /// length it cannot read.
    @Test func bodyCapacityIsTheDeclaredLengthUpToTheCap() {
        func capacity(_ headers: [(String, String)]) -> Int {
            HTTPResponseHead(status: 200, reason: "OK", headers: HTTPHeaders(headers)).bodyCapacity(cap: 1000)
        }
        #expect(capacity([("Content-Length", "600")]) == 600)
        #expect(capacity([("Content-Length", "5000000")]) == 1000)
        #expect(capacity([]) == 0)
        #expect(capacity([("Content-Length", "-1")]) == 0)
        #expect(capacity([("Content-Length", "12abc")]) == 0)
    }
}
