import WebProxyCore
import WebProxyNet

/// Conversions between the session machines' pure request/response values and the
/// WebProxyNet clients: `CarrierRequest` → `HTTPClientRequest` or a WebSocket upgrade,
/// `HTTPClientResponse` → `CarrierResponse`.
enum RelayTransport {
    /// Largest relay answer body accepted: a 2 MiB batch, or a 256 KiB bridge page, with room.
    static let maxResponseBodyBytes = 4 << 20

    /// The HTTP request for `request`, due within `timeout`. A POST always has a body
    /// (`Content-Length: 0` when empty); GET and DELETE send none.
    static func httpRequest(_ request: CarrierRequest, timeout: Duration) -> HTTPClientRequest {
        let body: [UInt8]? = request.method == "POST" || !request.body.isEmpty ? request.body : nil
        return HTTPClientRequest(
            method: request.method, target: request.path,
            headers: HTTPHeaders(request.headers.map { HTTPField(name: $0.name, value: $0.value) }),
            body: body, maxResponseBodyBytes: maxResponseBodyBytes, timeout: timeout)
    }

    /// The response as the session machines read it.
    static func carrierResponse(_ response: HTTPClientResponse) -> CarrierResponse {
        carrierResponse(response.head, body: response.body)
    }

    static func carrierResponse(_ head: HTTPResponseHead, body: [UInt8] = []) -> CarrierResponse {
        CarrierResponse(status: head.status, headers: head.headers.map { (name: $0.name, value: $0.value) }, body: body)
    }

    /// The WebSocket client settings for an upgrade request of the websocket carriers; nil
    /// when it offers no subprotocol (the machines always set one). The client writes
    /// `Host` (first) and the key itself.
    static func webSocketConfiguration(_ request: CarrierRequest, timeout: Duration) -> WebSocketClient.Configuration? {
        guard let subprotocol = request.header("Sec-WebSocket-Protocol") else { return nil }
        let fields = request.headers.filter { $0.name.lowercased() != "host" }
        return WebSocketClient.Configuration(
            target: request.path, subprotocol: subprotocol,
            fields: HTTPHeaders(fields.map { HTTPField(name: $0.name, value: $0.value) }),
            maxMessageBytes: FrameLimits.defaultBatchBytes + 1024, upgradeTimeout: timeout)
    }

    /// The 101 the session machines judge. The WebSocket client has already checked that the
    /// relay echoed exactly the offered subprotocol (and the accept key); it does not hand
    /// the head on, so the checked facts are restated here.
    static func switchedProtocols(subprotocol: String) -> CarrierResponse {
        CarrierResponse(status: 101, headers: [("Sec-WebSocket-Protocol", subprotocol)])
    }

    /// The relay's non-101 answer to an upgrade, nil when none arrived.
    static func upgradeAnswer(_ error: WebSocketClientError) -> CarrierResponse? {
        guard case .upgradeRejected(let head) = error else { return nil }
        return carrierResponse(head)
    }

    /// The TLS client settings of a relay: its CA file (else the system store) and pins.
    static func tlsConfiguration(for relay: RelayConfiguration) -> TLSConfiguration.Client {
        TLSConfiguration.Client(
            trust: relay.caFile.map { .caFile(path: $0) } ?? .system, spkiPins: relay.pins.map(\.description))
    }

    /// Where TCP goes: the relay host on 443, or the `connect-to` override.
    static func endpoint(for relay: RelayConfiguration) -> SecureEndpoint? {
        guard let origin = DialTarget(host: relay.host.name, port: 443) else { return nil }
        guard let connectTo = relay.connectTo else { return SecureEndpoint(origin: origin) }
        guard let target = DialTarget(host: connectTo.host, port: connectTo.port) else { return nil }
        return SecureEndpoint(origin: origin, connectTo: target)
    }

    /// The TCP dialer of a relay: direct, or through its configured proxy; nil when the
    /// proxy cannot be dialled (the relay must then not start: a proxy is never bypassed).
    static func dialer(for relay: RelayConfiguration) -> Dialer? {
        guard let proxy = relay.proxy else { return Dialer() }
        guard let target = DialTarget(host: proxy.address.host, port: proxy.address.port) else { return nil }
        let credentials = proxy.credentials.map { ProxyCredentials(username: $0.user, password: $0.password) }
        switch proxy.kind {
        case .socks5: return Dialer(proxy: .socks5(target, credentials: credentials))
        case .http: return Dialer(proxy: .httpConnect(target, credentials: credentials))
        }
    }
}
