/// The request head a metrics client sent, judged: the responder answers `GET /metrics`
/// and nothing else. Pure, so every input is testable without sockets.
enum MetricsRequest: Equatable, Sendable {
    /// `GET /metrics` (a query string is ignored).
    case metrics
    /// Another path: 404.
    case notFound
    /// Another method: 405.
    case methodNotAllowed
    /// Not an HTTP/1.x request line: 400.
    case badRequest
    /// The head did not end within `maxHeadBytes`: 431.
    case headTooLarge

    /// The most bytes of request head read before answering 431.
    static let maxHeadBytes = 8 << 10

    /// The judgement of `received` so far; nil while the head is incomplete and within bounds.
    static func judge(_ received: [UInt8]) -> MetricsRequest? {
        guard let end = headEnd(received) else {
            return received.count >= maxHeadBytes ? .headTooLarge : nil
        }
        guard end <= maxHeadBytes else { return .headTooLarge }
        let lineEnd = received.firstIndex(of: UInt8(ascii: "\r")) ?? end
        let parts = received[..<lineEnd].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)), parts[2].count == 8 else {
            return .badRequest
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = parts[1].split(separator: UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard method == "GET" else { return .methodNotAllowed }
        return target.elementsEqual("/metrics".utf8) ? .metrics : .notFound
    }

    /// The index just past the blank line that ends the head (`\r\n\r\n`).
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    /// The whole response (status line, headers, body); the connection closes after it.
    static func response(status: Int, reason: String, contentType: String, body: String) -> [UInt8] {
        let bodyBytes = Array(body.utf8)
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(bodyBytes.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + bodyBytes
    }
}
