/// What an acknowledged lane `/up` means for the caller.
public enum LaneUplinkAck: Hashable, Sendable {
    /// The body was taken; the lane's uplink is idle again.
    case acknowledged
    /// The lane's OPEN-bearing first body was taken: start polling the lane now.
    case laneOpened
}

/// The lanes of an https-lanes session (PROTOCOL.md §5.2): lane 0 plus one lane per open
/// stream, each with its own uplink sequencer and downlink cursor.
///
/// Lane 0 is polled from session start. Lane N comes into being with an uplink body
/// that begins with OPEN(N), is polled only after that body was acknowledged, and is
/// forgotten once the relay reported it closed and its uplink is idle. The mux never
/// reuses a stream id, so the table does not track closed ids.
public struct LaneTable: Sendable {
    /// Most live lanes besides lane 0: the relay's `max_streams_per_session`.
    public static let maxLiveLanes = 128

    private struct Lane: Sendable {
        var uplink: UplinkSequencer
        var downlink: DownlinkCursor
        /// False until the OPEN-bearing first body is acknowledged.
        var opened: Bool
    }

    public let api: RelayAPI
    public let session: RelayToken
    private var lanes: [StreamID: Lane] = [:]

    public init(api: RelayAPI, session: RelayToken) {
        self.api = api
        self.session = session
        lanes[.session] = makeLane(.session, opened: true)
    }

    /// Lanes other than lane 0 that the table still tracks.
    public var liveLaneCount: Int { lanes.count - 1 }

    /// Whether the table tracks `lane` (lane 0 always).
    public func contains(_ lane: StreamID) -> Bool { lanes[lane] != nil }

    /// Opened lanes whose downlink is idle, in id order: each wants `nextPoll(lane:)`.
    public var lanesReadyToPoll: [StreamID] {
        lanes.filter { $0.value.opened && $0.value.downlink.state == .idle }.keys.sorted()
    }

    /// The next `/up` for `lane`, or nil while one is in flight there. An unknown lane is
    /// created when `body` begins with OPEN(lane); otherwise, or when 128 lanes are live,
    /// this throws a stream-scoped error (`endsSession == false`).
    public mutating func nextUplinkRequest(lane: StreamID, body: [UInt8]) throws(CarrierError) -> CarrierRequest? {
        if lanes[lane] == nil {
            guard body.starts(with: Frame.open(stream: lane).encoded), !lane.isSession else {
                throw CarrierError.laneNotOpened.detailed(
                    "the first uplink body of lane \(lane) does not begin with OPEN(\(lane))")
            }
            guard liveLaneCount < LaneTable.maxLiveLanes else {
                throw CarrierError.laneLimitReached.detailed(
                    "lane \(lane) refused: \(LaneTable.maxLiveLanes) lanes are already open in this session")
            }
            lanes[lane] = makeLane(lane, opened: false)
        }
        return lanes[lane]?.uplink.nextRequest(body: body)
    }

    /// The `/up` of `lane` awaiting its answer, to resend on a retry.
    public func uplinkInFlight(lane: StreamID) -> CarrierRequest? { lanes[lane]?.uplink.inFlight }

    /// Judges the answer to the `/up` in flight on `lane`.
    public mutating func judgeUplink(lane: StreamID, _ response: CarrierResponse) -> ResponseVerdict<LaneUplinkAck> {
        guard var entry = lanes[lane] else { return unknown(lane, "/up") }
        let verdict = entry.uplink.judge(response)
        switch verdict {
        case .accepted:
            let opening = !entry.opened
            entry.opened = true
            store(entry, lane)
            return .accepted(opening ? .laneOpened : .acknowledged)
        case .retryLater(let retryAfter):
            return .retryLater(retryAfter)
        case .fatal(let error):
            return .fatal(error)
        }
    }

    /// The next poll of `lane`, or nil unless the lane is opened and its downlink idle.
    public mutating func nextPoll(lane: StreamID) -> CarrierRequest? {
        guard var entry = lanes[lane], entry.opened else { return nil }
        let request = entry.downlink.nextPoll()
        lanes[lane] = entry
        return request
    }

    /// The poll of `lane` awaiting its answer, to resend on a retry.
    public func pollInFlight(lane: StreamID) -> CarrierRequest? { lanes[lane]?.downlink.inFlight }

    /// Judges the answer to the poll in flight on `lane`. On `.laneClosed` the lane is
    /// dropped as soon as its uplink is idle too.
    public mutating func judgeDownlink(lane: StreamID, _ response: CarrierResponse) -> ResponseVerdict<DownlinkEvent> {
        guard var entry = lanes[lane] else { return unknown(lane, "/down") }
        let verdict = entry.downlink.judge(response)
        store(entry, lane)
        return verdict
    }

    /// Confirms delivery of the batch last polled on `lane`; see `DownlinkCursor`.
    public mutating func markDelivered(lane: StreamID) {
        lanes[lane]?.downlink.markDelivered()
    }

    private func makeLane(_ lane: StreamID, opened: Bool) -> Lane {
        let channel = CarrierChannel(api: api, session: session, lane: lane)
        return Lane(
            uplink: UplinkSequencer(channel: channel), downlink: DownlinkCursor(channel: channel), opened: opened)
    }

    /// Writes `entry` back, or forgets the lane once it is closed and nothing is in flight.
    private mutating func store(_ entry: Lane, _ lane: StreamID) {
        let finished = !lane.isSession && entry.downlink.state == .closed && entry.uplink.isIdle
        lanes[lane] = finished ? nil : entry
    }

    private func unknown<T>(_ lane: StreamID, _ operation: String) -> ResponseVerdict<T> {
        .fatal(CarrierError.unexpectedResponse.detailed("a \(operation) answer arrived for unknown lane \(lane)"))
    }
}
