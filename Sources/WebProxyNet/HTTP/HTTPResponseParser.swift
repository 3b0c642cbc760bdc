/// Incremental, strict HTTP/1.1 response parser for the client side.
///
/// Tell it about each request sent (`expectResponse`), feed it bytes as they arrive and pull
/// events with `next()` until it returns nil. Any error is final: the connection must go.
public struct HTTPResponseParser: Sendable {
    private struct PendingRequest: Sendable {
        let isHead: Bool
        let maxBodyBytes: Int
    }

    private enum State: Sendable {
        case idle
        case readingHead
        case readingBody(keepAlive: Bool)
        case ending(keepAlive: Bool)
        case switched
        case failed(HTTPError)
    }

    /// Limits for every response; `maxBodyBytes` is the default per-request body cap.
    public var limits: HTTPParserLimits
    private var pending: [PendingRequest] = []
    private var state = State.idle
    private var message: HTTPMessageReader

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
        message = HTTPMessageReader(limits: limits, invalidStartLine: .invalidStatusLine)
    }

    /// Records that a request went out, in order. HEAD responses carry no body; the body of
    /// this response is capped at `maxBodyBytes` (default: `limits.maxBodyBytes`).
    public mutating func expectResponse(toMethod method: String, maxBodyBytes: Int? = nil) {
        pending.append(
            PendingRequest(isHead: method == "HEAD", maxBodyBytes: maxBodyBytes ?? limits.maxBodyBytes))
    }

    /// Appends received bytes.
    public mutating func receive(_ bytes: [UInt8]) { message.receive(bytes) }

    /// Appends received bytes.
    public mutating func receive(_ bytes: ArraySlice<UInt8>) { message.receive(bytes) }

    /// Records that the peer closed the stream (TCP FIN or TLS close_notify).
    public mutating func receiveEndOfStream() { message.receiveEndOfStream() }

    /// Whether no response is outstanding or partly received, so closing the connection
    /// now loses nothing.
    public var isIdle: Bool {
        if case .idle = state { return pending.isEmpty && !message.hasBufferedBytes }
        return false
    }

    /// After `.switchedProtocols`: the bytes that followed the head, for the next protocol.
    public mutating func takeUnparsedBytes() -> [UInt8] { message.takeUnparsedBytes() }

    /// The next event, or nil until more bytes (or the end of the stream) arrive.
    public mutating func next() throws(HTTPError) -> HTTPResponseEvent? {
        do {
            return try step()
        } catch {
            state = .failed(error)
            throw error
        }
    }

    private mutating func step() throws(HTTPError) -> HTTPResponseEvent? {
        switch state {
        case .failed(let error):
            throw error
        case .switched:
            return nil
        case .ending(let keepAlive):
            state = .idle
            return .end(keepAlive: keepAlive)
        case .readingBody(let keepAlive):
            return try readBody(keepAlive: keepAlive)
        case .idle:
            guard message.hasBufferedBytes else {
                if message.hasReachedEndOfStream && !pending.isEmpty { throw .closedBeforeResponse }
                return nil
            }
            guard !pending.isEmpty else { throw .unsolicitedResponse }
            message.startHead(limits: limits)
            state = .readingHead
            return try readHead()
        case .readingHead:
            return try readHead()
        }
    }

    private mutating func readHead() throws(HTTPError) -> HTTPResponseEvent? {
        guard let (startLine, headers) = try message.readHead() else { return nil }
        var response = try Self.parseStatusLine(startLine)
        response.headers = headers
        let framing = try HTTPMessageFraming.declared(by: headers, version: response.version)
        let request = pending[0]
        if response.status == 101 {
            pending.removeFirst()
            state = .switched
            return .switchedProtocols(response)
        }
        let keepAlive = response.version == .http1_1 && !headers.contains("Connection", token: "close")
        if (100..<200).contains(response.status) || response.status == 204 {
            switch framing {
            case .unspecified, .contentLength(0): break
            default: throw .bodyNotAllowed
            }
        }
        if (100..<200).contains(response.status) {
            state = .idle
            return .informational(response)
        }
        pending.removeFirst()
        if request.isHead || response.status == 204 || response.status == 304 {
            state = .ending(keepAlive: keepAlive)
            return .head(response)
        }
        var bodyLimits = limits
        bodyLimits.maxBodyBytes = request.maxBodyBytes
        message.startBody(framing: framing, limits: bodyLimits)
        state = .readingBody(keepAlive: keepAlive && framing != .unspecified)
        return .head(response)
    }

    private mutating func readBody(keepAlive: Bool) throws(HTTPError) -> HTTPResponseEvent? {
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

    /// `HTTP/1.x SP 3DIGIT SP reason` (the space before an empty reason may be missing).
    static func parseStatusLine(_ line: [UInt8]) throws(HTTPError) -> HTTPResponseHead {
        let bytes = line[...]
        guard bytes.count >= 12, bytes[8] == HTTPSyntax.space,
            let version = try HTTPVersion.parse(bytes[0..<8]),
            let status = HTTPSyntax.decimal(bytes[9..<12]), (100...599).contains(status)
        else { throw .invalidStatusLine }
        var reasonBytes = bytes[12...]
        if let separator = reasonBytes.first {
            guard separator == HTTPSyntax.space else { throw .invalidStatusLine }
            reasonBytes.removeFirst()
        }
        guard reasonBytes.allSatisfy(HTTPSyntax.isFieldValueByte),
            let reason = String(validating: reasonBytes, as: UTF8.self)
        else { throw .invalidStatusLine }
        return HTTPResponseHead(status: status, reason: reason, version: version)
    }
}
