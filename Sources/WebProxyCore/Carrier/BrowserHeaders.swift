/// The request headers of the browser webproxyd stands in for: Chromium on Linux, as
/// Telegram Desktop's WebView is, in the order Chromium 156 sends them over HTTP/1.1
/// (captured, Docs/SECURITY.md). A front that scores clients by their headers (a CDN's bot
/// check) then sees a browser, not a script.
///
/// Left out on purpose:
/// - `Accept-Encoding` on page and API requests: the front would compress the page, and
///   webproxyd decodes no content coding. (The WebSocket upgrade carries it: a 101 has no
///   body.)
/// - `Sec-WebSocket-Extensions: permessage-deflate`: a relay that accepts it would send
///   compressed messages.
/// - `Referer`: the bridge page sets `Referrer-Policy: no-referrer`, so Chromium sends none.
public struct BrowserHeaders: Hashable, Sendable {
    /// Chromium 156's reduced User-Agent on Linux.
    public static let chromiumUserAgent =
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
    public static let chromium = BrowserHeaders(userAgent: chromiumUserAgent)

    public let userAgent: String
    /// `sec-ch-ua`, for a User-Agent that names a Chrome major version; other browsers
    /// send no client hints.
    let brands: String?

    public init(userAgent: String) {
        self.userAgent = userAgent
        brands = Self.chromeMajorVersion(in: userAgent).map(Self.brands(chromeMajorVersion:))
    }

    static let acceptLanguage = ("Accept-Language", "en-US,en;q=0.9")

    /// A top-level navigation to a page of `host`, as for a link opened in a new tab.
    public func navigation(host: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Host", host), ("Connection", "keep-alive")]
        if let brands {
            headers += [("sec-ch-ua", brands), ("sec-ch-ua-mobile", "?0"), ("sec-ch-ua-platform", "\"Linux\"")]
        }
        headers += [
            ("Upgrade-Insecure-Requests", "1"), ("User-Agent", userAgent),
            ("Accept",
             "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
            ("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-User", "?1"),
            ("Sec-Fetch-Dest", "document"), Self.acceptLanguage,
        ]
        return headers
    }

    /// A same-origin `fetch()` from the page at `origin`: `fields` are the ones the script
    /// sets (Authorization and the relay's X- headers), `contentType` the body's, and
    /// `bodyLength` the body's size (nil: no body, as for DELETE).
    public func fetch(
        host: String, origin: String, fields: [(name: String, value: String)], contentType: String? = nil,
        bodyLength: Int?
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Host", host), ("Connection", "keep-alive")]
        if let bodyLength { headers.append(("Content-Length", String(bodyLength))) }
        if brands != nil { headers.append(("sec-ch-ua-platform", "\"Linux\"")) }
        headers += fields
        headers.append(("User-Agent", userAgent))
        if let brands { headers.append(("sec-ch-ua", brands)) }
        if let contentType { headers.append(("Content-Type", contentType)) }
        if brands != nil { headers.append(("sec-ch-ua-mobile", "?0")) }
        headers += [
            ("Accept", "*/*"), ("Origin", origin), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors"),
            ("Sec-Fetch-Dest", "empty"), Self.acceptLanguage,
        ]
        return headers
    }

    /// A `new WebSocket(url, [subprotocol])` from the page at `origin`. The WebSocket
    /// client inserts `Sec-WebSocket-Key` before `Sec-WebSocket-Protocol`, where Chromium
    /// has it.
    public func webSocket(host: String, origin: String, subprotocol: String) -> [(name: String, value: String)] {
        [
            ("Host", host), ("Connection", "Upgrade"), ("Pragma", "no-cache"), ("Cache-Control", "no-cache"),
            ("User-Agent", userAgent), ("Upgrade", "websocket"), ("Origin", origin), ("Sec-WebSocket-Version", "13"),
            ("Accept-Encoding", "gzip, deflate, br, zstd"), Self.acceptLanguage,
            ("Sec-WebSocket-Protocol", subprotocol),
        ]
    }

    /// The major version in `Chrome/N.…`, if the User-Agent has one.
    static func chromeMajorVersion(in userAgent: String) -> Int? {
        guard let range = userAgent.firstRange(of: "Chrome/") else { return nil }
        let digits = userAgent[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return digits.isEmpty ? nil : Int(digits)
    }

    /// `sec-ch-ua` of Chromium version `major`: its brand and a GREASE brand, whose
    /// characters, version and position Chromium derives from the major version so that
    /// servers cannot rely on one spelling. Checked against Chromium 156's capture; the
    /// GREASE brand also matches Chrome 141's published one.
    static func brands(chromeMajorVersion major: Int) -> String {
        let greaseCharacters = [" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_"]
        let greaseVersions = ["8", "99", "24"]
        let grease = "\"Not\(greaseCharacters[major % 11])A\(greaseCharacters[(major + 1) % 11])Brand\";v=\"\(greaseVersions[major % 3])\""
        let chromium = "\"Chromium\";v=\"\(major)\""
        return major % 2 == 0 ? grease + ", " + chromium : chromium + ", " + grease
    }
}
