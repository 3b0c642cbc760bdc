import Testing
@testable import WebProxyNet

@Suite struct WebSocketHandshakeTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let subprotocol = "tproxy-v1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY"

    /// 07-websocket.json step 3: the recorded upgrade request.
    static let recordedRequest = HTTPRequestHead(
        method: "GET", target: "/api/v1/ws",
        headers: [
            ("Host", "proxy.example.com"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Protocol", subprotocol), ("Origin", "https://proxy.example.com"),
        ])

    /// 07-websocket.json step 3: the relay's 101.
    static let recordedResponse = HTTPResponseHead(
        status: 101, reason: "Switching Protocols",
        headers: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), ("Sec-WebSocket-Protocol", subprotocol),
        ])

    @Test func rfcKeyAndAcceptExample() {
        // RFC 6455 section 1.3 / 4.1: the nonce "the sample nonce".
        #expect(WebSocketHandshake.key(randomBytes: Array("the sample nonce".utf8)) == Self.key)
        #expect(WebSocketHandshake.acceptValue(forKey: Self.key) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(WebSocketHandshake.key(randomBytes: [UInt8](repeating: 0xFF, count: 16)) == "/////////////////////w==")
    }

    @Test func clientRequestMatchesTheRecording() throws {
        let request = WebSocketHandshake.upgradeRequest(
            target: "/api/v1/ws", host: "proxy.example.com", key: Self.key,
            fields: WebSocketHandshake.upgradeFields(subprotocol: Self.subprotocol, origin: "https://proxy.example.com"))
        #expect(request == Self.recordedRequest)
        #expect(try request.encoded().suffix(4) == Array("\r\n\r\n".utf8))
    }

    @Test func serverResponseMatchesTheRecording() {
        #expect(WebSocketHandshake.upgradeResponse(key: Self.key, subprotocol: Self.subprotocol) == Self.recordedResponse)
    }

    @Test func recordedResponseIsAccepted() throws {
        try WebSocketHandshake.validateUpgradeResponse(Self.recordedResponse, key: Self.key, subprotocol: Self.subprotocol)
        var lowercase = Self.recordedResponse
        lowercase.headers = [
            ("upgrade", "WebSocket"), ("connection", "keep-alive, upgrade"),
            ("sec-websocket-accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), ("sec-websocket-protocol", Self.subprotocol),
        ]
        try WebSocketHandshake.validateUpgradeResponse(lowercase, key: Self.key, subprotocol: Self.subprotocol)
    }

    static func response(_ edit: (inout HTTPResponseHead) -> Void) -> HTTPResponseHead {
        var head = recordedResponse
        edit(&head)
        return head
    }

    static func replacing(_ name: String, with value: String?) -> (inout HTTPResponseHead) -> Void {
        { head in
            var headers = HTTPHeaders(head.headers.filter { !HTTPHeaders.namesMatch($0.name, name) })
            if let value { headers.append(name: name, value: value) }
            head.headers = headers
        }
    }

    static let badResponses: [(HTTPResponseHead, WebSocketHandshakeError)] = [
        (response { $0.status = 200 }, .unexpectedStatus),
        (response(replacing("Upgrade", with: nil)), .missingUpgrade),
        (response(replacing("Upgrade", with: "h2c")), .missingUpgrade),
        (response(replacing("Connection", with: "keep-alive")), .missingConnectionUpgrade),
        (response(replacing("Sec-WebSocket-Accept", with: nil)), .acceptMismatch),
        (response(replacing("Sec-WebSocket-Accept", with: "dGhlIHNhbXBsZSBub25jZQ==")), .acceptMismatch),
        (response { $0.headers.append(name: "Sec-WebSocket-Accept", value: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") }, .acceptMismatch),
        (response(replacing("Sec-WebSocket-Protocol", with: nil)), .subprotocolMismatch),
        (response(replacing("Sec-WebSocket-Protocol", with: subprotocol.uppercased())), .subprotocolMismatch),
        (response(replacing("Sec-WebSocket-Protocol", with: subprotocol + ", other")), .subprotocolMismatch),
        (response { $0.headers.append(name: "Sec-WebSocket-Protocol", value: subprotocol) }, .subprotocolMismatch),
        (response { $0.headers.append(name: "Sec-WebSocket-Extensions", value: "permessage-deflate") }, .unexpectedExtensions),
    ]

    @Test(arguments: badResponses.indices)
    func badResponseIsRefused(index: Int) {
        let (head, error) = Self.badResponses[index]
        #expect(throws: error) {
            try WebSocketHandshake.validateUpgradeResponse(head, key: Self.key, subprotocol: Self.subprotocol)
        }
    }

    @Test func serverReadsKeyAndOfferedSubprotocols() throws {
        let upgrade = try WebSocketHandshake.validateUpgradeRequest(Self.recordedRequest)
        #expect(upgrade == WebSocketUpgradeRequest(key: Self.key, subprotocols: [Self.subprotocol]))
        var several = Self.recordedRequest
        several.headers = [
            ("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"), ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", Self.key), ("Sec-WebSocket-Protocol", "a, b.c"), ("Sec-WebSocket-Protocol", "d"),
            ("Content-Length", "0"),
        ]
        #expect(try WebSocketHandshake.validateUpgradeRequest(several).subprotocols == ["a", "b.c", "d"])
        several.headers = HTTPHeaders(several.headers.filter { $0.name != "Sec-WebSocket-Protocol" })
        #expect(try WebSocketHandshake.validateUpgradeRequest(several).subprotocols == [])
    }

    static func request(_ edit: (inout HTTPRequestHead) -> Void) -> HTTPRequestHead {
        var head = recordedRequest
        edit(&head)
        return head
    }

    static func replacingInRequest(_ name: String, with value: String?) -> (inout HTTPRequestHead) -> Void {
        { head in
            var headers = HTTPHeaders(head.headers.filter { !HTTPHeaders.namesMatch($0.name, name) })
            if let value { headers.append(name: name, value: value) }
            head.headers = headers
        }
    }

    static let badRequests: [(HTTPRequestHead, WebSocketHandshakeError)] = [
        (request { $0.method = "POST" }, .methodNotGET),
        (request { $0.version = .http1_0 }, .httpVersionTooOld),
        (request(replacingInRequest("Upgrade", with: nil)), .missingUpgrade),
        (request(replacingInRequest("Connection", with: "close")), .missingConnectionUpgrade),
        (request(replacingInRequest("Sec-WebSocket-Version", with: "8")), .unsupportedWebSocketVersion),
        (request(replacingInRequest("Sec-WebSocket-Version", with: nil)), .unsupportedWebSocketVersion),
        (request(replacingInRequest("Sec-WebSocket-Key", with: nil)), .invalidKey),
        (request(replacingInRequest("Sec-WebSocket-Key", with: "c2hvcnQ=")), .invalidKey),
        (request(replacingInRequest("Sec-WebSocket-Key", with: "dGhlIHNhbXBsZSBub25jZR==")), .invalidKey),
        (request(replacingInRequest("Sec-WebSocket-Key", with: "dGhlIHNhbXBsZSBub25jZQ")), .invalidKey),
        (request(replacingInRequest("Sec-WebSocket-Key", with: "dGhlIHNhbXBsZSBub25jZ!==")), .invalidKey),
        (request { $0.headers.append(name: "Sec-WebSocket-Key", value: key) }, .invalidKey),
        (request { $0.headers.append(name: "Content-Length", value: "5") }, .requestHasBody),
        (request { $0.headers.append(name: "Transfer-Encoding", value: "chunked") }, .requestHasBody),
        (request(replacingInRequest("Sec-WebSocket-Protocol", with: "a b")), .invalidSubprotocol),
        (request(replacingInRequest("Sec-WebSocket-Protocol", with: "a;b")), .invalidSubprotocol),
    ]

    @Test(arguments: badRequests.indices)
    func badRequestIsRefused(index: Int) {
        let (head, error) = Self.badRequests[index]
        #expect(throws: error) { try WebSocketHandshake.validateUpgradeRequest(head) }
    }

    @Test func errorDescriptionsDoNotLeakTheSubprotocol() {
        for (_, error) in Self.badResponses { #expect(!error.description.contains("tproxy")) }
    }
}
