import WebProxyCore

/// One downlink queue with its carrier state: the whole session for `https` and `websocket`,
/// lane 0 or one stream's lane for `https-lanes`, one stream's socket for `websocket-lanes`.
struct RelayLane: Sendable {
    var queue = DownlinkQueue()

    // HTTPS carriers.
    /// The last applied `X-Up-Seq` and the fingerprint of its body (for identical retries).
    var lastUplink: (sequence: UInt64, body: BodyFingerprint)?
    /// The cursor the client has acknowledged.
    var cursor: UInt64 = 0
    /// The batch numbered `cursor + 1`, kept byte-for-byte until acknowledged, and its charge.
    var unacked: (body: [UInt8], bytes: Int, items: Int)?
    /// The parked long poll, if any.
    var parked: ParkedPoll?

    // WebSocket carriers.
    var socket: LaneSocket?

    struct ParkedPoll: Sendable {
        var connection: RelayConnectionID
        var deadline: RelayInstant
    }

    struct LaneSocket: Sendable {
        var connection: RelayConnectionID
        /// websocket-lanes: the first message must begin with OPEN(lane id).
        var awaitingOpen: Bool
        var lastSent: RelayInstant
        var lastReceived: RelayInstant
    }
}
