// Fuzz target: HTTPRequestParser (server side, the test relay) on arbitrary request bytes,
// split at random points.
//
// Input: [limits] [split seed] [request bytes...]
//   limits bits 0-1: body cap 0 / 16 / 1000 / 4 MiB; bits 2-3: head limit 64 / 256 / 4096 /
//     16 KiB; bits 4-5: header count limit 1 / 4 / 100 / 100; bit 7: the stream ends
// Invariants: events come as head body* end; no body exceeds the cap and a body ends at
// exactly its Content-Length; no accepted head uses Transfer-Encoding; heads stay within the
// header count limit and re-serialize to an equal head; errors are final.
import WebProxyNet

@_cdecl("LLVMFuzzerTestOneInput")
public func httpRequestParserFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let limitByte = input.byte()
    let seed = input.byte()
    let bytes = input.rest()
    let limits = HTTPParserLimits(
        maxHeadBytes: [64, 256, 4096, 16 << 10][Int(limitByte >> 2 & 3)],
        maxHeaderCount: [1, 4, 100, 100][Int(limitByte >> 4 & 3)],
        maxBodyBytes: [0, 16, 1000, 4 << 20][Int(limitByte & 3)])
    var parser = HTTPRequestParser(limits: limits)
    var checker = RequestEventChecker(limits: limits)
    for chunk in bytes.chunked(seed: seed) {
        parser.receive(chunk)
        guard checker.drain(&parser) else { break }
    }
    if checker.failure == nil, limitByte & 0x80 != 0 {
        parser.receiveEndOfStream()
        _ = checker.drain(&parser)
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

private struct RequestEventChecker {
    let limits: HTTPParserLimits
    var inBody = false
    var bodyBytes = 0
    var declaredLength = 0
    var failure: HTTPError?

    init(limits: HTTPParserLimits) { self.limits = limits }

    /// Pulls events until the parser needs input; false once it failed.
    mutating func drain(_ parser: inout HTTPRequestParser) -> Bool {
        while true {
            let event: HTTPRequestEvent?
            do throws(HTTPError) {
                event = try parser.next()
            } catch {
                failure = error
                return false
            }
            guard let event else { return true }
            check(event)
        }
    }

    mutating func check(_ event: HTTPRequestEvent) {
        switch event {
        case .head(let head):
            invariant(!inBody, "head inside a body")
            invariant(head.headers.count <= limits.maxHeaderCount, "\(head.headers.count) headers")
            invariant(
                !head.headers.contains("Transfer-Encoding"), "accepted a Transfer-Encoding request")
            checkRoundTrip(head)
            inBody = true
            bodyBytes = 0
            declaredLength = head.headers.first("Content-Length").flatMap { Int($0) } ?? 0
        case .body(let slice):
            invariant(inBody && !slice.isEmpty, "stray or empty body event")
            bodyBytes += slice.count
            invariant(bodyBytes <= limits.maxBodyBytes, "body of \(bodyBytes) bytes over the cap")
        case .end:
            invariant(inBody, "end without a head")
            invariant(
                bodyBytes == declaredLength,
                "body of \(bodyBytes) bytes, declared \(declaredLength)")
            inBody = false
        }
    }

    func checkRoundTrip(_ head: HTTPRequestHead) {
        var wire: [UInt8] = []
        do throws(HTTPError) {
            try head.encode(into: &wire, bodyLength: nil)
        } catch {
            invariant(false, "a parsed head does not serialize: \(error)")
        }
        var reparser = HTTPRequestParser()
        reparser.receive(wire)
        var expected = head
        expected.version = .http1_1
        guard case .head(let again)? = try? reparser.next() else {
            invariant(false, "a serialized head does not parse")
            return
        }
        invariant(again == expected, "head changes through serialization")
    }
}
