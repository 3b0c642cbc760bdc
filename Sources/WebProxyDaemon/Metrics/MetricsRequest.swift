import WebProxyNet

/// The request head a metrics client sent, judged: the responder answers `GET /metrics`
/// and nothing else. The head is read by `HTTPRequestParser`, the parser the HTTP server
/// uses; this type only maps what it found to an answer. Pure, so every input is testable
/// without sockets.
enum MetricsRequest: Equatable, Sendable {
    /// `GET /metrics` (a query string is ignored).
    case metrics
    /// Another path: 404.
    case notFound
    /// Another method: 405.
    case methodNotAllowed
    /// Not an HTTP/1.x request head: 400.
    case badRequest
    /// The head did not end within `maxHeadBytes`: 431.
    case headTooLarge

    /// The most bytes of request head read before answering 431.
    static let maxHeadBytes = 8 << 10

    /// Reads one client's request head as its bytes arrive.
    struct Reader: Sendable {
        private var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeadBytes: MetricsRequest.maxHeadBytes))

        /// The judgement once the head is complete or wrong; nil while more bytes may help.
        mutating func receive(_ bytes: some Sequence<UInt8>) -> MetricsRequest? {
            parser.receive(Array(bytes))
            do {
                guard case .head(let head)? = try parser.next() else { return nil }
                guard head.method == "GET" else { return .methodNotAllowed }
                let path = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
                return path == "/metrics" ? .metrics : .notFound
            } catch {
                return error == .headTooLarge || error == .tooManyHeaders ? .headTooLarge : .badRequest
            }
        }
    }

    /// The judgement of `received`, the whole of what a client sent so far.
    static func judge(_ received: [UInt8]) -> MetricsRequest? {
        var reader = Reader()
        return reader.receive(received)
    }

    /// The whole response (status line, headers, body); the connection closes after it.
    static func response(status: Int, reason: String, contentType: String, body: String) -> [UInt8] {
        let bodyBytes = Array(body.utf8)
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(bodyBytes.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + bodyBytes
    }
}
