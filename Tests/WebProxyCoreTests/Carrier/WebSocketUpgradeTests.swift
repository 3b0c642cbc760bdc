import Testing

@testable import WebProxyCore

@Suite struct WebSocketUpgradeTests {
    typealias F = CarrierFixtures

    static let session = F.token("StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY")
    let upgrade = WebSocketUpgrade(channel: CarrierChannel(api: F.api, session: session, lane: nil))

    /// 07 step 3: the 101.
    @Test func acceptsTheRecordedSwitch() {
        let response = CarrierResponse(
            status: 101,
            headers: [
                ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
                ("Sec-WebSocket-Protocol", "tproxy-v1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY"),
            ])
        guard case .accepted = upgrade.judge(response) else {
            Issue.record("101 not accepted")
            return
        }
    }

    @Test(
        arguments: [
            nil, "tproxy-v1.other", "tproxy-lane-v1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY.1",
            "TPROXY-V1.StPLRn8_lBqZ9ILSFKL1bPmiYVonNgZhzyfhG3BrkYY",
        ] as [String?])
    func rejectsAMissingOrDifferentSubprotocol(echo: String?) {
        let headers: [(name: String, value: String)] = echo.map { [("Sec-WebSocket-Protocol", $0)] } ?? []
        guard case .fatal(let error) = upgrade.judge(CarrierResponse(status: 101, headers: headers)) else {
            Issue.record("accepted")
            return
        }
        #expect(error == .malformedResponse)
        #expect(!error.description.contains("StPLRn8"))
    }

    /// 07 step 12: a second socket for the session gets 404.
    @Test func refusalsAreFatal() {
        guard case .fatal(let error) = upgrade.judge(F.local404) else {
            Issue.record("404 accepted")
            return
        }
        #expect(error == .unexpectedStatus)
        guard case .fatal = upgrade.judge(CarrierResponse(status: 200)) else {
            Issue.record("200 accepted")
            return
        }
    }
}
