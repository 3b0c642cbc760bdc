@testable import WebProxyNet

/// Bytes from a hex string; spaces are ignored.
func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
    precondition(digits.count % 2 == 0, "odd hex string")
    return stride(from: 0, to: digits.count, by: 2).map { index in
        UInt8(String(decoding: digits[index..<(index + 2)], as: UTF8.self), radix: 16)!
    }
}


/// A parser event with body pieces merged, so results of different input splits compare equal.
enum ParsedEvent: Hashable {
    case informational(HTTPResponseHead)
    case responseHead(HTTPResponseHead)
    case requestHead(HTTPRequestHead)
    case body([UInt8])
    case end(keepAlive: Bool)
    case switchedProtocols(HTTPResponseHead)
    case failed(HTTPError)
}

extension Array where Element == ParsedEvent {
    mutating func appendMerging(_ event: ParsedEvent) {
        if case .body(let more) = event, case .body(let existing)? = last {
            self[count - 1] = .body(existing + more)
        } else if case .body(let bytes) = event, bytes.isEmpty {
            return
        } else if case .failed = event, case .failed? = last {
            return  // errors are sticky: a later drain reports the same one again
        } else {
            append(event)
        }
    }
}

extension HTTPResponseParser {
    /// Pulls every available event; an error ends the list as `.failed`.
    mutating func drain(into events: inout [ParsedEvent]) {
        do {
            while let event = try next() {
                switch event {
                case .informational(let head): events.appendMerging(.informational(head))
                case .head(let head): events.appendMerging(.responseHead(head))
                case .body(let slice): events.appendMerging(.body(Array(slice)))
                case .end(let keepAlive): events.appendMerging(.end(keepAlive: keepAlive))
                case .switchedProtocols(let head): events.appendMerging(.switchedProtocols(head))
                }
            }
        } catch {
            events.appendMerging(.failed(error))
        }
    }
}

extension HTTPRequestParser {
    /// Pulls every available event; an error ends the list as `.failed`.
    mutating func drain(into events: inout [ParsedEvent]) {
        do {
            while let event = try next() {
                switch event {
                case .head(let head): events.appendMerging(.requestHead(head))
                case .body(let slice): events.appendMerging(.body(Array(slice)))
                case .end(let keepAlive): events.appendMerging(.end(keepAlive: keepAlive))
                }
            }
        } catch {
            events.appendMerging(.failed(error))
        }
    }
}

/// What `parse(_:with:endOfStream:)` needs of a parser; both HTTP parsers have it.
protocol DrainableHTTPParser {
    mutating func receive(_ bytes: ArraySlice<UInt8>)
    mutating func receiveEndOfStream()
    mutating func drain(into events: inout [ParsedEvent])
}

extension HTTPResponseParser: DrainableHTTPParser {}
extension HTTPRequestParser: DrainableHTTPParser {}

/// Feeds `input` to a fresh response parser in the given pieces, then ends the stream.
func parseResponses(
    _ pieces: [ArraySlice<UInt8>], methods: [String], limits: HTTPParserLimits = HTTPParserLimits(),
    endOfStream: Bool = true
) -> [ParsedEvent] {
    var parser = HTTPResponseParser(limits: limits)
    for method in methods { parser.expectResponse(toMethod: method) }
    return parse(pieces, with: parser, endOfStream: endOfStream)
}

/// Feeds `input` to a fresh request parser in the given pieces, then ends the stream.
func parseRequests(
    _ pieces: [ArraySlice<UInt8>], limits: HTTPParserLimits = HTTPParserLimits(), endOfStream: Bool = true
) -> [ParsedEvent] {
    parse(pieces, with: HTTPRequestParser(limits: limits), endOfStream: endOfStream)
}

/// Feeds `pieces` to `parser`, draining its events after each one and after the end of the
/// stream (when `endOfStream`).
private func parse(_ pieces: [ArraySlice<UInt8>], with parser: some DrainableHTTPParser, endOfStream: Bool) -> [ParsedEvent] {
    var parser = parser
    var events: [ParsedEvent] = []
    for piece in pieces {
        parser.receive(piece)
        parser.drain(into: &events)
    }
    if endOfStream {
        parser.receiveEndOfStream()
        parser.drain(into: &events)
    }
    return events
}

/// The input whole, split at every point, and byte by byte.
func everySplit(of input: [UInt8]) -> [[ArraySlice<UInt8>]] {
    var splits: [[ArraySlice<UInt8>]] = [[input[...]]]
    for point in 1..<max(1, input.count) { splits.append([input[..<point], input[point...]]) }
    splits.append(input.indices.map { input[$0...$0] })
    return splits
}
