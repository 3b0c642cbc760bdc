/// Why an HTTP/1.1 message could not be parsed or serialized. Every parse error is fatal to
/// the connection it came from. Descriptions never include header values or body bytes.
public struct HTTPError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable, Sendable {
        case headTooLarge, tooManyHeaders
        case invalidStatusLine, invalidRequestLine, unsupportedVersion
        case invalidHeaderName, invalidHeaderValue, obsoleteLineFolding
        case bareCarriageReturn, bareLineFeed
        case invalidContentLength, conflictingContentLength
        case contentLengthWithTransferEncoding, unsupportedTransferEncoding
        case chunkedRequestUnsupported, bodyNotAllowed
        case invalidChunkSize, chunkSizeOverflow, chunkLineTooLong, missingChunkTerminator
        case trailersTooLarge, bodyTooLarge
        case truncatedMessage, closedBeforeResponse, unsolicitedResponse
        case invalidMethod, invalidTarget, invalidStatusCode, invalidReasonPhrase
        case contentLengthMismatch
    }

    let code: Code

    private init(_ code: Code) { self.code = code }

    /// The head exceeded the configured byte limit before its empty line.
    public static let headTooLarge = HTTPError(.headTooLarge)
    /// The head had more header fields than the configured limit.
    public static let tooManyHeaders = HTTPError(.tooManyHeaders)
    /// The status line is not `HTTP/1.x SP 3DIGIT SP reason`.
    public static let invalidStatusLine = HTTPError(.invalidStatusLine)
    /// The request line is not `method SP target SP HTTP/1.x`.
    public static let invalidRequestLine = HTTPError(.invalidRequestLine)
    /// The message is neither HTTP/1.1 nor HTTP/1.0.
    public static let unsupportedVersion = HTTPError(.unsupportedVersion)
    /// A header name is empty or not a token (whitespace before the colon, no colon at all).
    public static let invalidHeaderName = HTTPError(.invalidHeaderName)
    /// A header value holds a control character or is not UTF-8.
    public static let invalidHeaderValue = HTTPError(.invalidHeaderValue)
    /// A header line starts with whitespace (obsolete line folding).
    public static let obsoleteLineFolding = HTTPError(.obsoleteLineFolding)
    /// A CR not followed by LF.
    public static let bareCarriageReturn = HTTPError(.bareCarriageReturn)
    /// An LF not preceded by CR.
    public static let bareLineFeed = HTTPError(.bareLineFeed)
    /// A Content-Length value that is not a plain decimal number that fits in an `Int`.
    public static let invalidContentLength = HTTPError(.invalidContentLength)
    /// Several Content-Length fields with different values.
    public static let conflictingContentLength = HTTPError(.conflictingContentLength)
    /// Both Content-Length and Transfer-Encoding: the framing is ambiguous.
    public static let contentLengthWithTransferEncoding = HTTPError(.contentLengthWithTransferEncoding)
    /// A Transfer-Encoding other than exactly one `chunked` (or on an HTTP/1.0 message).
    public static let unsupportedTransferEncoding = HTTPError(.unsupportedTransferEncoding)
    /// A request with `Transfer-Encoding: chunked`: requests must use Content-Length.
    public static let chunkedRequestUnsupported = HTTPError(.chunkedRequestUnsupported)
    /// A body (or body framing) on a message whose status forbids one.
    public static let bodyNotAllowed = HTTPError(.bodyNotAllowed)
    /// A chunk-size line that is not hex digits optionally followed by extensions.
    public static let invalidChunkSize = HTTPError(.invalidChunkSize)
    /// A chunk size that does not fit in an `Int`.
    public static let chunkSizeOverflow = HTTPError(.chunkSizeOverflow)
    /// A chunk-size line longer than the configured limit.
    public static let chunkLineTooLong = HTTPError(.chunkLineTooLong)
    /// Chunk data not followed by CRLF.
    public static let missingChunkTerminator = HTTPError(.missingChunkTerminator)
    /// The trailer section exceeded the configured limit.
    public static let trailersTooLarge = HTTPError(.trailersTooLarge)
    /// The body exceeded the cap set for this message.
    public static let bodyTooLarge = HTTPError(.bodyTooLarge)
    /// The connection ended in the middle of a message.
    public static let truncatedMessage = HTTPError(.truncatedMessage)
    /// The connection ended while a response was awaited and none had begun.
    public static let closedBeforeResponse = HTTPError(.closedBeforeResponse)
    /// Response bytes arrived while no request was outstanding.
    public static let unsolicitedResponse = HTTPError(.unsolicitedResponse)
    /// Serializing: the method is not a token.
    public static let invalidMethod = HTTPError(.invalidMethod)
    /// Serializing or parsing: the request target is empty or holds a non-visible character.
    public static let invalidTarget = HTTPError(.invalidTarget)
    /// Serializing: the status code is outside 100...599.
    public static let invalidStatusCode = HTTPError(.invalidStatusCode)
    /// Serializing: the reason phrase holds a control character.
    public static let invalidReasonPhrase = HTTPError(.invalidReasonPhrase)
    /// Serializing: a caller-set Content-Length disagrees with the body.
    public static let contentLengthMismatch = HTTPError(.contentLengthMismatch)

    public var description: String {
        switch code {
        case .headTooLarge: "HTTP head exceeds the size limit"
        case .tooManyHeaders: "HTTP head has too many header fields"
        case .invalidStatusLine: "invalid HTTP status line"
        case .invalidRequestLine: "invalid HTTP request line"
        case .unsupportedVersion: "unsupported HTTP version"
        case .invalidHeaderName: "invalid HTTP header name"
        case .invalidHeaderValue: "invalid HTTP header value"
        case .obsoleteLineFolding: "obsolete line folding in HTTP head"
        case .bareCarriageReturn: "bare CR in HTTP message"
        case .bareLineFeed: "bare LF in HTTP message"
        case .invalidContentLength: "invalid Content-Length"
        case .conflictingContentLength: "conflicting Content-Length fields"
        case .contentLengthWithTransferEncoding: "both Content-Length and Transfer-Encoding"
        case .unsupportedTransferEncoding: "unsupported Transfer-Encoding"
        case .chunkedRequestUnsupported: "chunked request bodies are not supported; use Content-Length"
        case .bodyNotAllowed: "body framing on a message that cannot have a body"
        case .invalidChunkSize: "invalid chunk size"
        case .chunkSizeOverflow: "chunk size overflows"
        case .chunkLineTooLong: "chunk size line exceeds the size limit"
        case .missingChunkTerminator: "chunk data not followed by CRLF"
        case .trailersTooLarge: "HTTP trailers exceed the size limit"
        case .bodyTooLarge: "HTTP body exceeds the size limit"
        case .truncatedMessage: "connection ended inside an HTTP message"
        case .closedBeforeResponse: "connection ended before the response began"
        case .unsolicitedResponse: "HTTP response without an outstanding request"
        case .invalidMethod: "invalid HTTP method"
        case .invalidTarget: "invalid HTTP request target"
        case .invalidStatusCode: "invalid HTTP status code"
        case .invalidReasonPhrase: "invalid HTTP reason phrase"
        case .contentLengthMismatch: "Content-Length does not match the body"
        }
    }
}
