/// Reads one message body in the framing its head declared, handing out slices of the
/// received bytes, never copies.
struct HTTPBodyReader: Sendable {
    enum Event: Hashable, Sendable {
        case data(ArraySlice<UInt8>)
        case end
    }

    private enum State: Hashable, Sendable {
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(consumed: Int)
        case untilEndOfStream
        case done
    }

    private let limits: HTTPParserLimits
    private var state: State
    private var received = 0
    private var lines = HTTPLineReader()
    private var deferredError: HTTPError?

    /// `framing` is `.unspecified` only for bodies that run to the end of the stream.
    init(framing: HTTPMessageFraming, limits: HTTPParserLimits) {
        self.limits = limits
        switch framing {
        case .contentLength(let length):
            state = .fixed(remaining: length)
            // Reported on the first read so the head is still delivered first.
            if length > limits.maxBodyBytes { deferredError = .bodyTooLarge }
        case .chunked: state = .chunkSize
        case .unspecified: state = .untilEndOfStream
        }
    }

    /// The next piece of body or its end; nil when more input is needed.
    mutating func next(from queue: inout ByteQueue, atEndOfStream: Bool) throws(HTTPError) -> Event? {
        if let deferredError { throw deferredError }
        while true {
            switch state {
            case .done:
                return nil
            case .fixed(let remaining):
                if remaining == 0 {
                    state = .done
                    return .end
                }
                guard !queue.isEmpty else { return try needMore(atEndOfStream) }
                let slice = queue.take(min(remaining, queue.count))
                state = .fixed(remaining: remaining - slice.count)
                return .data(slice)
            case .untilEndOfStream:
                guard !queue.isEmpty else {
                    guard atEndOfStream else { return nil }
                    state = .done
                    return .end
                }
                guard queue.count <= limits.maxBodyBytes - received else { throw .bodyTooLarge }
                received += queue.count
                return .data(queue.take(queue.count))
            case .chunkSize:
                guard let line = try lines.takeLine(
                    from: &queue, limit: limits.maxChunkLineBytes, tooLong: .chunkLineTooLong)
                else { return try needMore(atEndOfStream) }
                let size = try Self.chunkSize(line)
                if size == 0 {
                    state = .trailers(consumed: 0)
                } else {
                    guard size <= limits.maxBodyBytes - received else { throw .bodyTooLarge }
                    received += size
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                guard !queue.isEmpty else { return try needMore(atEndOfStream) }
                let slice = queue.take(min(remaining, queue.count))
                let left = remaining - slice.count
                state = left == 0 ? .chunkDataEnd : .chunkData(remaining: left)
                return .data(slice)
            case .chunkDataEnd:
                if queue.count >= 1 && queue[offset: 0] != HTTPSyntax.cr { throw .missingChunkTerminator }
                guard queue.count >= 2 else { return try needMore(atEndOfStream) }
                guard queue[offset: 1] == HTTPSyntax.lf else { throw .missingChunkTerminator }
                queue.skip(2)
                state = .chunkSize
            case .trailers(let consumed):
                guard let line = try lines.takeLine(
                    from: &queue, limit: limits.maxTrailerBytes - consumed, tooLong: .trailersTooLarge)
                else { return try needMore(atEndOfStream) }
                if line.isEmpty {
                    state = .done
                    return .end
                }
                // Trailers are checked like header fields, then dropped: nothing here uses them.
                _ = try HTTPHeadReader.parseField(line)
                state = .trailers(consumed: consumed + line.count + 2)
            }
        }
    }

    private func needMore(_ atEndOfStream: Bool) throws(HTTPError) -> Event? {
        if atEndOfStream { throw .truncatedMessage }
        return nil
    }

    /// `1*HEXDIG [ BWS ";" extensions ]`; the extensions are ignored but must be field bytes.
    static func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTPError) -> Int {
        var size = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = HTTPSyntax.hexDigitValue(line[index]) {
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            guard !overflow else { throw .chunkSizeOverflow }
            size = shifted | digit
            index += 1
        }
        guard index > line.startIndex else { throw .invalidChunkSize }
        let rest = line[index...]
        if rest.isEmpty { return size }
        let extensions = rest.drop(while: HTTPSyntax.isWhitespace)
        guard extensions.first == UInt8(ascii: ";"),
            extensions.allSatisfy(HTTPSyntax.isFieldValueByte)
        else { throw .invalidChunkSize }
        return size
    }
}
