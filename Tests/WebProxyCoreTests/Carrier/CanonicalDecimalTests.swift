import Testing

@testable import WebProxyCore

@Suite struct CanonicalDecimalTests {
    @Test(arguments: [
        ("0", UInt64(0)), ("1", 1), ("9", 9), ("10", 10), ("2097152", 2_097_152), ("16777215", 16_777_215),
        ("18446744073709551615", UInt64.max),
    ])
    func acceptsCanonicalSpellings(text: String, value: UInt64) {
        #expect(CanonicalDecimal.parse(text) == value)
        #expect(CanonicalDecimal.parse(bytes: Array(text.utf8)) == value)
    }

    @Test(arguments: [
        "", "00", "01", "02", "007", "+1", "-1", " 1", "1 ", "1\t", "1a", "0x10", "1_000", "1e3", "1.0",
        "18446744073709551616", "99999999999999999999", "100000000000000000000", "\u{0663}", "１",
    ])
    func rejectsEverythingElse(text: String) {
        #expect(CanonicalDecimal.parse(text) == nil)
    }

    @Test func honoursTheMaximum() {
        #expect(CanonicalDecimal.parse("16777215", maximum: 0xFF_FFFF) == 0xFF_FFFF)
        #expect(CanonicalDecimal.parse("16777216", maximum: 0xFF_FFFF) == nil)
        #expect(CanonicalDecimal.parse("0", maximum: 0) == 0)
    }

    @Test func boundsTheLengthBeforeReading() {
        #expect(CanonicalDecimal.parse(String(repeating: "1", count: 10_000)) == nil)
    }
}
