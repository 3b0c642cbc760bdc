/// How a message's body is delimited, decided from its header fields (RFC 9112 section 6).
enum HTTPMessageFraming: Hashable, Sendable {
    case contentLength(Int)
    case chunked
    /// Neither field: no body for a request, read-until-EOF for a response.
    case unspecified

    /// The framing the headers declare. Ambiguity is an error, never resolved by guessing.
    static func declared(by headers: HTTPHeaders, version: HTTPVersion) throws(HTTPError)
        -> HTTPMessageFraming
    {
        var contentLength: Int?
        var transferCodings: [Substring] = []
        var hasTransferEncoding = false
        for field in headers {
            if HTTPHeaders.namesMatch(field.name, "Content-Length") {
                guard let value = HTTPSyntax.decimal(field.value.utf8) else {
                    throw .invalidContentLength
                }
                if let previous = contentLength, previous != value { throw .conflictingContentLength }
                contentLength = value
            } else if HTTPHeaders.namesMatch(field.name, "Transfer-Encoding") {
                hasTransferEncoding = true
                transferCodings += HTTPSyntax.listElements(field.value)
            }
        }
        guard hasTransferEncoding else {
            return contentLength.map { .contentLength($0) } ?? .unspecified
        }
        guard contentLength == nil else { throw .contentLengthWithTransferEncoding }
        guard version == .http1_1, transferCodings.count == 1,
            transferCodings[0].lowercased() == "chunked"
        else { throw .unsupportedTransferEncoding }
        return .chunked
    }

    /// The `Content-Length` field a serializer must add: none without a body or when the
    /// caller set one (which must then match the body). Validates every field as well.
    static func contentLengthToAdd(_ headers: HTTPHeaders, bodyLength: Int?) throws(HTTPError)
        -> HTTPHeaders?
    {
        try headers.validateForSerialization()
        if headers.contains("Transfer-Encoding") { throw .unsupportedTransferEncoding }
        let declared = headers.values("Content-Length")
        guard let bodyLength else { return nil }
        if declared.isEmpty { return [("Content-Length", String(bodyLength))] }
        guard declared.allSatisfy({ HTTPSyntax.decimal($0.utf8) == bodyLength }) else {
            throw .contentLengthMismatch
        }
        return nil
    }
}
