/// Strict decoding of one JSON string literal embedded in a larger text (the bridge page's
/// data statement, the status document), without Foundation.
public enum JSONStringLiteral {
    public enum Failure: Error {
        /// No opening quote at the start position.
        case notALiteral
        /// An opening quote, but the literal is unterminated, too long, or not valid JSON.
        case invalid
    }

    /// Decodes the literal that starts at `index` (at its opening quote), reading at most
    /// `maxBytes` source bytes, and moves `index` past the closing quote.
    public static func decode(_ text: [UInt8], at index: inout Int, maxBytes: Int) throws(Failure) -> String {
        guard index < text.count, text[index] == UInt8(ascii: "\"") else { throw .notALiteral }
        let limit = min(text.count, index + maxBytes)
        var position = index + 1
        var decoded: [UInt8] = []
        while true {
            guard position < limit else { throw .invalid }
            let byte = text[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: decoded, as: UTF8.self) else { throw .invalid }
                index = position
                return string
            case UInt8(ascii: "\\"):
                guard position < limit else { throw .invalid }
                let escape = text[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try unicodeEscape(text, at: &position, limit: limit)
                    decoded.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: throw .invalid
                }
            case 0..<0x20:
                throw .invalid
            default:
                decoded.append(byte)
            }
        }
    }

    /// Reads the hex digits after `\u` (and a following `\uXXXX` low surrogate when the
    /// first is a high surrogate). Lone surrogates are invalid.
    private static func unicodeEscape(_ text: [UInt8], at position: inout Int, limit: Int) throws(Failure)
        -> Unicode.Scalar
    {
        let first = try hex4(text, at: &position, limit: limit)
        switch first {
        case 0xD800...0xDBFF:
            guard position + 1 < limit, text[position] == UInt8(ascii: "\\"),
                text[position + 1] == UInt8(ascii: "u")
            else { throw .invalid }
            position += 2
            let second = try hex4(text, at: &position, limit: limit)
            guard (0xDC00...0xDFFF).contains(second),
                let scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            else { throw .invalid }
            return scalar
        default:
            guard let scalar = Unicode.Scalar(first) else { throw .invalid }
            return scalar
        }
    }

    private static func hex4(_ text: [UInt8], at position: inout Int, limit: Int) throws(Failure) -> UInt32 {
        guard position + 4 <= limit else { throw .invalid }
        var value: UInt32 = 0
        for byte in text[position..<position + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .invalid
            }
            value = value << 4 | UInt32(digit)
        }
        position += 4
        return value
    }
}
