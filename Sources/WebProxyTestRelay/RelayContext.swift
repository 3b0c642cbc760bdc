/// What one engine call carries into a session: the limits, the time, the faults to apply
/// and the actions produced so far.
struct RelayContext: Sendable {
    let limits: RelayLimits
    let now: RelayInstant
    var faults: RelayFaults
    var actions: [RelayAction] = []

    /// Applies `faults.corruptNextDownlink` (once) to a batch about to leave the relay.
    mutating func corrupt(_ body: inout [UInt8]) {
        guard let corruption = faults.corruptNextDownlink else { return }
        faults.corruptNextDownlink = nil
        switch corruption {
        case .truncatedFrame:
            body += [0x02, 0x00, 0x00, 0x01, 0x00]
        case .oversizedFrame:
            let length = UInt32(clamping: limits.maxFramePayload + 1)
            body += [0x02, 0x00, 0x00, 0x01]
            body += (0..<4).map { UInt8(truncatingIfNeeded: length >> (24 - 8 * UInt32($0))) }
            body += [UInt8](repeating: 0x55, count: Int(length))
        case .unknownStream:
            body += [0x02, 0xFF, 0xFF, 0xF0, 0x00, 0x00, 0x00, 0x04, 0x55, 0x55, 0x55, 0x55]
        }
    }
}

/// A protocol error that ends what carried it: the session, or one websocket-lanes lane.
/// The reason names the rule, never payload bytes or tokens.
struct CarrierFailure: Error, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
