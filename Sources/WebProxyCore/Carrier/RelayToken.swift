/// A bootstrap or session token: 43 characters of canonical unpadded base64url encoding
/// 32 bytes. It is a credential, so no description, debug description or mirror shows it.
public struct RelayToken: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The only valid length of a token.
    public static let length = 43

    /// The token text, for building request headers inside the core.
    let text: String

    /// Accepts only a canonical token: exactly 43 base64url characters whose last one
    /// leaves the two unused low bits zero.
    public init?(_ text: some StringProtocol) {
        guard RelayToken.isCanonical(text.utf8) else { return nil }
        self.text = String(text)
    }

    /// Whether `bytes` spell a canonical token.
    static func isCanonical(_ bytes: some Collection<UInt8>) -> Bool {
        guard bytes.count == length else { return false }
        var last: UInt8 = 0
        for byte in bytes {
            guard let value = base64URLValue(byte) else { return false }
            last = value
        }
        // 43 characters carry 258 bits for 256 bits of data: the last two must be zero.
        return last & 0b11 == 0
    }

    private static func base64URLValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    public var description: String { "RelayToken(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
