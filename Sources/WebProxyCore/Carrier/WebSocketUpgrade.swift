/// The WebSocket upgrade of the websocket carriers (PROTOCOL.md §5.3 and §5.4): the
/// request minus `Sec-WebSocket-Key` (the WebSocket client adds it before
/// `Sec-WebSocket-Protocol`), and a check that the relay echoed the subprotocol.
///
/// The session token travels in the subprotocol, never in `Authorization`.
public struct WebSocketUpgrade: Sendable {
    /// `GET {prefix}/ws` with the upgrade headers, no Authorization, no body, no query.
    public let request: CarrierRequest
    /// The single subprotocol offered: `tproxy-v1.<token>` or `tproxy-lane-v1.<token>.<id>`.
    let subprotocol: String

    /// `lane` is nil for the multiplexed socket, else the stream id (1...0xFFFFFF) of a
    /// websocket-lanes socket; there is no lane-0 socket.
    public init(channel: CarrierChannel) {
        precondition(channel.lane?.isSession != true, "websocket-lanes has no lane-0 socket")
        let api = channel.api
        if let lane = channel.lane {
            subprotocol = "tproxy-lane-v1.\(channel.session.text).\(lane.rawValue)"
        } else {
            subprotocol = "tproxy-v1." + channel.session.text
        }
        request = CarrierRequest(
            method: "GET", path: api.prefix + "/ws",
            headers: api.browser.webSocket(host: api.host, origin: api.origin, subprotocol: subprotocol))
    }

    /// Accepts only 101 echoing exactly the offered subprotocol. (The WebSocket client
    /// checks `Sec-WebSocket-Accept`.) Any refusal ends the session: a failed lane upgrade
    /// means the session or the network is gone.
    public func judge(_ response: CarrierResponse) -> ResponseVerdict<Void> {
        guard response.status == 101 else { return .unexpected(response, operation: "the WebSocket upgrade") }
        do {
            guard try response.singleHeader("Sec-WebSocket-Protocol") == subprotocol else {
                return .fatal(
                    CarrierError.malformedResponse.detailed("the relay did not echo the offered WebSocket subprotocol"))
            }
            return .accepted(())
        } catch {
            return .fatal(error)
        }
    }
}
