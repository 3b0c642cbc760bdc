@testable import WebProxyCore

/// Values from the recorded relay transcripts (`relay-transcripts/01..08`) and small test
/// doubles for time and randomness. Tokens are from the recording run and mean nothing
/// outside it.
enum CarrierFixtures {
    static let host = "proxy.example.com"
    static let api = RelayAPI(host: host, prefix: "/api/v1")
    static let httpsCapability = "MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk"

    /// 01 step 1: the https profile's data statements.
    static let httpsConstStatement =
        #"const relayOrigin="https://proxy.example.com",bootstrap="MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw",carrierMode="https";"#
    static let batchStatement = "const laneQueueLimit=8388608,laneItemLimit=1024,batchLimit=2097152;"

    /// 01 steps 1–4: const statement, bootstrap and mode of each profile.
    static let constStatements: [(statement: String, bootstrap: String, mode: CarrierMode)] = [
        (httpsConstStatement, "MYE7OFC3Gft-q4ZHlH7n62dsqyjWG1Fj5nBd_zTA2nw", .https),
        (
            #"const relayOrigin="https://proxy.example.com",bootstrap="aoTgQ3GjHT1Iu14YqyfZh_N00AGzMnYJyn70maavMuw",carrierMode="https-lanes";"#,
            "aoTgQ3GjHT1Iu14YqyfZh_N00AGzMnYJyn70maavMuw", .httpsLanes
        ),
        (
            #"const relayOrigin="https://proxy.example.com",bootstrap="XJoJC8epRCJQm4RXbL4xr4So8--vuV1i7YMXVLXWxjE",carrierMode="websocket";"#,
            "XJoJC8epRCJQm4RXbL4xr4So8--vuV1i7YMXVLXWxjE", .websocket
        ),
        (
            #"const relayOrigin="https://proxy.example.com",bootstrap="lZzyOjqjqNcmS1VOcz3i7FG3vYDIN3kwClpma2Nn-9A",carrierMode="websocket-lanes";"#,
            "lZzyOjqjqNcmS1VOcz3i7FG3vYDIN3kwClpma2Nn-9A", .websocketLanes
        ),
    ]

    /// A small page shaped like the real one around the two statements.
    static func page(_ constStatement: String, _ batchStatement: String = batchStatement) -> String {
        """
        <!doctype html><html><head><meta charset="utf-8"><title>Connection</title></head><body>
        <script nonce="PZ6ExNbNvc-v8_i5cJDAV8_V">
        "use strict";
        \(constStatement)
        const CLOSE=3,OPEN=1;
        \(batchStatement)
        function send(b){if(b.length>batchLimit)return;}
        </script></body></html>
        """
    }

    static func token(_ text: String) -> RelayToken {
        guard let token = RelayToken(text) else { fatalError("fixture token is not canonical") }
        return token
    }

    /// 02 step 2: bootstrap#1 and the session token it created.
    static let createBootstrap = token("vtC-woU4ery1TUQ3jKjRJs9BZW59b3AbD5WcMZQ1EYw")
    static let createdSession = "gOx9FY68rPEh0FM7ZhyU1K6id2MjPAn8cey9Xwbjr_0"
    /// 03: the https carrier session.
    static let httpsSession = token("VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU")
    /// 06: the https-lanes session.
    static let lanesSession = token("Jg-FHFmaq4OeWJTK0lsLUs004xOsNwGtAGdLbjQUX-I")

    /// The relay's local 404 (02 step 4 and many more).
    static let local404 = CarrierResponse(
        status: 404,
        headers: [
            ("Cache-Control", "no-store"), ("Content-Type", "text/plain; charset=utf-8"),
            ("X-Content-Type-Options", "nosniff"), ("Date", "Mon, 30 Nov 2026 06:40:09 GMT"), ("Content-Length", "19"),
        ],
        body: Array("404 page not found\n".utf8))

    /// Capacity 503 as PROTOCOL.md §3.3 describes it.
    static let unavailable = CarrierResponse(
        status: 503, headers: [("Cache-Control", "no-store"), ("Retry-After", "1")])

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble =
                character <= UInt8(ascii: "9") ? character - UInt8(ascii: "0") : character - UInt8(ascii: "a") + 10
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return out
    }

    /// Header pairs, as `[[name, value]]` in the transcripts.
    static func pairs(_ headers: [(name: String, value: String)]) -> [[String]] {
        headers.map { [$0.name, $0.value] }
    }

    /// The fields a browser adds to every request, which the transcripts' recorder did not
    /// send (RelayAPITests checks them against Chromium's capture).
    static let browserFields: Set = [
        "Connection", "Content-Length", "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "User-Agent",
        "Accept", "Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Accept-Language",
    ]

    /// A request's headers as the transcript recorded them: the relay protocol's fields in
    /// order, without the browser's.
    static func asRecorded(_ request: CarrierRequest) -> [[String]] {
        pairs(request.headers.filter { !browserFields.contains($0.name) })
    }

    /// Chromium 156's fields around a `fetch()` from the bridge page, as captured.
    static let userAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
    static let brands = "\"Not:A-Brand\";v=\"8\", \"Chromium\";v=\"156\""

    /// A monotonic instant that tests move by hand.
    struct Instant: InstantProtocol {
        var offset: Duration
        static let zero = Instant(offset: .zero)
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    /// Returns the same draw forever: 0 for no jitter, `.max` for full jitter.
    struct FixedRandom: RandomNumberGenerator {
        let value: UInt64
        func next() -> UInt64 { value }
    }
}
