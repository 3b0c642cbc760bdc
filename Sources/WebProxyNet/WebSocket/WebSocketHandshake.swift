internal import CWebProxyOpenSSL

/// The RFC 6455 opening handshake on both sides: key and accept values, the client's
/// request and its check of the 101, and the server's check of a request and its 101.
public enum WebSocketHandshake {
    private static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Key`: base64 of 16 random bytes supplied by the caller.
    public static func key(randomBytes: [UInt8]) -> String {
        precondition(randomBytes.count == 16, "a WebSocket key takes exactly 16 random bytes")
        return Base64.encode(randomBytes)
    }

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)).
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + acceptGUID).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        input.withUnsafeBufferPointer { source in
            digest.withUnsafeMutableBufferPointer { out in
                _ = SHA1(source.baseAddress, source.count, out.baseAddress)
            }
        }
        return Base64.encode(digest)
    }

    /// The client's upgrade request: `Host`, then `fields` in order with `Sec-WebSocket-Key`
    /// inserted before `Sec-WebSocket-Protocol` (where browsers put it), or last.
    /// `fields` carry the other WebSocket fields (`upgradeFields` has the plain ones).
    public static func upgradeRequest(target: String, host: String, key: String, fields: HTTPHeaders) -> HTTPRequestHead {
        var headers: HTTPHeaders = [("Host", host)]
        var keyWritten = false
        for field in fields {
            if !keyWritten, HTTPHeaders.namesMatch(field.name, "Sec-WebSocket-Protocol") {
                headers.append(name: "Sec-WebSocket-Key", value: key)
                keyWritten = true
            }
            headers.append(name: field.name, value: field.value)
        }
        if !keyWritten { headers.append(name: "Sec-WebSocket-Key", value: key) }
        return HTTPRequestHead(method: "GET", target: target, headers: headers)
    }

    /// The fields of a plain upgrade offering exactly one subprotocol and no extensions,
    /// and `Origin` if given.
    public static func upgradeFields(subprotocol: String, origin: String? = nil) -> HTTPHeaders {
        var fields: HTTPHeaders = [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Protocol", subprotocol),
        ]
        if let origin { fields.append(name: "Origin", value: origin) }
        return fields
    }

    /// Client side: accepts only a 101 that upgrades to websocket, proves it saw `key`,
    /// echoes exactly `subprotocol` and accepts no extensions.
    public static func validateUpgradeResponse(
        _ response: HTTPResponseHead, key: String, subprotocol: String
    ) throws(WebSocketHandshakeError) {
        let headers = response.headers
        guard response.status == 101 else { throw .unexpectedStatus }
        guard headers.contains("Upgrade", token: "websocket") else { throw .missingUpgrade }
        guard headers.contains("Connection", token: "upgrade") else { throw .missingConnectionUpgrade }
        guard headers.values("Sec-WebSocket-Accept") == [acceptValue(forKey: key)] else {
            throw .acceptMismatch
        }
        guard headers.values("Sec-WebSocket-Protocol") == [subprotocol] else {
            throw .subprotocolMismatch
        }
        guard !headers.contains("Sec-WebSocket-Extensions") else { throw .unexpectedExtensions }
    }

    /// Server side: checks an upgrade request and returns its key and offered subprotocols.
    /// Deciding on Host, Origin, cookies or the subprotocol is the caller's business.
    public static func validateUpgradeRequest(_ request: HTTPRequestHead) throws(WebSocketHandshakeError)
        -> WebSocketUpgradeRequest
    {
        let headers = request.headers
        guard request.method == "GET" else { throw .methodNotGET }
        guard request.version == .http1_1 else { throw .httpVersionTooOld }
        guard headers.contains("Upgrade", token: "websocket") else { throw .missingUpgrade }
        guard headers.contains("Connection", token: "upgrade") else { throw .missingConnectionUpgrade }
        guard headers.values("Sec-WebSocket-Version") == ["13"] else { throw .unsupportedWebSocketVersion }
        let keys = headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, Base64.decode(keys[0])?.count == 16 else { throw .invalidKey }
        guard !headers.contains("Transfer-Encoding"),
            headers.values("Content-Length").allSatisfy({ $0 == "0" })
        else { throw .requestHasBody }
        var subprotocols: [String] = []
        for value in headers.values("Sec-WebSocket-Protocol") {
            for element in HTTPSyntax.listElements(value) {
                guard HTTPSyntax.isToken(element.utf8) else { throw .invalidSubprotocol }
                subprotocols.append(String(element))
            }
        }
        return WebSocketUpgradeRequest(key: keys[0], subprotocols: subprotocols)
    }

    /// The server's 101, headers in the reference relay's order; `subprotocol` (one of
    /// those offered) is echoed when given.
    public static func upgradeResponse(key: String, subprotocol: String?) -> HTTPResponseHead {
        var headers: HTTPHeaders = [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", acceptValue(forKey: key)),
        ]
        if let subprotocol { headers.append(name: "Sec-WebSocket-Protocol", value: subprotocol) }
        return HTTPResponseHead(status: 101, reason: "Switching Protocols", headers: headers)
    }
}
