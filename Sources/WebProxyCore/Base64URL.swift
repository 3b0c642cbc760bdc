/// Base64url (RFC 4648 section 5) with strict, canonical decoding, plus the relaxed decoder
/// secrets need (either alphabet, padding optional).
public enum Base64URL {
    private static let urlAlphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes` as base64url without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var accumulator: UInt32 = 0
        var bitCount = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bitCount += 8
            while bitCount >= 6 {
                bitCount -= 6
                output.append(urlAlphabet[Int((accumulator >> UInt32(bitCount)) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bitCount)) - 1
        }
        if bitCount > 0 {
            output.append(urlAlphabet[Int((accumulator << UInt32(6 - bitCount)) & 0x3F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes canonical unpadded base64url (the spelling `encode` produces); nil otherwise.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8), alphabets: .url, allowPadding: false)
    }

    /// Which alphabet(s) a decoder accepts. A text may never mix the two.
    struct Alphabets: OptionSet {
        let rawValue: UInt8
        static let standard = Alphabets(rawValue: 1)
        static let url = Alphabets(rawValue: 2)
    }

    /// Decodes base64 in the given alphabets; padding, when allowed, is optional but must
    /// be exact if present. Trailing bits must be zero (one spelling per byte string).
    static func decode(_ text: [UInt8], alphabets: Alphabets, allowPadding: Bool) -> [UInt8]? {
        var characters = text[...]
        var padding = 0
        while characters.last == UInt8(ascii: "=") {
            characters.removeLast()
            padding += 1
        }
        let remainder = characters.count % 4
        if remainder == 1 { return nil }
        if padding > 0 {
            guard allowPadding, text.count % 4 == 0, padding == (4 - remainder) % 4 else {
                return nil
            }
        }
        var used: Alphabets = []
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bitCount = 0
        for character in characters {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62; used.insert(.url)
            case UInt8(ascii: "_"): value = 63; used.insert(.url)
            case UInt8(ascii: "+"): value = 62; used.insert(.standard)
            case UInt8(ascii: "/"): value = 63; used.insert(.standard)
            default: return nil
            }
            accumulator = (accumulator << 6) | value
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                output.append(UInt8((accumulator >> UInt32(bitCount)) & 0xFF))
                accumulator &= (1 << UInt32(bitCount)) - 1
            }
        }
        guard alphabets.isSuperset(of: used), used != [.standard, .url], accumulator == 0 else {
            return nil
        }
        return output
    }
}
