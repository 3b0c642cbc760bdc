/// A SHA-256 hash of a certificate's SubjectPublicKeyInfo, written in base64
/// (`openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`).
/// Pins are public values, so `description` shows them.
public struct SPKIPin: Hashable, Sendable, CustomStringConvertible {
    /// The 32 hash bytes.
    public let bytes: [UInt8]

    /// Parses standard or URL-safe base64, padded or not, of exactly 32 bytes.
    public init(parsing text: some StringProtocol) throws(ConfigurationValueError) {
        guard let decoded = Self.decodeBase64(Array(text.utf8)) else {
            throw ConfigurationValueError(
                "A pin-sha256 value is not base64",
                hint: "give the base64 of the SHA-256 of the certificate's public key, 44 characters")
        }
        guard decoded.count == 32 else {
            throw ConfigurationValueError(
                "A pin-sha256 value decodes to \(decoded.count) bytes; a SHA-256 hash is 32",
                hint: "give the base64 of the SHA-256 of the certificate's public key, 44 characters")
        }
        bytes = decoded
    }

    /// Padded standard base64, the usual spelling of HPKP-style pins.
    public var description: String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * $1.offset) }
            for position in 0..<4 {
                output.append(position <= chunk.count
                    ? alphabet[Int(value >> (18 - 6 * position) & 0x3F)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Strict base64 (either alphabet, optional `=` padding, no white space); nil when
    /// malformed, including non-zero bits left over in the last character.
    private static func decodeBase64(_ characters: [UInt8]) -> [UInt8]? {
        var body = characters[...]
        while body.last == UInt8(ascii: "=") { body = body.dropLast() }
        let padding = characters.count - body.count
        guard padding <= 2, padding == 0 || characters.count % 4 == 0, body.count % 4 != 1 else {
            return nil
        }
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for character in body {
            guard let value = sextet(character) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return accumulator == 0 ? output : nil
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
