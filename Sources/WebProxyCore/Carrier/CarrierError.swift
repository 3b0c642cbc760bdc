/// A failure of bootstrap or carrier traffic. Messages never contain tokens, capabilities,
/// bridge URLs or payload bytes.
///
/// Equality compares the kind only, so `error == .unexpectedStatus` matches whatever
/// detail the message carries.
public struct CarrierError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case notATproxyRelay
        case malformedBridgePage
        case unexpectedStatus
        case malformedResponse
        case carrierModeMismatch
        case unexpectedResponse
        case noResponse
        case retryBudgetExhausted
        case laneLimitReached
        case laneNotOpened
    }

    private let kind: Kind
    /// What went wrong, for logs and status output.
    public let description: String

    private init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// False for the stream-scoped refusals of `LaneTable`; every other error ends the session.
    public var endsSession: Bool {
        switch kind {
        case .laneLimitReached, .laneNotOpened: false
        default: true
        }
    }

    public static func == (a: CarrierError, b: CarrierError) -> Bool { a.kind == b.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The answer to the bridge request holds no tproxy v1 session data.
    public static let notATproxyRelay = CarrierError(
        .notATproxyRelay,
        "the bridge page holds no session bootstrap: wrong secret or host, or not a WEB relay (tproxy v1)")
    /// The bridge page has the session data statement, but a value in it is unusable.
    public static let malformedBridgePage = CarrierError(.malformedBridgePage, "malformed bridge page")
    /// The relay answered with a status the protocol does not allow here.
    public static let unexpectedStatus = CarrierError(.unexpectedStatus, "unexpected HTTP status")
    /// The status was right but a header or the body was not.
    public static let malformedResponse = CarrierError(.malformedResponse, "malformed relay response")
    /// The session was created for another carrier than the bridge page announced.
    public static let carrierModeMismatch = CarrierError(.carrierModeMismatch, "carrier mode mismatch")
    /// A response arrived for a request that is not in flight.
    public static let unexpectedResponse = CarrierError(.unexpectedResponse, "response without a request in flight")
    /// Every attempt of a request failed without an HTTP response.
    public static let noResponse = CarrierError(.noResponse, "no response from the relay")
    /// Retrying a request would exceed its time budget.
    public static let retryBudgetExhausted = CarrierError(.retryBudgetExhausted, "retry budget exhausted")
    /// Stream-scoped: no room for another https-lanes lane.
    public static let laneLimitReached = CarrierError(.laneLimitReached, "lane limit reached")
    /// Stream-scoped: a new lane's first uplink body does not begin with its OPEN frame.
    public static let laneNotOpened = CarrierError(.laneNotOpened, "lane not opened")

    /// The same kind with a more specific message.
    func detailed(_ message: String) -> CarrierError { CarrierError(kind, message) }
}
