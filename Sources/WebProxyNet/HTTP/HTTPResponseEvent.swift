/// What `HTTPResponseParser.next()` found in the received bytes.
public enum HTTPResponseEvent: Hashable, Sendable {
    /// An interim 1xx response (not 101); the final response to the same request follows.
    case informational(HTTPResponseHead)
    /// The head of the final response.
    case head(HTTPResponseHead)
    /// The next piece of the body, a slice of the received bytes.
    case body(ArraySlice<UInt8>)
    /// The response is complete; `keepAlive` says whether the connection can be reused.
    case end(keepAlive: Bool)
    /// A 101 response: the connection now speaks another protocol. No more events follow;
    /// take the bytes received after the head with `takeUnparsedBytes()`.
    case switchedProtocols(HTTPResponseHead)
}
