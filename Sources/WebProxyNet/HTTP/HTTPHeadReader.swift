/// Reads a start line and header fields up to the empty line, within the head limits.
struct HTTPHeadReader: Sendable {
    private let limits: HTTPParserLimits
    private let invalidStartLine: HTTPError
    private var lines = HTTPLineReader()
    private var consumed = 0
    // A copy, not a slice: a slice would pin the queue's storage and make appends copy it.
    private var startLine: [UInt8]?
    private var headers = HTTPHeaders()

    init(limits: HTTPParserLimits, invalidStartLine: HTTPError) {
        self.limits = limits
        self.invalidStartLine = invalidStartLine
    }

    /// The start line and fields once the whole head has arrived; nil until then.
    mutating func read(from queue: inout ByteQueue) throws(HTTPError)
        -> (startLine: [UInt8], headers: HTTPHeaders)?
    {
        while let line = try lines.takeLine(
            from: &queue, limit: limits.maxHeadBytes - consumed, tooLong: .headTooLarge)
        {
            consumed += line.count + 2
            guard let startLine else {
                if line.isEmpty { throw invalidStartLine }
                startLine = Array(line)
                continue
            }
            if line.isEmpty { return (startLine, headers) }
            guard headers.count < limits.maxHeaderCount else { throw .tooManyHeaders }
            let field = try Self.parseField(line)
            headers.append(name: field.name, value: field.value)
        }
        return nil
    }

    /// `name ":" OWS value OWS`, strictly: no folding, no space before the colon, no
    /// control characters, UTF-8 only.
    static func parseField(_ line: ArraySlice<UInt8>) throws(HTTPError) -> HTTPField {
        guard let first = line.first, !HTTPSyntax.isWhitespace(first) else {
            throw .obsoleteLineFolding
        }
        guard let colon = line.firstIndex(of: HTTPSyntax.colon) else { throw .invalidHeaderName }
        let nameBytes = line[..<colon]
        guard HTTPSyntax.isToken(nameBytes) else { throw .invalidHeaderName }
        var valueBytes = line[(colon + 1)...]
        while let byte = valueBytes.first, HTTPSyntax.isWhitespace(byte) { valueBytes.removeFirst() }
        while let byte = valueBytes.last, HTTPSyntax.isWhitespace(byte) { valueBytes.removeLast() }
        guard valueBytes.allSatisfy(HTTPSyntax.isFieldValueByte),
            let value = String(validating: valueBytes, as: UTF8.self)
        else { throw .invalidHeaderValue }
        return HTTPField(name: String(decoding: nameBytes, as: UTF8.self), value: value)
    }
}
