import Testing

@testable import WebProxyCore

@Suite struct SessionCreationTests {
    typealias F = CarrierFixtures

    /// 02 step 2: the successful create answer.
    static let created = CarrierResponse(
        status: 200,
        headers: [
            ("Cache-Control", "no-store"), ("Content-Length", "8"), ("Content-Type", "application/octet-stream"),
            ("X-Carrier-Mode", "https"), ("X-Down-Cursor", "0"),
            ("X-Session-Token", "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_0"),
            ("Date", "Mon, 30 Nov 2026 06:40:09 GMT"),
        ],
        body: [0x11, 0, 0, 0, 0, 0, 0, 0])

    func creation(mode: CarrierMode = .https) throws -> SessionCreation {
        let statement = F.constStatements.first { $0.mode == mode }!.statement
        return SessionCreation(page: try BridgePage.parse(html: F.page(statement)), api: F.api)
    }

    func replacing(_ name: String, with value: String?) -> CarrierResponse {
        var response = Self.created
        response.headers.removeAll { $0.name == name }
        if let value { response.headers.append((name, value)) }
        return response
    }

    @Test func requestCarriesThePageBootstrapAndHello() throws {
        let creation = try creation()
        #expect(creation.request.header("Authorization") == "Bearer MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw")
        #expect(creation.request.body == F.bytes(hex: "100000000000000101"))
        #expect(creation.expectedMode == .https)
    }

    @Test func acceptsTheRecordedWelcome() throws {
        let verdict = try creation().judge(Self.created)
        #expect(verdict == .accepted(EstablishedSession(token: F.token(F.createdSession), carrierMode: .https)))
    }

    @Test func acceptsLowerCaseHeaderNames() throws {
        let response = CarrierResponse(
            status: 200,
            headers: [
                ("x-carrier-mode", "https-lanes"), ("x-down-cursor", "0"), ("x-session-token", F.createdSession),
            ],
            body: [0x11, 0, 0, 0, 0, 0, 0, 0])
        guard case .accepted(let session) = try creation(mode: .httpsLanes).judge(response) else {
            Issue.record("not accepted")
            return
        }
        #expect(session.carrierMode == .httpsLanes)
    }

    @Test func aModeMismatchNamesBothModes() throws {
        let verdict = try creation(mode: .websocket).judge(Self.created)
        guard case .fatal(let error) = verdict else {
            Issue.record("mismatch accepted")
            return
        }
        #expect(error == .carrierModeMismatch)
        #expect(
            error.description == "the bridge page announced carrier websocket but the session was created for https")
        let unknown = try creation().judge(replacing("X-Carrier-Mode", with: "https-auto"))
        guard case .fatal(let unknownError) = unknown else { return }
        #expect(
            unknownError.description
                == "the bridge page announced carrier https but the session was created for an unknown mode")
    }

    @Test(
        arguments: [
            ("X-Session-Token", nil), ("X-Session-Token", "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_"),
            ("X-Session-Token", "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_1"), ("X-Carrier-Mode", nil),
            ("X-Down-Cursor", nil), ("X-Down-Cursor", "1"), ("X-Down-Cursor", "00"),
        ] as [(String, String?)])
    func rejectsMissingOrWrongHeaders(name: String, value: String?) throws {
        let verdict = try creation().judge(replacing(name, with: value))
        #expect(verdict == .fatal(.malformedResponse))
    }

    @Test func rejectsADuplicatedToken() throws {
        var response = Self.created
        response.headers.append(("x-session-token", "P-ziHq5lOuN9yomeWOPIs7G0inBqm9dOhYW2JlTKQJ4"))
        #expect(try creation().judge(response) == .fatal(.malformedResponse))
    }

    @Test(arguments: [
        "", "1100000000000000" + "00", "11000000000000", "100000000000000101", "1100000000000001", "1f00000000000000",
    ])
    func rejectsAnythingButWelcome(bodyHex: String) throws {
        var response = Self.created
        response.body = F.bytes(hex: bodyHex)
        #expect(try creation().judge(response) == .fatal(.malformedResponse))
    }

    @Test func capacityExhaustionIsRetried() throws {
        #expect(try creation().judge(F.unavailable) == .retryLater(.seconds(1)))
        #expect(try creation().judge(CarrierResponse(status: 503)) == .retryLater(nil))
        #expect(
            try creation().judge(CarrierResponse(status: 503, headers: [("Retry-After", "soon")])) == .retryLater(nil))
    }

    @Test func everyOtherStatusIsFatal() throws {
        // 02 step 4: a different body on a used bootstrap; step 26: the public site's 404.
        let publicSite = CarrierResponse(
            status: 404, headers: [("Content-Length", "50"), ("Content-Type", "text/html; charset=utf-8")],
            body: Array(repeating: 0x20, count: 50))
        for response in [F.local404, publicSite] {
            let verdict = try creation().judge(response)
            #expect(verdict == .fatal(.unexpectedStatus))
            if case .fatal(let error) = verdict {
                #expect(
                    error.description
                        == "the relay answered session creation with 404: the session or bootstrap is gone or the request was refused"
                )
            }
        }
        for status in [201, 204, 301, 400, 401, 429, 500, 502, 504] {
            let verdict = try creation().judge(CarrierResponse(status: status))
            #expect(verdict == .fatal(.unexpectedStatus))
            if case .fatal(let error) = verdict {
                #expect(error.description == "the relay answered session creation with HTTP \(status)")
                #expect(error.endsSession)
            }
        }
    }

    @Test func messagesNeverCarryTokens() throws {
        let responses = [
            replacing("X-Session-Token", with: "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_1"),
            replacing("X-Carrier-Mode", with: "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_0"),
            replacing("X-Down-Cursor", with: "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_0"),
        ]
        for response in responses {
            guard case .fatal(let error) = try creation().judge(response) else {
                Issue.record("accepted")
                continue
            }
            #expect(!error.description.contains("gOx9"))
            #expect(!error.description.contains("MYE7"))
        }
    }
}
