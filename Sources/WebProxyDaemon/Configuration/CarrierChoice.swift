/// Which carrier a relay session uses: the relay's choice (`follow`), or a pin that makes
/// the session fail when the relay offers another mode.
public enum CarrierChoice: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Use whatever carrier mode the relay's bridge page names (the default).
    case follow
    /// Require single HTTPS long-poll sessions.
    case https
    /// Require one HTTPS lane per stream.
    case httpsLanes = "https-lanes"
    /// Require one multiplexed WebSocket.
    case websocket
    /// Require one WebSocket per stream.
    case websocketLanes = "websocket-lanes"

    public var description: String { rawValue }
}
