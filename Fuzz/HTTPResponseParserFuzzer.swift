// Fuzz target: HTTPResponseParser (client side) on arbitrary response bytes, split at random
// points, for a pipeline of GET/HEAD requests with per-request body caps.
//
// Input: [requests] [limits] [split seed] [response bytes...]
//   requests bits 0-2: n-1 requests expected (1...8); bits 3-7: request i (< 5) is a HEAD
//   limits bits 0-1: body cap 0 / 16 / 1000 / 4 MiB; bits 2-3: head limit 64 / 256 / 4096 /
//     16 KiB; bits 4-5: header count limit 1 / 4 / 100 / 100; bit 6: odd requests cap
//     their body at 7 bytes and chunk lines / trailers get small limits; bit 7: the stream
//     ends after the last byte
// Invariants: events come in a valid order (1xx* head body* end, or a final 101); never more
// final heads than requests; no response reports more body bytes than its cap, and a
// Content-Length body ends at exactly that length; HEAD/204/304 have no body; heads stay
// within the header count limit and re-serialize to an equal head; after 101 the unparsed
// bytes are the tail of the input; errors are final.
import WebProxyNet

@_cdecl("LLVMFuzzerTestOneInput")
public func httpResponseParserFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let requestByte = input.byte()
    let limitByte = input.byte()
    let seed = input.byte()
    let bytes = input.rest()

    var limits = HTTPParserLimits(
        maxHeadBytes: [64, 256, 4096, 16 << 10][Int(limitByte >> 2 & 3)],
        maxHeaderCount: [1, 4, 100, 100][Int(limitByte >> 4 & 3)],
        maxBodyBytes: [0, 16, 1000, 4 << 20][Int(limitByte & 3)])
    let smallCaps = limitByte & 0x40 != 0
    if smallCaps {
        limits.maxChunkLineBytes = 8
        limits.maxTrailerBytes = 16
    }
    var parser = HTTPResponseParser(limits: limits)
    var requests: [(isHead: Bool, cap: Int)] = []
    for index in 0...Int(requestByte & 7) {
        let isHead = index < 5 && requestByte >> (3 + index) & 1 == 1
        let cap = smallCaps && index % 2 == 1 ? 7 : limits.maxBodyBytes
        requests.append((isHead, cap))
        parser.expectResponse(
            toMethod: isHead ? "HEAD" : "GET", maxBodyBytes: smallCaps && index % 2 == 1 ? 7 : nil)
    }

    var checker = ResponseEventChecker(requests: requests, limits: limits)
    var fed: [UInt8] = []
    for chunk in bytes.chunked(seed: seed) {
        parser.receive(chunk)
        fed += chunk
        guard checker.drain(&parser) else { return finish(&parser, checker, fed: fed) }
    }
    if limitByte & 0x80 != 0 {
        parser.receiveEndOfStream()
        _ = checker.drain(&parser)
    }
    return finish(&parser, checker, fed: fed)
}

private func finish(
    _ parser: inout HTTPResponseParser, _ checker: ResponseEventChecker, fed: [UInt8]
) -> CInt {
    if checker.switched {
        invariant((try? parser.next()) == .some(nil), "events after 101")
        let unparsed = parser.takeUnparsedBytes()
        invariant(
            fed.count >= unparsed.count && fed.suffix(unparsed.count).elementsEqual(unparsed),
            "bytes after 101 are not the input's tail")
    }
    if let failure = checker.failure {
        do throws(HTTPError) {
            _ = try parser.next()
            invariant(false, "parser recovered after \(failure)")
        } catch {
            invariant(error == failure, "second error \(error) differs from \(failure)")
        }
    }
    return 0
}

/// Follows the event stream and checks it against the requests' rules.
private struct ResponseEventChecker {
    enum Phase {
        case awaitingHead
        case body(noBody: Bool)
        case switched
    }

    let requests: [(isHead: Bool, cap: Int)]
    let limits: HTTPParserLimits
    var phase = Phase.awaitingHead
    var answered = 0
    var bodyBytes = 0
    var declaredLength: Int?
    var failure: HTTPError?
    var switched: Bool { if case .switched = phase { true } else { false } }

    init(requests: [(isHead: Bool, cap: Int)], limits: HTTPParserLimits) {
        self.requests = requests
        self.limits = limits
    }

    /// Pulls events until the parser needs input; false once it failed or switched.
    mutating func drain(_ parser: inout HTTPResponseParser) -> Bool {
        while true {
            let event: HTTPResponseEvent?
            do throws(HTTPError) {
                event = try parser.next()
            } catch {
                failure = error
                return false
            }
            guard let event else { return !switched }
            check(event)
        }
    }

    mutating func check(_ event: HTTPResponseEvent) {
        switch (phase, event) {
        case (.awaitingHead, .informational(let head)):
            invariant(
                (100..<200).contains(head.status) && head.status != 101,
                "informational \(head.status)")
            checkHead(head)
        case (.awaitingHead, .switchedProtocols(let head)):
            invariant(head.status == 101, "switched on \(head.status)")
            invariant(answered < requests.count, "101 without a request")
            checkHead(head)
            answered += 1
            phase = .switched
        case (.awaitingHead, .head(let head)):
            invariant(answered < requests.count, "more responses than requests")
            invariant((200...599).contains(head.status), "final head with status \(head.status)")
            checkHead(head)
            let noBody = requests[answered].isHead || head.status == 204 || head.status == 304
            answered += 1
            bodyBytes = 0
            declaredLength = head.headers.first("Content-Length").flatMap { Int($0) }
            phase = .body(noBody: noBody)
        case (.body(let noBody), .body(let slice)):
            invariant(!noBody, "body for a HEAD/204/304 response")
            invariant(!slice.isEmpty, "empty body event")
            bodyBytes += slice.count
            invariant(
                bodyBytes <= requests[answered - 1].cap, "body of \(bodyBytes) bytes over its cap")
        case (.body(let noBody), .end):
            if !noBody, let declaredLength {
                invariant(
                    bodyBytes == declaredLength,
                    "body of \(bodyBytes) bytes, declared \(declaredLength)")
            }
            phase = .awaitingHead
        default:
            invariant(false, "event \(event) out of order")
        }
    }

    /// Header count within the limit; the head serializes and parses back equal (less
    /// Transfer-Encoding, which the serializer refuses: it never writes chunked bodies).
    func checkHead(_ received: HTTPResponseHead) {
        invariant(
            received.headers.count <= limits.maxHeaderCount, "\(received.headers.count) headers")
        var head = received
        head.headers = HTTPHeaders(
            received.headers.filter { $0.name.lowercased() != "transfer-encoding" })
        var wire: [UInt8] = []
        do throws(HTTPError) {
            try head.encode(into: &wire, bodyLength: nil)
        } catch {
            invariant(false, "a parsed head does not serialize: \(error)")
        }
        var reparser = HTTPResponseParser()
        reparser.expectResponse(toMethod: "HEAD")
        reparser.receive(wire)
        var expected = head
        expected.version = .http1_1
        switch try? reparser.next() {
        case .head(let again)?, .informational(let again)?, .switchedProtocols(let again)?:
            invariant(again == expected, "head changes through serialization")
        default:
            invariant(false, "a serialized head does not parse")
        }
    }
}
