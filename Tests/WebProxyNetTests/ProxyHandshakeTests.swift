import Testing
@testable import WebProxyNet

/// Feeds `input` to `machine` in `chunks`; returns what it sent after `start()` and how it ended,
/// with any input after the end appended to the leftover (the glue would deliver it as stream).
func drive<H: ProxyHandshake>(_ machine: inout H, _ chunks: [ArraySlice<UInt8>]) -> (sent: [UInt8], end: ProxyHandshakeStep) {
    var sent: [UInt8] = []
    var index = 0
    while index < chunks.count {
        let step = machine.receive(chunks[index])
        index += 1
        switch step {
        case .send(let bytes):
            sent += bytes
        case .needMore:
            continue
        case .established(let leftover):
            return (sent, .established(leftover: leftover + chunks[index...].flatMap { $0 }))
        case .failed:
            return (sent, step)
        }
    }
    return (sent, .needMore)
}

/// Every way to cut `bytes` in two, plus one byte at a time.
func splits(_ bytes: [UInt8]) -> [[ArraySlice<UInt8>]] {
    (0...bytes.count).map { [bytes[..<$0], bytes[$0...]] } + [bytes.indices.map { bytes[$0...$0] }]
}

/// A conversation's proxy messages, each cut at every point in turn (a proxy answers one
/// request at a time, so no chunk spans two messages).
func conversationSplits(_ messages: [[UInt8]]) -> [[ArraySlice<UInt8>]] {
    messages.indices.flatMap { cut in
        splits(messages[cut]).map { pieces in
            messages.indices.flatMap { $0 == cut ? pieces : [messages[$0][...]] }
        }
    }
}

@Suite struct Socks5HandshakeTests {
    let target = DialTarget(host: "relay.example.com", port: 443)!
    let name = Array("relay.example.com".utf8)

    @Test func noAuthenticationSendsTheNameAsADomainAtEverySplit() throws {
        let reply: [[UInt8]] = [[5, 0], [5, 0, 0, 1, 10, 0, 0, 1, 0x1F, 0x90] + Array("TLS".utf8)]
        for chunks in conversationSplits(reply) {
            var machine = try Socks5Handshake(target: target)
            #expect(machine.start() == [5, 1, 0])
            let (sent, end) = drive(&machine, chunks)
            #expect(sent == [5, 1, 0, 3, UInt8(name.count)] + name + [1, 187])
            #expect(end == .established(leftover: Array("TLS".utf8)))
        }
    }

    @Test func usernameAndPasswordAtEverySplit() throws {
        let credentials = ProxyCredentials(username: "alice", password: "s3cret")
        let reply: [[UInt8]] = [[5, 2], [1, 0], [5, 0, 0, 4] + Array(repeating: 0, count: 15) + [1, 0, 80]]
        for chunks in conversationSplits(reply) {
            var machine = try Socks5Handshake(target: target, credentials: credentials)
            #expect(machine.start() == [5, 2, 0, 2])
            let (sent, end) = drive(&machine, chunks)
            let auth: [UInt8] = [1, 5] + Array("alice".utf8) + [6] + Array("s3cret".utf8)
            #expect(sent == auth + [5, 1, 0, 3, UInt8(name.count)] + name + [1, 187])
            #expect(end == .established(leftover: []))
        }
    }

    @Test func domainReplyIsParsed() throws {
        var machine = try Socks5Handshake(target: target)
        _ = machine.start()
        _ = machine.receive([5, 0])
        #expect(machine.receive([5, 0, 0, 3, 4] + Array("abcd".utf8) + [0, 80, 9]) == .established(leftover: [9]))
    }

    @Test func ipLiteralTargetsUseTheirAddressTypes() throws {
        var v4 = try Socks5Handshake(target: DialTarget(host: "127.0.0.1", port: 8080)!)
        _ = v4.start()
        #expect(v4.receive([5, 0]) == .send([5, 1, 0, 1, 127, 0, 0, 1, 0x1F, 0x90]))
        var v6 = try Socks5Handshake(target: DialTarget(host: "::1", port: 1)!)
        _ = v6.start()
        #expect(v6.receive([5, 0]) == .send([5, 1, 0, 4] + Array(repeating: 0, count: 15) + [1, 0, 1]))
    }

    @Test(arguments: [
        (UInt8(1), "general SOCKS server failure"), (2, "connection not allowed by ruleset"),
        (3, "network unreachable"), (4, "host unreachable"), (5, "connection refused"), (6, "TTL expired"),
        (7, "command not supported"), (8, "address type not supported"), (9, "unassigned reply code"),
    ])
    func replyCodesBecomeClearErrors(code: UInt8, reason: String) throws {
        var machine = try Socks5Handshake(target: target)
        _ = machine.start()
        _ = machine.receive([5, 0])
        // The code alone is enough: a refusing server may close right after it.
        let step = machine.receive([5, code])
        #expect(step == .failed(NetError(.proxy, call: "socks5", message: "proxy could not connect: \(reason) (REP \(code))")))
    }

    @Test(arguments: [
        ([UInt8(5), 0xFF], "proxy accepts none of the offered authentication methods"),
        ([4], "proxy is not SOCKS5 (version 4)"),
        ([5, 2], "proxy chose authentication method 2, which was not offered"),
        ([5, 0, 5, 0, 0, 9], "reply has unknown address type 9"),
        ([5, 0, 6], "proxy is not SOCKS5 (version 6)"),
        ([5, 0, 0x48], "proxy is not SOCKS5 (version 72)"),
    ])
    func malformedOrRefusingRepliesFail(reply: [UInt8], message: String) throws {
        var machine = try Socks5Handshake(target: target)
        _ = machine.start()
        let (_, end) = drive(&machine, reply.indices.map { reply[$0...$0] })
        #expect(end == .failed(NetError(.proxy, call: "socks5", message: message)))
    }

    @Test func bytesBeforeOurRequestAreAProtocolError() throws {
        var machine = try Socks5Handshake(target: target)
        _ = machine.start()
        let step = machine.receive([5, 0, 5, 0])
        #expect(step == .failed(NetError(.proxy, call: "socks5", message: "proxy sent bytes before our request")))
    }

    @Test func rejectedCredentialsFail() throws {
        var machine = try Socks5Handshake(target: target, credentials: ProxyCredentials(username: "a", password: "b"))
        _ = machine.start()
        let (_, end) = drive(&machine, [[5, 2], [1, 1]])
        #expect(end == .failed(NetError(.proxy, call: "socks5", message: "proxy rejected the username or password")))
        var other = try Socks5Handshake(target: target, credentials: ProxyCredentials(username: "a", password: "b"))
        _ = other.start()
        let (_, malformed) = drive(&other, [[5, 2], [2]])
        #expect(malformed == .failed(NetError(.proxy, call: "socks5", message: "malformed authentication reply (version 2)")))
    }

    @Test func credentialsOutsideRFC1929LimitsAreRejected() {
        #expect(throws: NetError.self) {
            try Socks5Handshake(target: target, credentials: ProxyCredentials(username: "", password: "x"))
        }
        #expect(throws: NetError.self) {
            try Socks5Handshake(
                target: target, credentials: ProxyCredentials(username: "u", password: String(repeating: "p", count: 256)))
        }
        #expect(!"\(ProxyCredentials(username: "u", password: "hunter2"))".contains("hunter2"))
    }
}

@Suite struct HTTPConnectHandshakeTests {
    let target = DialTarget(host: "relay.example.com", port: 443)!

    @Test func requestHeadIsExact() throws {
        var plain = try HTTPConnectHandshake(target: target)
        #expect(
            String(decoding: plain.start(), as: UTF8.self)
                == "CONNECT relay.example.com:443 HTTP/1.1\r\nHost: relay.example.com:443\r\n\r\n")
        var authorized = try HTTPConnectHandshake(
            target: DialTarget(host: "::1", port: 8443)!,
            credentials: ProxyCredentials(username: "Aladdin", password: "open sesame"))
        #expect(
            String(decoding: authorized.start(), as: UTF8.self)
                == "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n"
                + "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
    }

    @Test(arguments: ["u": "dTo=", "us": "dXM6", "use": "dXNlOg==", "user": "dXNlcjpwYXNz"])
    func basicCredentialsAreBase64(username: String, expected: String) throws {
        let password = username == "user" ? "pass" : ""
        var machine = try HTTPConnectHandshake(target: target, credentials: ProxyCredentials(username: username, password: password))
        #expect(String(decoding: machine.start(), as: UTF8.self).contains("Proxy-Authorization: Basic \(expected)\r\n"))
    }

    @Test func anySuccessStatusEstablishesAtEverySplit() throws {
        let response = Array("HTTP/1.1 200 Connection established\r\nVia: 1.1 proxy\r\n\r\nTLS".utf8)
        for chunks in splits(response) {
            var machine = try HTTPConnectHandshake(target: target)
            _ = machine.start()
            let (sent, end) = drive(&machine, chunks)
            #expect(sent == [])
            #expect(end == .established(leftover: Array("TLS".utf8)))
        }
        var old = try HTTPConnectHandshake(target: target)
        _ = old.start()
        #expect(old.receive(Array("HTTP/1.0 204\r\n\r\n".utf8)) == .established(leftover: []))
    }

    @Test(arguments: [
        ("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", "proxy requires authentication (status 407)"),
        ("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", "proxy refused CONNECT with status 403"),
        ("HTTP/1.1 502 Bad Gateway\r\n\r\n", "proxy refused CONNECT with status 502"),
        ("HTTP/2 200\r\n\r\n", "malformed response status line"),
        ("ICY 200 OK\r\n\r\n", "malformed response status line"),
        ("HTTP/1.1 20x OK\r\n\r\n", "malformed response status line"),
        ("HTTP/1.1 2000 OK\r\n\r\n", "malformed response status line"),
    ])
    func refusalsAndMalformedHeadsFail(response: String, message: String) throws {
        var machine = try HTTPConnectHandshake(target: target)
        _ = machine.start()
        #expect(machine.receive(Array(response.utf8)) == .failed(NetError(.proxy, call: "http-connect", message: message)))
    }

    @Test func rejectedCredentialsSaySo() throws {
        var machine = try HTTPConnectHandshake(target: target, credentials: ProxyCredentials(username: "u", password: "p"))
        _ = machine.start()
        let step = machine.receive(Array("HTTP/1.1 407 No\r\n\r\n".utf8))
        #expect(step == .failed(NetError(.proxy, call: "http-connect", message: "proxy rejected the credentials (status 407)")))
    }

    @Test func responseHeadIsBounded() throws {
        var machine = try HTTPConnectHandshake(target: target)
        _ = machine.start()
        let line = Array("HTTP/1.1 200 OK\r\n".utf8)
        #expect(machine.receive(line) == .needMore)
        let filler = Array(repeating: UInt8(ascii: "a"), count: HTTPConnectHandshake.maxResponseHeadLength)
        let step = machine.receive(filler)
        let limit = HTTPConnectHandshake.maxResponseHeadLength
        #expect(step == .failed(NetError(.proxy, call: "http-connect", message: "response head longer than \(limit) bytes")))
    }

    @Test func badCredentialsAreRejectedUpFront() {
        #expect(throws: NetError.self) {
            try HTTPConnectHandshake(target: target, credentials: ProxyCredentials(username: "a:b", password: "c"))
        }
        #expect(throws: NetError.self) {
            try HTTPConnectHandshake(target: target, credentials: ProxyCredentials(username: "a", password: "c\r\nX: y"))
        }
    }
}
