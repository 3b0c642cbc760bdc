import Testing

@testable import WebProxyCore

@Suite struct RetryAfterTests {
    @Test(arguments: [("0", UInt64(0)), ("1", 1), ("30", 30), ("120", 120), ("007", 7), ("9999999999", 9_999_999_999)])
    func readsDeltaSeconds(text: String, seconds: UInt64) {
        #expect(RetryAfter(headerValue: text) == .seconds(seconds))
    }

    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", Int64(784_111_777)),
        ("Mon, 30 Nov 2026 06:40:09 GMT", 1_796_020_809),
        ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
    ])
    func readsIMFFixdates(text: String, unix: Int64) {
        #expect(RetryAfter(headerValue: text) == .date(unixSeconds: unix))
    }

    @Test(arguments: [
        "", " 1", "1 ", "-1", "+1", "1.5", "12345678901", "soon",
        "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
        "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT", "Wed, 29 Feb 2023 00:00:00 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT ", "Sun, 06 Nov 19x4 08:49:37 GMT",
    ])
    func rejectsEverythingElse(text: String) {
        #expect(RetryAfter(headerValue: text) == nil)
    }

    @Test func resolvesDatesAgainstTheInjectedWallClock() {
        let date = RetryAfter.date(unixSeconds: 1_796_020_816)
        #expect(date.delay(wallClockSeconds: 1_796_020_809) == .seconds(7))
        #expect(date.delay(wallClockSeconds: 1_796_020_816) == .zero)
        #expect(date.delay(wallClockSeconds: 1_796_020_900) == .zero)
        #expect(RetryAfter.date(unixSeconds: .max).delay(wallClockSeconds: .min) == .seconds(Int64.max))
        #expect(RetryAfter.date(unixSeconds: .min).delay(wallClockSeconds: .max) == .zero)
        #expect(RetryAfter.seconds(5).delay(wallClockSeconds: 0) == .seconds(5))
    }
}
