/// A request line and its header fields, exactly as sent or received.
public struct HTTPRequestHead: Hashable, Sendable {
    public var method: String
    /// The raw request target (path and query), byte for byte as on the wire.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    public init(
        method: String, target: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// Whether the connection may carry another request after this one's response.
    public var keepAlive: Bool {
        version == .http1_1 && !headers.contains("Connection", token: "close")
    }

    /// Appends the HTTP/1.1 request head. With a body (`bodyLength` non-nil, even 0), adds
    /// `Content-Length` unless the caller set it, in which case it must match. Nothing else
    /// is added; invalid names, values, methods or targets are refused, never cleaned up.
    public func encode(into buffer: inout [UInt8], bodyLength: Int?) throws(HTTPError) {
        guard HTTPSyntax.isToken(method.utf8) else { throw .invalidMethod }
        guard HTTPSyntax.isTarget(target.utf8) else { throw .invalidTarget }
        let extra = try HTTPMessageFraming.contentLengthToAdd(headers, bodyLength: bodyLength)
        buffer.append(contentsOf: method.utf8)
        buffer.append(HTTPSyntax.space)
        buffer.append(contentsOf: target.utf8)
        buffer.append(HTTPSyntax.space)
        buffer.append(contentsOf: "HTTP/1.1\r\n".utf8)
        headers.write(into: &buffer)
        extra?.write(into: &buffer)
        buffer.append(contentsOf: [HTTPSyntax.cr, HTTPSyntax.lf])
    }

    /// The request head followed by `body` (nil: a request without a body).
    public func encoded(body: [UInt8]? = nil) throws(HTTPError) -> [UInt8] {
        var out: [UInt8] = []
        try encode(into: &out, bodyLength: body?.count)
        if let body { out.append(contentsOf: body) }
        return out
    }
}
