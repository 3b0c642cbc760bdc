/// Canonical decimal header values (`X-Up-Seq`, `X-Down-Cursor`, `X-Lane-ID`, lane ids in
/// subprotocols): ASCII digits, no sign, no leading zero unless the value is `0`.
enum CanonicalDecimal {
    static func parse(_ text: some StringProtocol, max: UInt64 = .max) -> UInt64? {
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.count <= 20,
            digits.count == 1 || digits[0] != UInt8(ascii: "0")
        else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value <= max ? value : nil
    }
}
