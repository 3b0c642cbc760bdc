/// A complete response received by `HTTPClient`.
public struct HTTPClientResponse: Hashable, Sendable {
    /// Status line and header fields, exactly as received.
    public var head: HTTPResponseHead
    /// The body after any chunked framing was removed.
    public var body: [UInt8]

    public init(head: HTTPResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    public var status: Int { head.status }
    public var reason: String { head.reason }
    public var headers: HTTPHeaders { head.headers }
}
