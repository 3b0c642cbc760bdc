import WebProxyCore

/// Finds the 43-character base64url runs of a request (percent-decoded target, header names
/// and values) so the engine can tell the relay's own traffic from the public website's:
/// a request with no authentic capability or token anywhere goes to the website unchanged.
enum SecretScanner {
    /// Every maximal run of exactly 43 base64url characters in the request.
    static func candidates(in request: RelayRequest) -> [Substring] {
        var texts = [percentDecoded(request.rawTarget)]
        for field in request.headers {
            texts.append(field.name)
            texts.append(field.value)
        }
        return texts.flatMap { text in
            text.split(whereSeparator: { !isBase64URL($0) }).filter { $0.utf8.count == 43 }
        }
    }

    private static func isBase64URL(_ c: Character) -> Bool {
        guard let ascii = c.asciiValue else { return false }
        switch ascii {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// `%XX` sequences decoded; anything else (including malformed escapes) kept as is.
    static func percentDecoded(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = PercentEncoding.hexValue(bytes[index + 1]),
                let low = PercentEncoding.hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
