/// Incremental, strict HTTP/1.1 request parser for the server side (the HTTP server, the
/// daemon's metrics endpoint).
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
    private var state = State.idle
    private var message: HTTPMessageReader

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
        message = HTTPMessageReader(limits: limits, invalidStartLine: .invalidRequestLine)
    }

    /// Appends received bytes.
    public mutating func receive(_ bytes: [UInt8]) { message.receive(bytes) }

    /// Appends received bytes.
    public mutating func receive(_ bytes: ArraySlice<UInt8>) { message.receive(bytes) }

    /// Records that the peer closed the stream.
    public mutating func receiveEndOfStream() { message.receiveEndOfStream() }

    /// Whether no request is partly received, so the connection may close now.
    public var isIdle: Bool {
        if case .idle = state { return !message.hasBufferedBytes }
        return false
    }

    /// After a request that upgraded the connection: the bytes that followed it.
    public mutating func takeUnparsedBytes() -> [UInt8] { message.takeUnparsedBytes() }

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
            guard message.hasBufferedBytes else { return nil }
            message.startHead(limits: limits)
            state = .readingHead
            return try readHead()
        case .readingHead:
            return try readHead()
        }
    }

    private mutating func readHead() throws(HTTPError) -> HTTPRequestEvent? {
        guard let (startLine, headers) = try message.readHead() else { return nil }
        var request = try Self.parseRequestLine(startLine)
        request.headers = headers
        let keepAlive = request.keepAlive
        switch try HTTPMessageFraming.declared(by: headers, version: request.version) {
        case .chunked:
            throw .chunkedRequestUnsupported
        case .unspecified, .contentLength(0):
            state = .ending(keepAlive: keepAlive)
        case .contentLength(let length):
            message.startBody(framing: .contentLength(length), limits: limits)
            state = .readingBody(keepAlive: keepAlive)
        }
        return .head(request)
    }

    private mutating func readBody(keepAlive: Bool) throws(HTTPError) -> HTTPRequestEvent? {
        switch try message.readBody() {
        case nil:
            return nil
        case .data(let slice):
            return .body(slice)
        case .end:
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
