internal import CWebProxyOpenSSL

/// An MTProxy secret a WEB relay accepts: 16 bytes (plain) or 17 bytes starting 0xdd
/// (padded intermediate). The dd byte is kept: it is part of the capability key.
///
/// The bytes are secret: `description`, `debugDescription` and the mirror show only the
/// kind and length.
public struct ProxySecret: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The raw secret bytes, including the leading 0xdd of a padded secret.
    public let bytes: [UInt8]

    /// The dd prefix byte that marks padded-intermediate mode.
    static let paddedPrefix: UInt8 = 0xDD
    /// The ee prefix byte of FakeTLS secrets, which WEB relays refuse.
    static let fakeTLSPrefix: UInt8 = 0xEE
    /// The marker byte base-path links put before the secret so old clients reject them.
    static let basePathLinkMarker: UInt8 = 0x70
    static let plainLength = 16

    /// Validates raw secret bytes: 16 bytes, or 17 bytes starting with 0xdd.
    public init(bytes: [UInt8]) throws(IdentityError) {
        if bytes.count == Self.plainLength {
            self.bytes = bytes
            return
        }
        switch bytes.first {
        case Self.fakeTLSPrefix? where bytes.count > Self.plainLength:
            throw Self.fakeTLSError
        case Self.paddedPrefix? where bytes.count == Self.plainLength + 1:
            self.bytes = bytes
        case Self.basePathLinkMarker? where bytes.count == Self.plainLength + 1:
            throw IdentityError(.invalidSecret, """
                This secret carries the base-path link marker (0x70); it is only valid in a \
                link whose server is host%2Fpath. Use the relay's plain or dd secret instead.
                """)
        case _ where bytes.count == Self.plainLength + 1:
            throw IdentityError(.invalidSecret, """
                A 17-byte secret must start with dd (padded mode). Ask the relay operator for \
                the relay's WEB link or its plain (32 hex digit) or dd (34 hex digit) secret.
                """)
        default:
            throw IdentityError(.invalidSecret, """
                The secret decodes to \(bytes.count) bytes; a WEB relay secret is 16 bytes \
                (32 hex digits) or 17 bytes starting with dd (34 hex digits).
                """)
        }
    }

    /// Parses a secret written as 32 or 34 hex digits (any case) or as base64 / base64url,
    /// padded or not. Surrounding white space is ignored.
    public init(parsing text: some StringProtocol) throws(IdentityError) {
        let characters = Array(text.trimmingWhitespace.utf8)
        guard !characters.isEmpty else {
            throw IdentityError(.invalidSecret, "The secret is empty; paste the relay's secret.")
        }
        let isHex = characters.allSatisfy { PercentEncoding.hexValue($0) != nil }
        if isHex, characters.count == 32 || characters.count == 34 {
            try self.init(bytes: Self.decodeHex(characters))
            return
        }
        if isHex, characters.count > 34, characters.count % 2 == 0,
           Self.decodeHex(characters[0..<2]).first == Self.fakeTLSPrefix
        {
            throw Self.fakeTLSError
        }
        guard let decoded = Base64URL.decode(
            characters, alphabets: [.standard, .url], allowPadding: true)
        else {
            if isHex {
                throw IdentityError(.invalidSecret, """
                    The secret has \(characters.count) hex digits; a WEB relay secret has 32 \
                    (plain) or 34 starting with dd (padded).
                    """)
            }
            throw IdentityError(.invalidSecret, """
                The secret is neither 32/34 hex digits nor base64/base64url. Copy the secret \
                again from the relay's WEB link.
                """)
        }
        try self.init(bytes: decoded)
    }

    /// Parses the secret of a base-path link: `base64url_nopad(0x70 || S)` (padding tolerated).
    public init(basePathLinkValue text: some StringProtocol) throws(IdentityError) {
        guard let decoded = Base64URL.decode(
            Array(text.trimmingWhitespace.utf8), alphabets: .url, allowPadding: true),
            decoded.first == Self.basePathLinkMarker
        else {
            throw IdentityError(.invalidSecret, """
                A link with a base path (server=host%2Fpath) must carry the secret as base64url \
                of 0x70 followed by the secret. Copy the relay's WEB link again.
                """)
        }
        try self.init(bytes: Array(decoded.dropFirst()))
    }

    /// True for a padded-intermediate (dd) secret.
    public var isPadded: Bool { bytes.count == Self.plainLength + 1 }

    /// Lowercase hex of all bytes (dd included): the spelling of root links and of the
    /// local `tg://proxy` link.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `base64url_nopad(0x70 || bytes)`: the secret spelling of base-path links.
    public var basePathLinkValue: String {
        Base64URL.encode([Self.basePathLinkMarker] + bytes)
    }

    public var description: String {
        "ProxySecret(\(isPadded ? "dd" : "plain"), \(bytes.count) bytes)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// Constant-time comparison, so comparing secrets leaks nothing through timing.
    public static func == (lhs: ProxySecret, rhs: ProxySecret) -> Bool {
        guard lhs.bytes.count == rhs.bytes.count else { return false }
        return lhs.bytes.withUnsafeBytes { left in
            rhs.bytes.withUnsafeBytes { right in
                CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }

    private static let fakeTLSError = IdentityError(.fakeTLSSecret, """
        This is an ee (FakeTLS) secret, which WEB relays do not accept: a WEB relay needs a \
        plain or dd secret. Ask the relay operator for the relay's WEB link or its plain secret.
        """)

    /// Decodes an even number of characters already checked to be hex digits.
    private static func decodeHex(_ characters: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(characters.count / 2)
        var high: UInt8?
        for character in characters {
            let value = PercentEncoding.hexValue(character) ?? 0
            if let pending = high {
                output.append(pending << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return output
    }
}
