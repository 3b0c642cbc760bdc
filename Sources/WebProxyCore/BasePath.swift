/// The path P a relay is mounted under (PROTOCOL.md §2.4, Telegram Desktop's
/// `NormalizeWebProxyBasePath`): `/`-separated segments of `[A-Za-z0-9][A-Za-z0-9_-]*`,
/// 1...128 characters, case-sensitive, stored without surrounding slashes.
///
/// A relay at the root has no base path (`BasePath?` is nil).
public struct BasePath: Hashable, Sendable, CustomStringConvertible {
    /// The canonical path without leading or trailing slash, e.g. `two/segments`.
    public let value: String

    static let maxLength = 128

    /// Normalizes a user-supplied base path: trims white space, strips one leading and one
    /// trailing `/`, then checks the rules. An empty result is an error.
    public init(_ input: some StringProtocol) throws(IdentityError) {
        var text = input.trimmingWhitespace
        if text.hasPrefix("/") { text = text.dropFirst() }
        if text.hasSuffix("/") { text = text.dropLast() }
        guard !text.isEmpty else {
            throw IdentityError(.invalidBasePath, """
                The base path is empty; leave it out entirely for a relay mounted at the root.
                """)
        }
        guard text.utf8.count <= Self.maxLength else {
            throw IdentityError(.invalidBasePath, "The base path is longer than 128 characters.")
        }
        for segment in text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard let first = segment.first else {
                throw IdentityError(.invalidBasePath, """
                    The base path has an empty segment (two slashes in a row).
                    """)
            }
            guard Self.isLetterOrDigit(first) else {
                throw IdentityError(.invalidBasePath, """
                    Each base path segment must start with a letter or digit.
                    """)
            }
            guard segment.allSatisfy({ Self.isLetterOrDigit($0) || $0 == UInt8(ascii: "_")
                || $0 == UInt8(ascii: "-") })
            else {
                throw IdentityError(.invalidBasePath, """
                    The base path may only contain letters, digits, '_', '-' and '/' between \
                    segments (no spaces, dots or percent escapes).
                    """)
            }
        }
        value = String(text)
    }

    /// Like `init(_:)`, but a blank input or a lone `/` means "mounted at the root" (nil).
    public static func optional(_ input: some StringProtocol) throws(IdentityError) -> BasePath? {
        let text = input.trimmingWhitespace
        if text.isEmpty || text == "/" { return nil }
        return try BasePath(text)
    }

    /// `/P`: what goes before `/?bridge=` and `/api/v1` in request paths.
    public var pathPrefix: String { "/" + value }

    public var description: String { value }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            false
        }
    }
}
