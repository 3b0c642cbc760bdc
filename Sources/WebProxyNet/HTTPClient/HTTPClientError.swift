/// Why an `HTTPClient` request failed. The client never retries; `isNoResponse` tells the
/// caller whether a retry is safe as far as the connection could tell. Messages never carry
/// header values or body bytes.
public struct HTTPClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The class of failure.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No connection could be opened (resolve, connect, proxy or TLS): nothing was sent.
        public static let connectFailed = Kind("connectFailed")
        /// The connection failed or closed before any byte of a response arrived.
        public static let noResponse = Kind("noResponse")
        /// The response was malformed, truncated, or over its body cap.
        public static let badResponse = Kind("badResponse")
        /// The request's deadline passed; its connection was closed.
        public static let timedOut = Kind("timedOut")
        /// The wait queue was full; nothing was sent.
        public static let queueFull = Kind("queueFull")
        /// The request could not be serialized (invalid method, target or header).
        public static let invalidRequest = Kind("invalidRequest")
        /// The client was shut down before the request completed.
        public static let shutDown = Kind("shutDown")
    }

    /// The class of failure.
    public let kind: Kind
    /// A sentence for a person.
    public let message: String
    /// The connection failure behind `connectFailed`, `noResponse` or `badResponse`, if any.
    public let transport: TransportError?
    /// The HTTP parse or serialization error, if any.
    public let http: HTTPError?

    init(_ kind: Kind, _ message: String, transport: TransportError? = nil, http: HTTPError? = nil) {
        self.kind = kind
        self.message = message
        self.transport = transport
        self.http = http
    }

    /// True when not one response byte arrived before the connection failed (including
    /// when it never opened): the caller may retry under its own rules.
    public var isNoResponse: Bool { kind == .connectFailed || kind == .noResponse }

    public var description: String {
        var text = "\(kind): \(message)"
        if let http { text += " (\(http))" }
        if let transport { text += " (\(transport))" }
        return text
    }
}
