/// The carrier a relay profile uses, as spelled in the bridge page and `X-Carrier-Mode`.
public enum CarrierMode: String, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    /// Serialized HTTPS: one `/up` in flight and one `/down` long poll per session.
    case https
    /// One independent HTTPS lane (uplink and long poll) per stream, plus lane 0.
    case httpsLanes = "https-lanes"
    /// One multiplexed WebSocket per session.
    case websocket
    /// One WebSocket per stream.
    case websocketLanes = "websocket-lanes"

    public var description: String { rawValue }
}
