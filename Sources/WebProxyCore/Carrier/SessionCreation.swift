/// Creating a session from a fresh bridge page (PROTOCOL.md §3.3): the request to send,
/// and an exact check of the answer. Retrying the byte-identical request is safe: the
/// relay is idempotent while the bootstrap lives.
public struct SessionCreation: Sendable {
    /// `POST {prefix}/session` with the page's bootstrap and a HELLO body.
    public let request: CarrierRequest
    /// The carrier the bridge page announced.
    public let expectedMode: CarrierMode

    /// The only WELCOME a v1 relay sends: `11 00 00 00 00 00 00 00`.
    static let welcome = Frame.welcome.encoded

    public init(page: BridgePage, api: RelayAPI) {
        request = api.createSession(bootstrap: page.bootstrap)
        expectedMode = page.carrierMode
    }

    /// Accepts only 200 with a canonical `X-Session-Token`, `X-Carrier-Mode` equal to the
    /// page's mode, `X-Down-Cursor: 0` and exactly WELCOME as the body.
    public func judge(_ response: CarrierResponse) -> ResponseVerdict<EstablishedSession> {
        guard response.status == 200 else { return .unexpected(response, operation: "session creation") }
        do {
            guard let tokenText = try response.singleHeader("X-Session-Token"), let token = RelayToken(tokenText) else {
                return .fatal(
                    CarrierError.malformedResponse.detailed(
                        "the relay created a session without a valid X-Session-Token"))
            }
            guard let modeText = try response.singleHeader("X-Carrier-Mode") else {
                return .fatal(
                    CarrierError.malformedResponse.detailed("the relay created a session without X-Carrier-Mode"))
            }
            guard let mode = CarrierMode(rawValue: modeText), mode == expectedMode else {
                let named = CarrierMode(rawValue: modeText).map(\.rawValue) ?? "an unknown mode"
                return .fatal(
                    CarrierError.carrierModeMismatch.detailed(
                        "the bridge page announced carrier \(expectedMode) but the session was created for \(named)"))
            }
            guard try response.singleHeader("X-Down-Cursor") == "0" else {
                return .fatal(
                    CarrierError.malformedResponse.detailed("the relay created a session whose X-Down-Cursor is not 0"))
            }
            guard response.body == SessionCreation.welcome else {
                return .fatal(
                    CarrierError.malformedResponse.detailed(
                        "the relay answered session creation with \(response.body.count) bytes instead of WELCOME"))
            }
            return .accepted(EstablishedSession(token: token, carrierMode: mode))
        } catch {
            return .fatal(error)
        }
    }
}
