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

    /// The value of a `carrier` key or `--carrier` flag; an unknown name suggests the closest.
    init(parsingCarrier text: String) throws(ConfigurationValueError) {
        guard let choice = CarrierChoice(rawValue: text) else {
            let names = CarrierChoice.allCases.map(\.rawValue)
            throw ConfigurationValueError(
                "Unknown carrier",
                hint: KeySuggestion.closest(to: text, among: names).map { "did you mean '\($0)'?" }
                    ?? "use one of \(names.joined(separator: ", "))")
        }
        self = choice
    }
}
