import Testing
import WebProxyTestSupport

@testable import WebProxyCore

@Suite struct BridgePageTests {
    typealias F = CarrierFixtures

    @Test(arguments: 0..<4)
    func parsesEachRecordedProfile(index: Int) throws {
        let fixture = F.constStatements[index]
        let page = try BridgePage.parse(html: F.page(fixture.statement))
        #expect(page.relayOrigin == "https://proxy.example.com")
        #expect(page.bootstrap == F.token(fixture.bootstrap))
        #expect(page.carrierMode == fixture.mode)
        #expect(page.batchLimit == 2_097_152)
        #expect(try BridgePage.parse(html: Array(F.page(fixture.statement).utf8)) == page)
    }

    @Test func parsesTheBareStatements() throws {
        let page = try BridgePage.parse(html: F.httpsConstStatement + F.batchStatement)
        #expect(page.carrierMode == .https)
        #expect(page.batchLimit == 2_097_152)
    }

    @Test(arguments: [
        "", "<html><body>Welcome to my site</body></html>\n", "404 page not found\n",
        // Another dialect: the session token baked into the page.
        #"const relayOrigin="https://proxy.example.com",session="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw";"#,
        // Single quotes are not JSON strings.
        "const relayOrigin='https://proxy.example.com',bootstrap='MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw',carrierMode='https';",
        // No terminating semicolon, spaces around separators, reordered fields.
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https""#,
        #"const relayOrigin = "https://proxy.example.com", bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https";"#,
        #"const relayOrigin="https://proxy.example.com",carrierMode="https",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw";"#,
    ])
    func pagesWithoutTheStatementAreNotARelay(html: String) {
        #expect(throws: CarrierError.notATproxyRelay) { try BridgePage.parse(html: html) }
        do {
            _ = try BridgePage.parse(html: html)
        } catch {
            #expect(error.description.hasSuffix("wrong secret or host, or not a WEB relay (tproxy v1)"))
            #expect(error.endsSession)
        }
    }

    @Test func theMissingStatementMessageIsExact() {
        #expect(
            CarrierError.notATproxyRelay.description
                == "the bridge page holds no session bootstrap: wrong secret or host, or not a WEB relay (tproxy v1)")
    }

    @Test func rejectsPagesOverTheBound() {
        let filler = String(repeating: "x", count: BridgePage.maxPageBytes)
        let html = F.httpsConstStatement + F.batchStatement + filler
        #expect(throws: CarrierError.notATproxyRelay) { try BridgePage.parse(html: html) }
        #expect(throws: CarrierError.notATproxyRelay) { try BridgePage.parse(html: Array(html.utf8)) }
        // Exactly at the bound is still read.
        let atBound = F.httpsConstStatement + F.batchStatement
        let padded = atBound + String(repeating: " ", count: BridgePage.maxPageBytes - atBound.utf8.count)
        #expect(throws: Never.self) { try BridgePage.parse(html: padded) }
    }

    @Test(arguments: [
        ("batchLimit=1048576;", 1_048_576), ("batchLimit=4194304;", 2_097_152), ("batchLimit=2097153;", 2_097_152),
        ("batchLimit=18446744073709551615;", 2_097_152), ("batchLimit=1;", 1), ("batchLimit=65536,x=1;", 65536),
        ("", 2_097_152), ("const xbatchLimit=5;", 2_097_152), ("if(a.batchLimit==1){}", 2_097_152),
        ("xbatchLimit=5;batchLimit=4096;", 4096),
    ])
    func readsAndCapsTheBatchLimit(statement: String, expected: Int) throws {
        let page = try BridgePage.parse(html: F.page(F.httpsConstStatement, statement))
        #expect(page.batchLimit == expected)
    }

    @Test(arguments: [
        "batchLimit=0;", "batchLimit=02097152;", "batchLimit=abc;", "batchLimit=1e6;", "batchLimit=-1;",
        "batchLimit=;", "batchLimit=2097152", "batchLimit=2097152 ;", "batchLimit=99999999999999999999999;",
        "batchLimit=\"2097152\";",
    ])
    func rejectsAGarbageBatchLimit(statement: String) {
        #expect(throws: CarrierError.malformedBridgePage) {
            try BridgePage.parse(html: F.page(F.httpsConstStatement, statement))
        }
    }

    @Test func decodesJSONEscapes() throws {
        let statement =
            #"const relayOrigin="https:\/\/proxy.example.com",bootstrap="\u004dYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="\u0068ttps";"#
        let page = try BridgePage.parse(html: F.page(statement))
        #expect(page.relayOrigin == "https://proxy.example.com")
        #expect(page.bootstrap == F.token("MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw"))
        #expect(page.carrierMode == .https)
    }

    @Test func decodesSurrogatePairs() throws {
        var position = 0
        let literal = Array(#""a\ud83d\ude00b\"\\\/\t""#.utf8)
        #expect(try JSONStringLiteral.decode(literal, at: &position, maxBytes: 100) == "a\u{1F600}b\"\\/\t")
        #expect(position == literal.count)
    }

    @Test(arguments: [
        #""\x41""#, #""\ud800""#, #""\ud800x""#, #""\ud800\u0041""#, #""\udc00""#, #""\u12""#, #""\u12g4""#,
        "\"a\u{01}b\"", "\"tab\there\"", #""unterminated"#, #""ends in escape\"#, "\"\u{FF}\"",
    ])
    func rejectsInvalidLiterals(literal: String) {
        var bytes = Array(literal.utf8)
        if literal == "\"\u{FF}\"" { bytes = [0x22, 0xFF, 0x22] }
        var position = 0
        #expect(throws: JSONStringLiteral.Failure.self) {
            try JSONStringLiteral.decode(bytes, at: &position, maxBytes: 100)
        }
        #expect(position == 0)
    }

    @Test func boundsEachLiteral() {
        let long = String(repeating: "a", count: 2000)
        let statement =
            "const relayOrigin=\"https://\(long)\",bootstrap=\"MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw\",carrierMode=\"https\";"
        #expect(throws: CarrierError.malformedBridgePage) { try BridgePage.parse(html: F.page(statement)) }
    }

    @Test(arguments: [
        #"const relayOrigin="http://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https";"#,
        #"const relayOrigin="https://proxy.example.com\n",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https";"#,
        #"const relayOrigin="",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https";"#,
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2n",carrierMode="https";"#,
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nx",carrierMode="https";"#,
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="HTTPS";"#,
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="";"#,
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https ";"#,
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="\u0000";"#,
    ])
    func rejectsUnusableValues(statement: String) {
        #expect(throws: CarrierError.malformedBridgePage) { try BridgePage.parse(html: F.page(statement)) }
        do {
            _ = try BridgePage.parse(html: F.page(statement))
        } catch {
            #expect(!error.description.contains("MYE7"))
        }
    }

    @Test func namesAnUnknownModeButNotGarbage() {
        let auto =
            #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="websocket-auto";"#
        #expect(
            failure(auto)
                == #"the bridge page is not usable: it names an unsupported carrier mode "websocket-auto""#)
        let odd =
            #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="<script>";"#
        #expect(failure(odd) == "the bridge page is not usable: it names an unsupported carrier mode")
    }

    @Test func everyTruncationFailsCleanly() {
        let full = Array((F.httpsConstStatement + F.batchStatement).utf8)
        for length in 0..<F.httpsConstStatement.utf8.count {
            let prefix = Array(full[0..<length])
            #expect(throws: CarrierError.self) { try BridgePage.parse(html: prefix) }
        }
    }

    @Test func seededGarbageNeverTraps() {
        var random = SplitMix64(seed: 0x5EED)
        let statement = Array(F.httpsConstStatement.utf8)
        var accepted = 0
        for _ in 0..<2000 {
            var bytes = statement
            for _ in 0..<Int(random.next() % 4) + 1 {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] = UInt8(truncatingIfNeeded: random.next())
            }
            if (try? BridgePage.parse(html: bytes)) != nil { accepted += 1 }
        }
        // Most mutations break the statement; the few that survive hit ignored bytes.
        #expect(accepted < 2000)
    }

    @Test func descriptionsHideTheBootstrap() throws {
        let page = try BridgePage.parse(html: F.page(F.httpsConstStatement))
        var dumped = ""
        dump(page, to: &dumped)
        for shown in [String(describing: page), String(reflecting: page), dumped] {
            #expect(!shown.contains("MYE7OFC3Gft"))
        }
        #expect(
            page.description
                == "BridgePage(relayOrigin: https://proxy.example.com, carrierMode: https, batchLimit: 2097152, bootstrap: redacted)"
        )
    }

    @Test func bridgeRequestMatchesTheRecordingPlusBrowserHeaders() {
        let request = BridgePage.request(host: F.host, basePath: "", capability: F.httpsCapability)
        #expect(request.method == "GET")
        #expect(request.path == "/?bridge=MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk")
        #expect(
            F.pairs(request.headers) == [
                // Chromium 156's navigation to a typed URL, less Accept-Encoding.
                ["Host", "proxy.example.com"], ["Connection", "keep-alive"], ["sec-ch-ua", F.brands],
                ["sec-ch-ua-mobile", "?0"], ["sec-ch-ua-platform", "\"Linux\""], ["Upgrade-Insecure-Requests", "1"],
                ["User-Agent", F.userAgent],
                ["Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"],
                ["Sec-Fetch-Site", "none"], ["Sec-Fetch-Mode", "navigate"], ["Sec-Fetch-User", "?1"],
                ["Sec-Fetch-Dest", "document"], ["Accept-Language", "en-US,en;q=0.9"],
            ])
        #expect(request.body.isEmpty)
        #expect(request.header("accept-encoding") == nil)
        #expect(request.header("Cookie") == nil)
        #expect(!request.headers.contains { ($0.name + $0.value).lowercased().contains("webproxyd") })
        #expect(request.description == "GET /?… (13 headers, 0 body bytes)")
    }

    @Test func bridgeRequestUnderABasePath() {
        let request = BridgePage.request(host: F.host, basePath: "/dobry-cola-super-app", capability: F.httpsCapability)
        #expect(request.path == "/dobry-cola-super-app/?bridge=MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk")
        #expect(!request.description.contains("MHLEY5"))
        #expect(!String(reflecting: request).contains("MHLEY5"))
    }

    @Test func judgesTheRecordedAnswers() throws {
        // 01 step 1: the bridge page.
        let pageResponse = CarrierResponse(
            status: 200,
            headers: [("Cache-Control", "no-store"), ("Content-Type", "text/html; charset=utf-8")],
            body: Array(F.page(F.httpsConstStatement).utf8))
        guard case .accepted(let page) = BridgePage.judge(pageResponse) else {
            Issue.record("bridge page not accepted")
            return
        }
        #expect(page.carrierMode == .https)

        // 01 step 6: a wrong capability gets the public website's 200 index page.
        let website = CarrierResponse(
            status: 200, headers: [("Accept-Ranges", "bytes"), ("Content-Type", "text/html; charset=utf-8")],
            body: Array("<!doctype html><title>Example</title>Hello\n".utf8))
        #expect(BridgePage.judge(website) == .fatal(.notATproxyRelay))

        // Local 404 for an authentic capability used wrongly, or bootstrap limits.
        #expect(BridgePage.judge(F.local404) == .fatal(.unexpectedStatus))
        #expect(BridgePage.judge(F.unavailable) == .retryLater(.seconds(1)))
        #expect(BridgePage.judge(CarrierResponse(status: 502)) == .fatal(.unexpectedStatus))

        var gzipped = pageResponse
        gzipped.headers.append(("Content-Encoding", "gzip"))
        #expect(BridgePage.judge(gzipped) == .fatal(.malformedResponse))
    }

    private func failure(_ statement: String) -> String? {
        do {
            _ = try BridgePage.parse(html: F.page(statement))
            return nil
        } catch {
            return error.description
        }
    }
}
