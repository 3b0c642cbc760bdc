/// Canonical decimal numbers as the relay writes and demands them in headers
/// (`X-Up-Seq`, `X-Down-Cursor`, `X-Lane-ID`, ...): ASCII digits only, no sign, no
/// leading zeros except the number `0` itself, no surrounding space.
public enum CanonicalDecimal {
    /// Longest accepted spelling; enough for any `UInt64`.
    public static let maxDigits = 20

    /// The value of `text`, or nil when it is not canonical or exceeds `maximum`.
    public static func parse(_ text: some StringProtocol, maximum: UInt64 = .max) -> UInt64? {
        parse(bytes: text.utf8, maximum: maximum)
    }

    /// The value of ASCII `bytes`, or nil when they are not canonical or exceed `maximum`.
    public static func parse(bytes: some Collection<UInt8>, maximum: UInt64 = .max) -> UInt64? {
        guard let first = bytes.first, bytes.count <= maxDigits else { return nil }
        if first == UInt8(ascii: "0") { return bytes.count == 1 ? 0 : nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value <= maximum ? value : nil
    }
}
