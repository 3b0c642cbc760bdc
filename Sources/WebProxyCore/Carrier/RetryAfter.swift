/// A parsed `Retry-After` header: delta-seconds or an HTTP-date (RFC 9110 10.2.3).
public enum RetryAfter: Hashable, Sendable {
    case seconds(UInt64)
    /// An HTTP-date, as seconds since the Unix epoch.
    case date(unixSeconds: Int64)

    /// Longest delta-seconds spelling accepted; larger waits are capped anyway.
    static let maxDigits = 10

    /// Nil when the value is neither 1*DIGIT nor an IMF-fixdate (the obsolete RFC 850 and
    /// asctime forms are not read: the caller falls back to its backoff).
    public init?(headerValue: String) {
        let bytes = Array(headerValue.utf8)
        if !bytes.isEmpty, bytes.count <= RetryAfter.maxDigits,
            bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        {
            self = .seconds(bytes.reduce(0) { $0 * 10 + UInt64($1 - UInt8(ascii: "0")) })
        } else if let unix = IMFFixdate.unixSeconds(bytes) {
            self = .date(unixSeconds: unix)
        } else {
            return nil
        }
    }

    /// The wait this header asks for, given the wall clock `wallClockSeconds` (Unix seconds)
    /// at which the response arrived; a date in the past means no wait.
    public func delay(wallClockSeconds: Int64) -> Duration {
        switch self {
        case .seconds(let seconds):
            return .seconds(Int64(clamping: seconds))
        case .date(let unix):
            let (difference, overflow) = unix.subtractingReportingOverflow(wallClockSeconds)
            return .seconds(overflow ? (unix > wallClockSeconds ? Int64.max : 0) : max(0, difference))
        }
    }
}

/// IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
enum IMFFixdate {
    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// Seconds since the Unix epoch, or nil when `bytes` is not a valid IMF-fixdate.
    static func unixSeconds(_ bytes: [UInt8]) -> Int64? {
        guard bytes.count == 29,
            dayNames.contains(where: { Array($0.utf8) == Array(bytes[0..<3]) }),
            bytes[3] == UInt8(ascii: ","), bytes[4] == UInt8(ascii: " "), bytes[7] == UInt8(ascii: " "),
            bytes[11] == UInt8(ascii: " "), bytes[16] == UInt8(ascii: " "),
            bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"),
            Array(bytes[25...]) == Array(" GMT".utf8),
            let monthIndex = monthNames.firstIndex(where: { Array($0.utf8) == Array(bytes[8..<11]) }),
            let day = digits(bytes[5..<7]), let year = digits(bytes[12..<16]),
            let hour = digits(bytes[17..<19]), let minute = digits(bytes[20..<22]),
            let second = digits(bytes[23..<25])
        else { return nil }
        let month = monthIndex + 1
        guard day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 61 else {
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    private static func digits(_ slice: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in slice {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (year 0...9999 here).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
