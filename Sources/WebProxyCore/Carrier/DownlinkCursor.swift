/// What one `/down` answer means for the caller.
public enum DownlinkEvent: Hashable, Sendable {
    /// A batch of relay frames. Deliver them all to the local streams, then call
    /// `markDelivered()`; the next poll acknowledges the batch.
    case batch([UInt8])
    /// The long poll ended without data (or was superseded): poll again at once.
    case noData
    /// https-lanes: the lane's stream is closed and drained; stop polling it.
    case laneClosed
}

/// The `/down` long poll of an https session or of one https-lanes lane (PROTOCOL.md
/// §5.1, §5.2): one poll at a time, carrying the cursor of the last fully delivered batch.
///
/// The cursor only advances on `markDelivered()`. A poll retried after a lost answer
/// carries the old cursor, so the relay replays the batch byte for byte.
public struct DownlinkCursor: Sendable {
    public enum State: Hashable, Sendable {
        /// Ready for `nextPoll()`.
        case idle
        /// A poll is in flight (`inFlight`).
        case polling
        /// A batch was handed out and awaits `markDelivered()`.
        case delivering
        /// The relay reported the lane closed: no more polls.
        case closed
    }

    public let channel: CarrierChannel
    /// The cursor the next poll carries: 0 after session creation.
    public private(set) var cursor: UInt64 = 0
    public private(set) var state = State.idle
    /// The poll awaiting its answer; resend it as is on a retry.
    public private(set) var inFlight: CarrierRequest?

    public init(channel: CarrierChannel) {
        self.channel = channel
    }

    /// The next poll, or nil unless `state` is `.idle`.
    public mutating func nextPoll() -> CarrierRequest? {
        guard state == .idle else { return nil }
        let request = channel.api.down(session: channel.session, cursor: cursor, lane: channel.lane)
        inFlight = request
        state = .polling
        return request
    }

    /// Judges the answer to `inFlight`. 200 must carry `X-Down-Cursor: cursor+1` and a
    /// non-empty batch of at most 2 MiB; 204 must carry the same cursor, and on a lane may
    /// carry `X-Lane-Closed: 1`. 503 keeps the poll in flight for a retry; anything else
    /// ends the session.
    public mutating func judge(_ response: CarrierResponse) -> ResponseVerdict<DownlinkEvent> {
        guard state == .polling else {
            return .fatal(
                CarrierError.unexpectedResponse.detailed(
                    "a /down answer arrived for \(channel.name) with no poll in flight"))
        }
        let verdict: ResponseVerdict<DownlinkEvent>
        do {
            verdict = try classify(response)
        } catch {
            return .fatal(error)
        }
        switch verdict {
        case .accepted(.batch): state = .delivering
        case .accepted(.noData): state = .idle
        case .accepted(.laneClosed): state = .closed
        case .retryLater, .fatal: return verdict
        }
        inFlight = nil
        return verdict
    }

    /// Confirms that the batch from the last poll reached the local streams: the cursor
    /// advances and the next poll acknowledges the batch. Ignored in any other state.
    public mutating func markDelivered() {
        guard state == .delivering else { return }
        cursor += 1
        state = .idle
    }

    private func classify(_ response: CarrierResponse) throws(CarrierError) -> ResponseVerdict<DownlinkEvent> {
        let operation = "/down on \(channel.name)"
        switch response.status {
        case 200:
            guard let text = try response.singleHeader("X-Down-Cursor"), let next = CanonicalDecimal.parse(text),
                next == cursor + 1
            else {
                throw CarrierError.malformedResponse.detailed(
                    "\(operation) returned a batch without X-Down-Cursor \(cursor + 1)")
            }
            guard !response.body.isEmpty, response.body.count <= FrameLimits.defaultBatchBytes else {
                throw CarrierError.malformedResponse.detailed(
                    "\(operation) returned a batch of \(response.body.count) bytes (1 byte to 2 MiB expected)")
            }
            guard try response.singleHeader("X-Lane-Closed") == nil else {
                throw CarrierError.malformedResponse.detailed("\(operation) returned a batch marked X-Lane-Closed")
            }
            return .accepted(.batch(response.body))
        case 204:
            guard let text = try response.singleHeader("X-Down-Cursor"), CanonicalDecimal.parse(text) == cursor else {
                throw CarrierError.malformedResponse.detailed("\(operation) ended without X-Down-Cursor \(cursor)")
            }
            switch try response.singleHeader("X-Lane-Closed") {
            case nil:
                return .accepted(.noData)
            case "1" where channel.lane.map({ !$0.isSession }) == true:
                return .accepted(.laneClosed)
            default:
                throw CarrierError.malformedResponse.detailed("\(operation) carried an unexpected X-Lane-Closed")
            }
        default:
            return .unexpected(response, operation: operation)
        }
    }
}
