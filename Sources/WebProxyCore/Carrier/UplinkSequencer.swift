/// The `/up` side of an https session or of one https-lanes lane (PROTOCOL.md §5.1, §5.2):
/// sequence numbers from 1 and exactly one request in flight.
///
/// While a request is in flight the caller keeps queuing frames and coalesces them into
/// the next body. A retry re-sends `inFlight` unchanged: same sequence, same bytes.
public struct UplinkSequencer: Sendable {
    public let channel: CarrierChannel
    /// The sequence number the next new body will carry.
    public private(set) var nextSequence: UInt64 = 1
    /// The request awaiting its acknowledgement; resend it as is on a retry.
    public private(set) var inFlight: CarrierRequest?

    public init(channel: CarrierChannel) {
        self.channel = channel
    }

    /// True when a new body may be sent.
    public var isIdle: Bool { inFlight == nil }

    /// The request carrying `body` as the next sequence number, or nil while another is in
    /// flight. `body` holds complete frames: non-empty and at most 2 MiB (the relay
    /// answers anything else with 404).
    public mutating func nextRequest(body: [UInt8]) -> CarrierRequest? {
        precondition(!body.isEmpty && body.count <= FrameLimits.defaultBatchBytes, "uplink body must be 1 byte...2 MiB")
        guard inFlight == nil else { return nil }
        let request = channel.api.up(
            session: channel.session, sequence: nextSequence, lane: channel.lane, body: body)
        inFlight = request
        return request
    }

    /// Judges the answer to `inFlight`: 204 with `X-Up-Ack` equal to its sequence number
    /// is accepted (the sequencer becomes idle and the value is the acknowledged number);
    /// 503 leaves it in flight for a retry; anything else ends the session.
    public mutating func judge(_ response: CarrierResponse) -> ResponseVerdict<UInt64> {
        guard inFlight != nil else {
            return .fatal(
                CarrierError.unexpectedResponse.detailed(
                    "an /up answer arrived for \(channel.name) with no /up in flight"))
        }
        guard response.status == 204 else { return .unexpected(response, operation: "/up on \(channel.name)") }
        let sequence = nextSequence
        do {
            guard let ack = try response.singleHeader("X-Up-Ack") else {
                return .fatal(
                    CarrierError.malformedResponse.detailed(
                        "/up \(sequence) on \(channel.name) was answered without X-Up-Ack"))
            }
            guard CanonicalDecimal.parse(ack) == sequence else {
                return .fatal(
                    CarrierError.malformedResponse.detailed(
                        "/up \(sequence) on \(channel.name) was answered with a different X-Up-Ack"))
            }
        } catch {
            return .fatal(error)
        }
        inFlight = nil
        nextSequence = sequence + 1
        return .accepted(sequence)
    }
}
