/// Byte classes and small parsers from RFC 9110/9112 shared by the HTTP codecs.
enum HTTPSyntax {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// `tchar`: the characters of a token (method, header name).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
            UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(isTokenByte)
    }

    /// `field-vchar / SP / HTAB`: any byte but the controls (and DEL).
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= space && byte != 0x7F)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

    /// A header value we may put on the wire: field bytes only, no leading or trailing
    /// whitespace (a receiver would strip it, so the value would not arrive as given).
    static func isSerializableValue(_ value: String) -> Bool {
        let bytes = value.utf8
        guard bytes.allSatisfy(isFieldValueByte) else { return false }
        if let first = bytes.first, isWhitespace(first) { return false }
        if let last = bytes.last, isWhitespace(last) { return false }
        return true
    }

    /// A request target: visible ASCII only, non-empty.
    static func isTarget(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { $0 > space && $0 < 0x7F }
    }

    /// `1*DIGIT` that fits in an `Int`.
    static func decimal(_ bytes: some Collection<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !o1 && !o2 else { return nil }
            value = sum
        }
        return value
    }

    static func hexDigitValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }

    /// Splits a comma-separated field value into trimmed, non-empty elements.
    static func listElements(_ value: String) -> [Substring] {
        value.split(separator: ",").compactMap { element in
            let trimmed = element.drop(while: { $0 == " " || $0 == "\t" })
            let end = trimmed.lastIndex(where: { $0 != " " && $0 != "\t" })
            guard let end else { return nil }
            return trimmed[...end]
        }
    }

    /// Whether a comma-separated field value holds `token`, compared case-insensitively.
    static func list(_ value: String, containsToken token: String) -> Bool {
        listElements(value).contains { $0.lowercased() == token }
    }
}
