/// Where one uplink or downlink sends its requests: the session, and for https-lanes the
/// lane (`X-Lane-ID`). `lane` is nil on an https session.
public struct CarrierChannel: Hashable, Sendable {
    public let api: RelayAPI
    public let session: RelayToken
    public let lane: StreamID?

    public init(api: RelayAPI, session: RelayToken, lane: StreamID?) {
        self.api = api
        self.session = session
        self.lane = lane
    }

    /// What the channel is called in error messages.
    var name: String { lane.map { "lane \($0)" } ?? "the session" }
}
