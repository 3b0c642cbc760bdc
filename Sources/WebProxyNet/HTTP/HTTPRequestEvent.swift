/// What `HTTPRequestParser.next()` found in the received bytes.
public enum HTTPRequestEvent: Hashable, Sendable {
    /// The request line and header fields.
    case head(HTTPRequestHead)
    /// The next piece of the body, a slice of the received bytes.
    case body(ArraySlice<UInt8>)
    /// The request is complete; `keepAlive` says whether another may follow on this connection.
    case end(keepAlive: Bool)
}
