import WebProxyCore
import WebProxyTestRelay

/// The options of `webproxyd-demo`, parsed from `--name VALUE` or `--name=VALUE`.
struct DemoOptions: Equatable {
    var bulkBytes = 128 << 20
    var bulkTimeLimit: Duration = .seconds(3)
    var roundTrips = 200
    /// Run this carrier only (nil: all four).
    var carrier: CarrierMode?

    init(parsing arguments: [String]) throws(DemoFailure) {
        var seen: Set<String> = []
        var index = 0
        while index < arguments.count {
            var name = arguments[index]
            var value: String?
            if name.hasPrefix("--"), let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard ["--bytes", "--seconds", "--round-trips", "--carrier"].contains(name) else {
                throw DemoFailure(name.hasPrefix("-") ? "unknown option '\(name)'" : "unexpected argument '\(name)'")
            }
            guard seen.insert(name).inserted else { throw DemoFailure("\(name) is given twice") }
            if value == nil {
                index += 1
                guard index < arguments.count else { throw DemoFailure("\(name) needs a value") }
                value = arguments[index]
            }
            try apply(name, value ?? "")
            index += 1
        }
    }

    private mutating func apply(_ name: String, _ value: String) throws(DemoFailure) {
        switch name {
        case "--bytes":
            guard let bytes = Self.size(value), bytes > 0, bytes <= 64 << 30 else {
                throw DemoFailure("--bytes wants a size from 1 to 64G, such as 512K or 32M")
            }
            bulkBytes = bytes
        case "--seconds":
            guard let seconds = Double(value), seconds > 0, seconds <= 3600 else {
                throw DemoFailure("--seconds wants a number of seconds from above 0 to 3600, such as 3 or 0.5")
            }
            bulkTimeLimit = .milliseconds(Int64((seconds * 1000).rounded(.up)))
        case "--round-trips":
            guard let count = Int(value), count >= 1, count <= 1_000_000 else {
                throw DemoFailure("--round-trips wants a count from 1 to 1000000")
            }
            roundTrips = count
        default:
            guard let mode = CarrierMode(rawValue: value) else {
                let names = CarrierMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw DemoFailure("--carrier wants one of \(names)")
            }
            carrier = mode
        }
    }

    /// `123`, `64K`, `32M`, `1G` (binary units; a trailing `iB` or `B` is accepted).
    private static func size(_ text: String) -> Int? {
        var digits = Substring(text.uppercased())
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            break
        }
        let shift: Int
        switch digits.last {
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        default: shift = 0
        }
        if shift > 0 { digits = digits.dropLast() }
        guard let value = Int(digits), value >= 0, value <= Int.max >> shift else { return nil }
        return value << shift
    }
}
