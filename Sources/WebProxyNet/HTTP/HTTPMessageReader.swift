/// What both HTTP/1.1 parsers share: the received bytes, whether the stream ended, and the
/// head and body readers of the message in progress.
struct HTTPMessageReader: Sendable {
    private let invalidStartLine: HTTPError
    private var queue = ByteQueue()
    private var endOfStream = false
    private var head: HTTPHeadReader
    private var body: HTTPBodyReader?

    /// `invalidStartLine` is the error for a head that starts with an empty line.
    init(limits: HTTPParserLimits, invalidStartLine: HTTPError) {
        self.invalidStartLine = invalidStartLine
        head = HTTPHeadReader(limits: limits, invalidStartLine: invalidStartLine)
    }

    mutating func receive(_ bytes: [UInt8]) { queue.append(bytes) }

    mutating func receive(_ bytes: ArraySlice<UInt8>) { queue.append(bytes) }

    mutating func receiveEndOfStream() { endOfStream = true }

    var hasBufferedBytes: Bool { !queue.isEmpty }

    var hasReachedEndOfStream: Bool { endOfStream }

    mutating func takeUnparsedBytes() -> [UInt8] { queue.takeAll() }

    /// Begins a new head under the current `limits`.
    mutating func startHead(limits: HTTPParserLimits) {
        head = HTTPHeadReader(limits: limits, invalidStartLine: invalidStartLine)
    }

    /// The start line and fields once the whole head arrived; nil until then. A stream
    /// that ends first is `truncatedMessage`.
    mutating func readHead() throws(HTTPError) -> (startLine: [UInt8], headers: HTTPHeaders)? {
        guard let head = try head.read(from: &queue) else {
            if endOfStream { throw .truncatedMessage }
            return nil
        }
        return head
    }

    /// Begins the body the head declared.
    mutating func startBody(framing: HTTPMessageFraming, limits: HTTPParserLimits) {
        body = HTTPBodyReader(framing: framing, limits: limits)
    }

    /// The next piece of the body, or its end (which finishes it); nil until more bytes arrive.
    mutating func readBody() throws(HTTPError) -> HTTPBodyReader.Event? {
        guard var reader = body else { return nil }
        let event = try reader.next(from: &queue, atEndOfStream: endOfStream)
        body = event == .end ? nil : reader
        return event
    }
}
