/// A status line and its header fields, exactly as sent or received.
public struct HTTPResponseHead: Hashable, Sendable {
    public var status: Int
    public var reason: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    public init(
        status: Int, reason: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.status = status
        self.reason = reason
        self.version = version
        self.headers = headers
    }

    /// Whether the status forbids a body whatever the request (1xx, 204, 304).
    public var statusForbidsBody: Bool { (100..<200).contains(status) || status == 204 || status == 304 }

    /// The body bytes to reserve before the body arrives: its declared `Content-Length`, at
    /// most `cap`, so that a body received in pieces is not copied each time it grows.
    func bodyCapacity(cap: Int) -> Int {
        guard let declared = headers.first("Content-Length").flatMap({ Int($0) }), declared > 0 else { return 0 }
        return min(declared, cap)
    }

    /// Appends the HTTP/1.1 status line and headers. With a body (`bodyLength` non-nil),
    /// adds `Content-Length` unless the caller set it (then it must match); 1xx, 204 and
    /// 304 take no body. Nothing else is added.
    public func encode(into buffer: inout [UInt8], bodyLength: Int?) throws(HTTPError) {
        guard (100...599).contains(status) else { throw .invalidStatusCode }
        guard reason.utf8.allSatisfy(HTTPSyntax.isFieldValueByte) else { throw .invalidReasonPhrase }
        if statusForbidsBody && bodyLength != nil { throw .bodyNotAllowed }
        let extra = try HTTPMessageFraming.contentLengthToAdd(headers, bodyLength: bodyLength)
        buffer.append(contentsOf: "HTTP/1.1 ".utf8)
        buffer.append(contentsOf: String(status).utf8)
        buffer.append(HTTPSyntax.space)
        buffer.append(contentsOf: reason.utf8)
        buffer.append(contentsOf: [HTTPSyntax.cr, HTTPSyntax.lf])
        headers.write(into: &buffer)
        extra?.write(into: &buffer)
        buffer.append(contentsOf: [HTTPSyntax.cr, HTTPSyntax.lf])
    }

    /// The response head followed by `body` (nil: no body and no added Content-Length).
    public func encoded(body: [UInt8]? = nil) throws(HTTPError) -> [UInt8] {
        var out: [UInt8] = []
        try encode(into: &out, bodyLength: body?.count)
        if let body { out.append(contentsOf: body) }
        return out
    }
}
