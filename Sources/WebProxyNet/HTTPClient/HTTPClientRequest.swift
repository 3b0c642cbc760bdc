/// One request for `HTTPClient`: sent exactly as given (header order and case kept), with
/// `Content-Length` added for a body unless set, and `Host` added first only if missing.
public struct HTTPClientRequest: Sendable {
    public var method: String
    /// Path and query, sent byte for byte.
    public var target: String
    public var headers: HTTPHeaders
    /// The body, or nil for a request without one (no Content-Length is sent then).
    public var body: [UInt8]?
    /// The cap on the response body; the client's parser limit when nil.
    public var maxResponseBodyBytes: Int?
    /// From submission to the response's last byte; the client's default when nil.
    public var timeout: Duration?
    /// Once sent, the request fails as timed out when its connection moves nothing for this
    /// long: no byte acknowledged by the peer, none received (TCP_INFO). A slow path that
    /// moves keeps the request alive up to `timeout`; a path gone silent loses it early.
    /// Nil for a request the server may rightly leave unanswered, such as a long poll.
    public var silenceTimeout: Duration?

    public init(
        method: String = "GET", target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil,
        maxResponseBodyBytes: Int? = nil, timeout: Duration? = nil, silenceTimeout: Duration? = nil
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.timeout = timeout
        self.silenceTimeout = silenceTimeout
    }
}
