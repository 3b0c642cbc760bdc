/// Builds the relay's API requests (PROTOCOL.md §3.3 to §3.5 and §5) for one host and
/// API path prefix.
///
/// Every request carries `Host: H` with no port (the reference front answers `H:port`
/// with 404) and `Origin: https://H` as the bridge's fetches do; none carries a query,
/// a cookie or a header that names this client.
public struct RelayAPI: Hashable, Sendable {
    /// Canonical relay hostname H, without a port.
    public let host: String
    /// `/api/v1`, or `/P/api/v1` for a relay mounted under base path P.
    public let prefix: String

    public init(host: String, prefix: String) {
        self.host = host
        self.prefix = prefix
    }

    /// `https://H`, the origin the bridge page runs in.
    public var origin: String { "https://" + host }

    /// The exact binary content type the relay demands (no parameters).
    static let octetStream = "application/octet-stream"

    /// `POST {prefix}/session` with the bootstrap bearer and a HELLO body.
    public func createSession(bootstrap: RelayToken) -> CarrierRequest {
        CarrierRequest(
            method: "POST", path: prefix + "/session",
            headers: [
                ("Host", host), ("Authorization", "Bearer " + bootstrap.text),
                ("Content-Type", RelayAPI.octetStream), ("Origin", origin),
            ],
            body: Frame.hello(version: 1).encoded)
    }

    /// `DELETE {prefix}/session`: no body and no Content-Type, or the relay answers 404.
    public func deleteSession(session: RelayToken) -> CarrierRequest {
        CarrierRequest(
            method: "DELETE", path: prefix + "/session",
            headers: [("Host", host), ("Authorization", "Bearer " + session.text), ("Origin", origin)])
    }

    /// `POST {prefix}/up` carrying `body` as sequence number `sequence`; `lane` is the
    /// `X-Lane-ID` of an https-lanes session and nil for https.
    public func up(session: RelayToken, sequence: UInt64, lane: StreamID?, body: [UInt8]) -> CarrierRequest {
        var headers: [(name: String, value: String)] = [
            ("Host", host), ("Authorization", "Bearer " + session.text),
            ("Content-Type", RelayAPI.octetStream), ("X-Up-Seq", String(sequence)),
        ]
        if let lane { headers.append(("X-Lane-ID", String(lane.rawValue))) }
        headers.append(("Origin", origin))
        return CarrierRequest(method: "POST", path: prefix + "/up", headers: headers, body: body)
    }

    /// `POST {prefix}/down` polling from `cursor` (which acknowledges every earlier batch);
    /// no Content-Type and an empty body.
    public func down(session: RelayToken, cursor: UInt64, lane: StreamID?) -> CarrierRequest {
        var headers: [(name: String, value: String)] = [
            ("Host", host), ("Authorization", "Bearer " + session.text), ("X-Down-Cursor", String(cursor)),
        ]
        if let lane { headers.append(("X-Lane-ID", String(lane.rawValue))) }
        headers.append(("Origin", origin))
        return CarrierRequest(method: "POST", path: prefix + "/down", headers: headers)
    }
}
