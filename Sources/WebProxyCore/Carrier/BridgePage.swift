/// What a native client needs from the relay's bridge page (PROTOCOL.md §3.1): the
/// data statement `const relayOrigin="…",bootstrap="…",carrierMode="…";` and `batchLimit`.
///
/// The bootstrap token is a credential: descriptions and mirrors never show it.
public struct BridgePage: Hashable, Sendable, CustomStringConvertible {
    /// `https://H` as the page states it.
    public let relayOrigin: String
    /// Single-use token for creating one session; lives 2 minutes.
    public let bootstrap: RelayToken
    /// The carrier the relay fixed for this secret.
    public let carrierMode: CarrierMode
    /// Largest uplink body or message to send, in bytes: the page's `batchLimit`, capped
    /// at 2 MiB. Pages always declare it; when one does not, this is 2 MiB, the relay's
    /// default `carrier_batch_bytes`.
    public let batchLimit: Int

    /// Largest page parsed. Real pages are about 18 KiB; a bigger answer is a website.
    public static let maxPageBytes = 256 << 10
    /// Most source bytes read for one string literal of the data statement.
    static let maxLiteralBytes = 1024
    /// Longest relay origin accepted.
    static let maxOriginLength = 300

    /// The bridge request: `GET {basePath}/?bridge=<capability>` with `Host: H` and the
    /// headers of a browser's navigation (no `Accept-Encoding`: the reference front would
    /// gzip the page). `basePath` is "" or "/P"; `capability` the 43-character one.
    public static func request(
        host: String, basePath: String, capability: String, browser: BrowserHeaders = .chromium
    ) -> CarrierRequest {
        CarrierRequest(method: "GET", path: basePath + "/?bridge=" + capability, headers: browser.navigation(host: host))
    }

    /// Judges the answer to `request(host:basePath:capability:)`. A 200 is not success by
    /// itself: the public website answers 200 too, so the page is parsed.
    public static func judge(_ response: CarrierResponse) -> ResponseVerdict<BridgePage> {
        switch response.status {
        case 200:
            if let encoding = response.header("Content-Encoding"), !HeaderName.equal(encoding, "identity") {
                return .fatal(
                    CarrierError.malformedResponse.detailed(
                        "the bridge page came back compressed (Content-Encoding), which this client does not decode"))
            }
            do {
                return .accepted(try parse(html: response.body))
            } catch {
                return .fatal(error)
            }
        case 404:
            return .fatal(
                CarrierError.unexpectedStatus.detailed(
                    "the relay refused the bridge request (404): the secret does not fit this host or path, or the relay hit its bootstrap limits"
                ))
        default:
            return .unexpected(response, operation: "the bridge request")
        }
    }

    /// Parses a bridge page. Throws `.notATproxyRelay` when the page has no data
    /// statement (the public website, another dialect), `.malformedBridgePage` when a
    /// value in it is unusable.
    public static func parse(html: String) throws(CarrierError) -> BridgePage {
        guard html.utf8.count <= maxPageBytes else { throw tooLarge }
        return try parse(html: Array(html.utf8))
    }

    /// Parses a bridge page given as bytes; see `parse(html:)`.
    public static func parse(html: [UInt8]) throws(CarrierError) -> BridgePage {
        guard html.count <= maxPageBytes else { throw tooLarge }
        guard let start = firstIndex(of: Array("const relayOrigin=".utf8), in: html, from: 0) else {
            throw CarrierError.notATproxyRelay
        }
        var position = start
        let origin = try field("relayOrigin", html, &position, after: "const relayOrigin=")
        let token = try field("bootstrap", html, &position, after: ",bootstrap=")
        let mode = try field("carrierMode", html, &position, after: ",carrierMode=")
        guard position < html.count, html[position] == UInt8(ascii: ";") else { throw CarrierError.notATproxyRelay }

        guard origin.hasPrefix("https://"), origin.utf8.count <= maxOriginLength,
            origin.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw malformed("its relayOrigin is not an https origin") }
        guard let bootstrap = RelayToken(token) else {
            throw malformed("its bootstrap is not a 43-character canonical base64url token")
        }
        guard let carrierMode = CarrierMode(rawValue: mode) else {
            let shown =
                mode.utf8.count <= 32 && mode.utf8.allSatisfy { $0 == UInt8(ascii: "-") || (0x61...0x7A).contains($0) }
            throw malformed("it names an unsupported carrier mode" + (shown ? " \"\(mode)\"" : ""))
        }
        return BridgePage(
            relayOrigin: origin, bootstrap: bootstrap, carrierMode: carrierMode, batchLimit: try batchLimit(in: html))
    }

    public var description: String {
        "BridgePage(relayOrigin: \(relayOrigin), carrierMode: \(carrierMode), batchLimit: \(batchLimit), bootstrap: redacted)"
    }

    private static let tooLarge = CarrierError.notATproxyRelay.detailed(
        "the bridge answer is larger than 256 KiB: wrong secret or host, or not a WEB relay (tproxy v1)")

    private static func malformed(_ what: String) -> CarrierError {
        CarrierError.malformedBridgePage.detailed("the bridge page is not usable: \(what)")
    }

    /// Expects `prefix` at `position`, then decodes the JSON string literal after it.
    private static func field(_ name: String, _ html: [UInt8], _ position: inout Int, after prefix: String)
        throws(CarrierError) -> String
    {
        let expected = Array(prefix.utf8)
        guard html.count - position >= expected.count,
            html[position..<position + expected.count].elementsEqual(expected)
        else { throw CarrierError.notATproxyRelay }
        position += expected.count
        do {
            return try JSONStringLiteral.decode(html, at: &position, maxBytes: maxLiteralBytes)
        } catch .notALiteral {
            throw CarrierError.notATproxyRelay
        } catch {
            throw malformed("its \(name) is not a valid JSON string")
        }
    }

    /// The first `batchLimit=<n>` declaration: a canonical decimal ended by `;` or `,`,
    /// non-zero, capped at 2 MiB. Absent: 2 MiB.
    private static func batchLimit(in html: [UInt8]) throws(CarrierError) -> Int {
        let key = Array("batchLimit=".utf8)
        var searchFrom = 0
        while let found = firstIndex(of: key, in: html, from: searchFrom) {
            searchFrom = found + 1
            let valueStart = found + key.count
            // Skip uses such as `xbatchLimit=` or comparisons `batchLimit==`.
            if found > 0, isIdentifierByte(html[found - 1]) { continue }
            if valueStart < html.count, html[valueStart] == UInt8(ascii: "=") { continue }
            var valueEnd = valueStart
            while valueEnd < html.count, valueEnd - valueStart <= CanonicalDecimal.maxDigits,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(html[valueEnd])
            {
                valueEnd += 1
            }
            guard valueEnd < html.count, html[valueEnd] == UInt8(ascii: ";") || html[valueEnd] == UInt8(ascii: ","),
                let value = CanonicalDecimal.parse(bytes: html[valueStart..<valueEnd]), value > 0
            else { throw malformed("its batchLimit is not a positive decimal number") }
            return Int(min(value, UInt64(FrameLimits.defaultBatchBytes)))
        }
        return FrameLimits.defaultBatchBytes
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "$"):
            true
        default: false
        }
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
