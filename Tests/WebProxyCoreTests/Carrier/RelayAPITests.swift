import Testing

@testable import WebProxyCore

/// Every request shape against the transcripts. The recorder sent no `Origin` on API
/// calls and wrote `Content-Length` itself; this client adds `Origin: https://H` last and
/// leaves framing to the HTTP client.
@Suite struct RelayAPITests {
    typealias F = CarrierFixtures

    @Test func createSessionMatchesTranscript02() {
        let request = F.api.createSession(bootstrap: F.createBootstrap)
        #expect(request.method == "POST")
        #expect(request.path == "/api/v1/session")
        #expect(
            F.pairs(request.headers) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer vtC-woU4ery1TUQ3jKjRJs9BZW59b3AbD5WcMZQ1EYw"],
                ["Content-Type", "application/octet-stream"], ["Origin", "https://proxy.example.com"],
            ])
        #expect(request.body == F.bytes(hex: "100000000000000101"))
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
            F.withoutOrigin(request) == [
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
            F.pairs(request.headers) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"],
                ["Content-Type", "application/octet-stream"], ["X-Up-Seq", "1"],
                ["Origin", "https://proxy.example.com"],
            ])
        #expect(request.body == body)
    }

    @Test func laneUpMatchesTranscript06() throws {
        let lane = try #require(StreamID(rawValue: 1))
        let body = F.bytes(hex: "010000010000000002000001000000106c616e65206f6e65207061796c6f6164")
        let request = F.api.up(session: F.lanesSession, sequence: 1, lane: lane, body: body)
        #expect(
            F.withoutOrigin(request) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer Jg-FHFmaq4OeWJTK0lsLUs004xOsNwGtAGdLbjQUX-I"],
                ["Content-Type", "application/octet-stream"], ["X-Up-Seq", "1"], ["X-Lane-ID", "1"],
            ])
        #expect(request.body == body)
    }

    @Test func downMatchesTranscript03() {
        let request = F.api.down(session: F.httpsSession, cursor: 0, lane: nil)
        #expect(request.method == "POST")
        #expect(request.path == "/api/v1/down")
        #expect(
            F.pairs(request.headers) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"],
                ["X-Down-Cursor", "0"], ["Origin", "https://proxy.example.com"],
            ])
        #expect(request.header("Content-Type") == nil)
        #expect(request.body.isEmpty)
    }

    @Test func laneDownMatchesTranscript06() {
        let request = F.api.down(session: F.lanesSession, cursor: 0, lane: .session)
        #expect(
            F.withoutOrigin(request) == [
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
        #expect(
            F.pairs(upgrade.request.headers) == [
                ["Host", "proxy.example.com"], ["Upgrade", "websocket"], ["Connection", "Upgrade"],
                ["Sec-WebSocket-Version", "13"],
                ["Sec-WebSocket-Protocol", "tproxy-v1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY"],
                ["Origin", "https://proxy.example.com"],
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
        #expect(upgrade.request.headers.count == 6)
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
        #expect(request.description == "POST /api/v1/up (5 headers, 14 body bytes)")
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
