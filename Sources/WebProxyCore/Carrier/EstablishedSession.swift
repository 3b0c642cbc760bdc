/// A relay session that answered WELCOME: its bearer token and the carrier to use.
public struct EstablishedSession: Hashable, Sendable {
    /// Bearer for every later API call and WebSocket subprotocol. Redacted in descriptions.
    public let token: RelayToken
    /// The relay's `X-Carrier-Mode`, checked equal to the bridge page's.
    public let carrierMode: CarrierMode
}
