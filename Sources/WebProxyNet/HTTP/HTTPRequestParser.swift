/// Incremental, strict HTTP/1.1 request parser for the server side (the test relay).
///
/// Bodies must be framed by Content-Length; chunked requests are refused. The target is
/// kept exactly as sent and header fields keep their order and duplicates. Any error is
/// final: answer if you like, then close the connection.
public struct HTTPRequestParser: Sendable {
    private enum State: Sendable {
        case idle
        case readingHead
        case readingBody(keepAlive: Bool)
        case ending(keepAlive: Bool)
        case failed(HTTPError)
    }

    /// Limits for every request; change `maxBodyBytes` between requests to cap one body.
    public var limits: HTTPParserLimits
    private var queue = ByteQueue()
    private var state = State.idle
    private var endOfStream = false
    private var head: HTTPHeadReader
    private var body: HTTPBodyReader?

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
        self.head = HTTPHeadReader(limits: limits, invalidStartLine: .invalidRequestLine)
    }

    /// Appends received bytes.
    public mutating func receive(_ bytes: [UInt8]) { queue.append(bytes) }

    /// Appends received bytes.
    public mutating func receive(_ bytes: ArraySlice<UInt8>) { queue.append(bytes) }

    /// Records that the peer closed the stream.
    public mutating func receiveEndOfStream() { endOfStream = true }

    /// Whether no request is partly received, so the connection may close now.
    public var isIdle: Bool {
        if case .idle = state { return queue.isEmpty }
        return false
    }

    /// After a request that upgraded the connection: the bytes that followed it.
    public mutating func takeUnparsedBytes() -> [UInt8] { queue.takeAll() }

    /// The next event, or nil until more bytes (or the end of the stream) arrive.
    public mutating func next() throws(HTTPError) -> HTTPRequestEvent? {
        do {
            return try step()
        } catch {
            state = .failed(error)
            throw error
        }
    }

    private mutating func step() throws(HTTPError) -> HTTPRequestEvent? {
        switch state {
        case .failed(let error):
            throw error
        case .ending(let keepAlive):
            state = .idle
            return .end(keepAlive: keepAlive)
        case .readingBody(let keepAlive):
            return try readBody(keepAlive: keepAlive)
        case .idle:
            guard !queue.isEmpty else { return nil }
            head = HTTPHeadReader(limits: limits, invalidStartLine: .invalidRequestLine)
            state = .readingHead
            return try readHead()
        case .readingHead:
            return try readHead()
        }
    }

    private mutating func readHead() throws(HTTPError) -> HTTPRequestEvent? {
        guard let (startLine, headers) = try head.read(from: &queue) else {
            if endOfStream { throw .truncatedMessage }
            return nil
        }
        var request = try Self.parseRequestLine(startLine)
        request.headers = headers
        let keepAlive = request.keepAlive
        switch try HTTPMessageFraming.declared(by: headers, version: request.version) {
        case .chunked:
            throw .chunkedRequestUnsupported
        case .unspecified, .contentLength(0):
            state = .ending(keepAlive: keepAlive)
        case .contentLength(let length):
            body = HTTPBodyReader(framing: .contentLength(length), limits: limits)
            state = .readingBody(keepAlive: keepAlive)
        }
        return .head(request)
    }

    private mutating func readBody(keepAlive: Bool) throws(HTTPError) -> HTTPRequestEvent? {
        guard var reader = body else { return nil }
        let event = try reader.next(from: &queue, atEndOfStream: endOfStream)
        body = reader
        switch event {
        case nil:
            return nil
        case .data(let slice):
            return .body(slice)
        case .end:
            body = nil
            state = .idle
            return .end(keepAlive: keepAlive)
        }
    }

    /// `method SP request-target SP HTTP/1.x`, single spaces, nothing else.
    static func parseRequestLine(_ line: [UInt8]) throws(HTTPError) -> HTTPRequestHead {
        let parts = line.split(separator: HTTPSyntax.space, omittingEmptySubsequences: false)
        guard parts.count == 3, HTTPSyntax.isToken(parts[0]) else { throw .invalidRequestLine }
        guard HTTPSyntax.isTarget(parts[1]) else { throw .invalidTarget }
        guard let version = try HTTPVersion.parse(parts[2]) else { throw .invalidRequestLine }
        return HTTPRequestHead(
            method: String(decoding: parts[0], as: UTF8.self),
            target: String(decoding: parts[1], as: UTF8.self), version: version)
    }
}
