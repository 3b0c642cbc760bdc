import Testing

@testable import WebProxyCore

/// Every request shape against the transcripts, and the browser's fields around them
/// against what Chromium 156 sent from a page to its own origin over HTTP/1.1 (captured;
/// Docs/SECURITY.md). The recorder sent none of the browser's fields.
@Suite struct RelayAPITests {
    typealias F = CarrierFixtures

    @Test func createSessionMatchesTranscript02() {
        let request = F.api.createSession(bootstrap: F.createBootstrap)
        #expect(request.method == "POST")
        #expect(request.path == "/api/v1/session")
        // Chromium's order for fetch(url, {method: "POST", headers: {Authorization,
        // Content-Type}, body}), less Accept-Encoding.
        #expect(
            F.pairs(request.headers) == [
                ["Host", "proxy.example.com"], ["Connection", "keep-alive"], ["Content-Length", "9"],
                ["sec-ch-ua-platform", "\"Linux\""],
                ["Authorization", "Bearer vtC-woU4ery1TUQ3jKjRJs9BZW59b3AbD5WcMZQ1EYw"],
                ["User-Agent", F.userAgent], ["sec-ch-ua", F.brands], ["Content-Type", "application/octet-stream"],
                ["sec-ch-ua-mobile", "?0"], ["Accept", "*/*"], ["Origin", "https://proxy.example.com"],
                ["Sec-Fetch-Site", "same-origin"], ["Sec-Fetch-Mode", "cors"], ["Sec-Fetch-Dest", "empty"],
                ["Accept-Language", "en-US,en;q=0.9"],
            ])
        #expect(request.body == F.bytes(hex: "100000000000000101"))
    }

    @Test func aConfiguredUserAgentReplacesChromiumsAndItsClientHints() {
        let chrome = RelayAPI(
            host: F.host, prefix: "/api/v1",
            browser: BrowserHeaders(userAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/141.0.0.0 Safari/537.36"))
        let hinted = chrome.down(session: F.httpsSession, cursor: 0, lane: nil)
        #expect(hinted.header("User-Agent") == "Mozilla/5.0 (X11; Linux x86_64) Chrome/141.0.0.0 Safari/537.36")
        // Chrome 141 sends the GREASE brand "Not?A_Brand";v="8" (its sec-ch-ua, as published).
        let brands = hinted.header("sec-ch-ua") ?? ""
        #expect(brands.contains("\"Chromium\";v=\"141\"") && brands.contains("\"Not?A_Brand\";v=\"8\""), "\(brands)")
        let firefox = RelayAPI(
            host: F.host, prefix: "/api/v1",
            browser: BrowserHeaders(userAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"))
        let plain = firefox.down(session: F.httpsSession, cursor: 0, lane: nil)
        #expect(plain.header("User-Agent")?.hasSuffix("Firefox/140.0") == true)
        #expect(!plain.headers.contains { $0.name.hasPrefix("sec-ch-ua") })
        #expect(F.asRecorded(plain) == F.asRecorded(hinted))
    }

    @Test func apiPrefixUnderABasePath() {
        let api = RelayAPI(host: F.host, prefix: "/P/api/v1")
        #expect(api.createSession(bootstrap: F.createBootstrap).path == "/P/api/v1/session")
        #expect(api.deleteSession(session: F.httpsSession).path == "/P/api/v1/session")
        #expect(api.up(session: F.httpsSession, sequence: 1, lane: nil, body: [1]).path == "/P/api/v1/up")
        #expect(api.down(session: F.httpsSession, cursor: 0, lane: nil).path == "/P/api/v1/down")
        let upgrade = WebSocketUpgrade(channel: CarrierChannel(api: api, session: F.httpsSession, lane: nil))
        #expect(upgrade.request.path == "/P/api/v1/ws")
    }

    @Test func deleteSessionMatchesTranscript04() {
        let session = F.token("Efm8CVhv8g9nZxzqx_0ZDIVSzkT28Bjb2yo--AW785E")
        let request = F.api.deleteSession(session: session)
        #expect(request.method == "DELETE")
        #expect(request.path == "/api/v1/session")
        #expect(
            F.asRecorded(request) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer Efm8CVhv8g9nZxzqx_0ZDIVSzkT28Bjb2yo--AW785E"],
            ])
        #expect(request.header("Content-Type") == nil)
        #expect(request.body.isEmpty)
    }

    @Test func upMatchesTranscript03() {
        let body = F.bytes(hex: "0100000100000000020000010000001030313233343536373839616263646566")
        let request = F.api.up(session: F.httpsSession, sequence: 1, lane: nil, body: body)
        #expect(request.method == "POST")
        #expect(request.path == "/api/v1/up")
        #expect(
            F.asRecorded(request) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"],
                ["X-Up-Seq", "1"], ["Content-Type", "application/octet-stream"],
            ])
        #expect(request.header("Content-Length") == "32")
        #expect(request.body == body)
    }

    @Test func laneUpMatchesTranscript06() throws {
        let lane = try #require(StreamID(rawValue: 1))
        let body = F.bytes(hex: "010000010000000002000001000000106c616e65206f6e65207061796c6f6164")
        let request = F.api.up(session: F.lanesSession, sequence: 1, lane: lane, body: body)
        #expect(
            F.asRecorded(request) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer Jg-FHFmaq4OeWJTK0lsLUs004xOsNwGtAGdLbjQUX-I"],
                ["X-Up-Seq", "1"], ["X-Lane-ID", "1"], ["Content-Type", "application/octet-stream"],
            ])
        #expect(request.body == body)
    }

    @Test func downMatchesTranscript03() {
        let request = F.api.down(session: F.httpsSession, cursor: 0, lane: nil)
        #expect(request.method == "POST")
        #expect(request.path == "/api/v1/down")
        // As Chromium sent fetch(url, {method: "POST", headers: {Authorization, X-Down-Cursor}}).
        #expect(
            F.pairs(request.headers) == [
                ["Host", "proxy.example.com"], ["Connection", "keep-alive"], ["Content-Length", "0"],
                ["sec-ch-ua-platform", "\"Linux\""],
                ["Authorization", "Bearer VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"], ["X-Down-Cursor", "0"],
                ["User-Agent", F.userAgent], ["sec-ch-ua", F.brands], ["sec-ch-ua-mobile", "?0"], ["Accept", "*/*"],
                ["Origin", "https://proxy.example.com"], ["Sec-Fetch-Site", "same-origin"], ["Sec-Fetch-Mode", "cors"],
                ["Sec-Fetch-Dest", "empty"], ["Accept-Language", "en-US,en;q=0.9"],
            ])
        #expect(request.header("Content-Type") == nil)
        #expect(request.body.isEmpty)
    }

    @Test func laneDownMatchesTranscript06() {
        let request = F.api.down(session: F.lanesSession, cursor: 0, lane: .session)
        #expect(
            F.asRecorded(request) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer Jg-FHFmaq4OeWJTK0lsLUs004xOsNwGtAGdLbjQUX-I"],
                ["X-Down-Cursor", "0"], ["X-Lane-ID", "0"],
            ])
        #expect(F.api.down(session: F.lanesSession, cursor: 1, lane: .max).header("x-lane-id") == "16777215")
    }

    @Test func webSocketUpgradeMatchesTranscript07WithoutTheKey() {
        let session = F.token("StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY")
        let upgrade = WebSocketUpgrade(channel: CarrierChannel(api: F.api, session: session, lane: nil))
        #expect(upgrade.request.method == "GET")
        #expect(upgrade.request.path == "/api/v1/ws")
        // As Chromium sent new WebSocket(url, [subprotocol]), less the key (the WebSocket
        // client inserts it before Sec-WebSocket-Protocol) and permessage-deflate.
        #expect(
            F.pairs(upgrade.request.headers) == [
                ["Host", "proxy.example.com"], ["Connection", "Upgrade"], ["Pragma", "no-cache"],
                ["Cache-Control", "no-cache"], ["User-Agent", F.userAgent], ["Upgrade", "websocket"],
                ["Origin", "https://proxy.example.com"], ["Sec-WebSocket-Version", "13"],
                ["Accept-Encoding", "gzip, deflate, br, zstd"], ["Accept-Language", "en-US,en;q=0.9"],
                ["Sec-WebSocket-Protocol", "tproxy-v1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY"],
            ])
        #expect(upgrade.request.header("Authorization") == nil)
        #expect(upgrade.request.body.isEmpty)
    }

    @Test func laneUpgradeMatchesTranscript08() throws {
        let session = F.token("z9d0D1zK1b7DtryzXpKm2m7HoSNQ0foDFUHTRTDL7wY")
        let lane = try #require(StreamID(rawValue: 2))
        let upgrade = WebSocketUpgrade(channel: CarrierChannel(api: F.api, session: session, lane: lane))
        #expect(
            upgrade.request.header("Sec-WebSocket-Protocol")
                == "tproxy-lane-v1.z9d0D1zK1b7DtryzXpKm2m7HoSNQ0foDFUHTRTDL7wY.2")
        #expect(upgrade.request.headers.count == 11)
    }

    @Test func noAPIRequestCarriesAQueryCookieOrClientName() throws {
        let lane = try #require(StreamID(rawValue: 7))
        let requests = [
            F.api.createSession(bootstrap: F.createBootstrap), F.api.deleteSession(session: F.httpsSession),
            F.api.up(session: F.httpsSession, sequence: 12, lane: lane, body: [1]),
            F.api.down(session: F.httpsSession, cursor: 3, lane: lane),
            WebSocketUpgrade(channel: CarrierChannel(api: F.api, session: F.httpsSession, lane: lane)).request,
        ]
        for request in requests {
            #expect(!request.path.contains("?"))
            #expect(request.header("Cookie") == nil)
            #expect(request.headers.first?.name == "Host")
            #expect(request.headers.filter { $0.name == "Authorization" }.count <= 1)
            #expect(!request.headers.contains { ($0.name + $0.value).lowercased().contains("webproxyd") })
        }
    }

    @Test func descriptionsHideTokensAndBodies() {
        let request = F.api.up(session: F.httpsSession, sequence: 1, lane: nil, body: Array("secret payload".utf8))
        var dumped = ""
        dump(request, to: &dumped)
        for shown in [request.description, String(reflecting: request), dumped] {
            #expect(!shown.contains("VKYb2JK"))
            #expect(!shown.contains("secret payload"))
        }
        #expect(request.description == "POST /api/v1/up (16 headers, 14 body bytes)")
        let response = CarrierResponse(status: 200, headers: [("X-Session-Token", F.createdSession)], body: [1, 2])
        #expect(!String(reflecting: response).contains("gOx9"))
        #expect(response.description == "HTTP 200 (1 headers, 2 body bytes)")
    }

    @Test func responseHeaderLookupIgnoresCase() throws {
        let response = CarrierResponse(
            status: 204, headers: [("x-up-ack", "1"), ("X-UP-ACK", "2"), ("Cache-Control", "no-store")])
        #expect(response.header("X-Up-Ack") == "1")
        #expect(response.values(forHeader: "x-Up-aCK") == ["1", "2"])
        #expect(throws: CarrierError.malformedResponse) { try response.singleHeader("X-Up-Ack") }
        #expect(try response.singleHeader("cache-control") == "no-store")
        #expect(try response.singleHeader("X-Down-Cursor") == nil)
    }
}
