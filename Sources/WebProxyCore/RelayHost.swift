internal import CWebProxyIDN2

/// The canonical public hostname H of a WEB relay: lowercase A-label form, at least two
/// labels, never an IP address. Port and scheme are implied (HTTPS on 443).
///
/// Canonicalization follows PROTOCOL.md §2.3 (Telegram Desktop's
/// `NormalizeWebProxyHost`); H is public, so `description` shows it.
public struct RelayHost: Hashable, Sendable, CustomStringConvertible {
    /// The canonical hostname, e.g. `xn--bcher-kva.example`.
    public let name: String

    static let maxLength = 253
    static let maxLabelLength = 63
    /// Bounds the work done on user input before IDNA; far above any valid hostname.
    static let maxInputLength = 1024

    /// Canonicalizes a user-supplied hostname (white space and a leading `https://` allowed).
    public init(_ input: some StringProtocol) throws(IdentityError) {
        var text = input.trimmingWhitespace
        if Self.hasPrefix(text, caseInsensitive: "https://") {
            text = text.dropFirst("https://".count)
        } else if Self.hasPrefix(text, caseInsensitive: "http://") {
            throw IdentityError(.insecureScheme, """
                WEB relays are reached over HTTPS only: give the hostname alone or with \
                https://, not http://.
                """)
        }
        guard !text.isEmpty else {
            throw IdentityError(.invalidHost, "The relay hostname is empty; enter e.g. proxy.example.com.")
        }
        guard text.utf8.count <= Self.maxInputLength else {
            throw Self.tooLongError
        }
        if text.unicodeScalars.contains(where: { ":/?#@".unicodeScalars.contains($0) }) {
            throw IdentityError(.invalidHost, """
                Give the relay as a bare hostname: no port (WEB relays always use 443), path, \
                query, fragment or user name.
                """)
        }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw IdentityError(.invalidHost, "The relay hostname contains control characters.")
        }
        if text.hasSuffix(".") {
            throw Self.trailingDotError
        }
        let ascii = try Self.toASCII(text)
        try Self.validate(ascii)
        name = ascii
    }

    public var description: String { name }

    /// IDNA ToASCII (UTS #46 non-transitional, via libidn2) followed by ASCII lowercasing.
    ///
    /// Pure-ASCII names without `xn--` labels are their own A-label form; they skip libidn2
    /// so that IDNA2008's hyphen rule does not refuse valid DNS names like `r3--a.example`
    /// (UTS #46 as browsers use it has CheckHyphens off).
    private static func toASCII(_ text: Substring) throws(IdentityError) -> String {
        let lowered = String(decoding: text.utf8.map(asciiLowercased), as: UTF8.self)
        let needsIDNA = !text.utf8.allSatisfy { $0 < 0x80 }
            || lowered.split(separator: ".", omittingEmptySubsequences: false)
                .contains { $0.hasPrefix("xn--") }
        guard needsIDNA else { return lowered }

        var output: UnsafeMutablePointer<CChar>?
        let flags = Int32(IDN2_NONTRANSITIONAL.rawValue | IDN2_NFC_INPUT.rawValue)
        let status = idn2_to_ascii_8z(String(text), &output, flags)
        defer { idn2_free(output) }
        guard status == Int32(IDN2_OK.rawValue), let output else {
            let reason = String(cString: idn2_strerror(status))
            throw IdentityError(.invalidHost, """
                The relay hostname is not a valid internationalized domain name (\(reason)).
                """)
        }
        return String(decoding: String(cString: output).utf8.map(asciiLowercased), as: UTF8.self)
    }

    /// Rules 3 to 5 of PROTOCOL.md §2.3 on the A-label form.
    private static func validate(_ name: String) throws(IdentityError) {
        guard !name.isEmpty else {
            throw IdentityError(.invalidHost, "The relay hostname is empty; enter e.g. proxy.example.com.")
        }
        guard name.utf8.count <= maxLength else { throw tooLongError }
        if name.hasSuffix(".") { throw trailingDotError }
        let labels = Array(name.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else {
            throw IdentityError(.invalidHost, """
                The relay hostname must be a public name with a dot (like proxy.example.com), \
                not a single label such as localhost.
                """)
        }
        for label in labels {
            guard !label.isEmpty else {
                throw IdentityError(.invalidHost, """
                    The relay hostname has an empty label (two dots in a row).
                    """)
            }
            guard label.count <= maxLabelLength else {
                throw IdentityError(.invalidHost, """
                    Each part of the relay hostname between dots must be at most 63 characters.
                    """)
            }
            guard label.allSatisfy(isLetterDigitHyphen) else {
                throw IdentityError(.invalidHost, """
                    The relay hostname may only contain letters, digits, hyphens and dots.
                    """)
            }
            guard label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                throw IdentityError(.invalidHost, """
                    No part of the relay hostname may start or end with a hyphen.
                    """)
            }
        }
        if let last = labels.last, endsInANumber(last) {
            throw IdentityError(.ipAddressHost, """
                The relay must be given by its hostname, not an IP address: the hostname is \
                part of the relay's identity and of its TLS certificate.
                """)
        }
    }

    /// WHATWG URL "ends in a number": the last label is all decimal digits or `0x` hex.
    /// Every IPv4 spelling a URL parser accepts ends in such a label; IPv6 literals need
    /// `:` or `[`, which are already refused, so this rejects every IP literal.
    private static func endsInANumber(_ label: ArraySlice<UInt8>) -> Bool {
        if label.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) { return true }
        guard label.count >= 2, label.first == UInt8(ascii: "0"),
              label.dropFirst().first == UInt8(ascii: "x")
        else { return false }
        return label.dropFirst(2).allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
    }

    private static func isLetterDigitHyphen(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 0x20 : byte
    }

    private static func hasPrefix(_ text: Substring, caseInsensitive prefix: String) -> Bool {
        text.utf8.count >= prefix.utf8.count
            && zip(text.utf8, prefix.utf8).allSatisfy { asciiLowercased($0) == $1 }
    }

    private static let tooLongError = IdentityError(.invalidHost, """
        The relay hostname is longer than 253 characters.
        """)

    private static let trailingDotError = IdentityError(.invalidHost, """
        Remove the trailing dot from the relay hostname.
        """)
}
