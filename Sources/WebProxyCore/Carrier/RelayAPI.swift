/// Builds the relay's API requests (PROTOCOL.md §3.3 to §3.5 and §5) for one host and
/// API path prefix.
///
/// Every request carries `Host: H` with no port (the reference front answers `H:port`
/// with 404) and the headers of the bridge page's `fetch()` calls in Chromium
/// (`BrowserHeaders`), `Origin: https://H` among them; none carries a query, a cookie or a
/// header that names this client.
public struct RelayAPI: Hashable, Sendable {
    /// Canonical relay hostname H, without a port.
    public let host: String
    /// `/api/v1`, or `/P/api/v1` for a relay mounted under base path P.
    public let prefix: String
    /// The browser whose requests these look like.
    public let browser: BrowserHeaders

    public init(host: String, prefix: String, browser: BrowserHeaders = .chromium) {
        self.host = host
        self.prefix = prefix
        self.browser = browser
    }

    /// `https://H`, the origin the bridge page runs in.
    public var origin: String { "https://" + host }

    /// The exact binary content type the relay demands (no parameters).
    static let octetStream = "application/octet-stream"

    /// `POST {prefix}/session` with the bootstrap bearer and a HELLO body.
    public func createSession(bootstrap: RelayToken) -> CarrierRequest {
        let body = Frame.hello(version: 1).encoded
        return CarrierRequest(
            method: "POST", path: prefix + "/session",
            headers: fetch([("Authorization", "Bearer " + bootstrap.text)], contentType: RelayAPI.octetStream,
                           bodyLength: body.count),
            body: body)
    }

    /// `DELETE {prefix}/session`: no body and no Content-Type, or the relay answers 404.
    public func deleteSession(session: RelayToken) -> CarrierRequest {
        CarrierRequest(
            method: "DELETE", path: prefix + "/session",
            headers: fetch([("Authorization", "Bearer " + session.text)], bodyLength: nil))
    }

    /// `POST {prefix}/up` carrying `body` as sequence number `sequence`; `lane` is the
    /// `X-Lane-ID` of an https-lanes session and nil for https.
    public func up(session: RelayToken, sequence: UInt64, lane: StreamID?, body: [UInt8]) -> CarrierRequest {
        var fields: [(name: String, value: String)] = [
            ("Authorization", "Bearer " + session.text), ("X-Up-Seq", String(sequence)),
        ]
        if let lane { fields.append(("X-Lane-ID", String(lane.rawValue))) }
        return CarrierRequest(
            method: "POST", path: prefix + "/up",
            headers: fetch(fields, contentType: RelayAPI.octetStream, bodyLength: body.count), body: body)
    }

    /// `POST {prefix}/down` polling from `cursor` (which acknowledges every earlier batch);
    /// no Content-Type and an empty body.
    public func down(session: RelayToken, cursor: UInt64, lane: StreamID?) -> CarrierRequest {
        var fields: [(name: String, value: String)] = [
            ("Authorization", "Bearer " + session.text), ("X-Down-Cursor", String(cursor)),
        ]
        if let lane { fields.append(("X-Lane-ID", String(lane.rawValue))) }
        return CarrierRequest(method: "POST", path: prefix + "/down", headers: fetch(fields, bodyLength: 0))
    }

    /// The bridge page request of this relay (`BridgePage.request`).
    public func bridgePage(basePath: String, capability: String) -> CarrierRequest {
        BridgePage.request(host: host, basePath: basePath, capability: capability, browser: browser)
    }

    private func fetch(
        _ fields: [(name: String, value: String)], contentType: String? = nil, bodyLength: Int?
    ) -> [(name: String, value: String)] {
        browser.fetch(host: host, origin: origin, fields: fields, contentType: contentType, bodyLength: bodyLength)
    }
}
