import WebProxyCore

/// The command line of `webproxyd-bench`, parsed strictly: an unknown word or a bad value is
/// a usage error (exit 64), never a benchmark run with defaults.
enum BenchCommand: Equatable {
    case bench(quick: Bool, output: String, carriers: [CarrierMode])
    case soak(minutes: Double)
    case profile(path: String, mebibytes: Int)
    case wan(seconds: Double, output: String, carriers: [CarrierMode])
    case help

    static let usage = """
        USAGE: webproxyd-bench [--quick] [--out FILE] [--carriers https,websocket,...]
               webproxyd-bench soak [--minutes N]
               webproxyd-bench profile [--path tunnel|https|https-lanes|websocket|websocket-lanes] [--mib N]
               webproxyd-bench wan [--seconds N] [--out FILE] [--carriers https,websocket,...]

        Benchmarks webproxyd against a direct TCP connection and a plain TLS tunnel on loopback
        and writes a Markdown report (default .build/bench/report.md); `soak` runs a long
        mixed load and checks memory; `profile` pushes N MiB through one path for a profiler;
        `wan` measures latency under load on an emulated WAN (25 ms each way, 20 Mbit/s,
        1 MiB buffer per flow), the https carriers over h2 and over HTTP/1.1.
        scripts/bench builds the release binaries and runs this.

        OPTIONS:
          --quick              Smaller transfers and fewer round trips.
          --out FILE           Where the report is written.
          --carriers LIST      Comma-separated carriers to measure (default all four).
          --minutes N          Soak duration (default 10).
          --path NAME          Profile path (default websocket).
          --mib N              Profile volume in MiB (default 8).
          --seconds N          WAN: how long each load pattern runs (default 10).
          --help               Show this help.
        """

    struct UsageError: Error {
        let message: String
    }

    init(parsing arguments: [String]) throws(UsageError) {
        if arguments.contains("--help") || arguments.contains("-h") {
            self = .help
            return
        }
        var words = arguments[...]
        let mode = words.first.flatMap { ["soak", "profile", "wan"].contains($0) ? $0 : nil }
        if mode != nil { words = words.dropFirst() }
        let flags: Set<String> = ["--quick"]
        let valued: Set<String> =
            switch mode {
            case "soak": ["--minutes"]
            case "profile": ["--path", "--mib"]
            case "wan": ["--seconds", "--out", "--carriers"]
            default: ["--out", "--carriers"]
            }
        var values: [String: String] = [:]
        var quick = false
        while let word = words.popFirst() {
            if mode == nil, flags.contains(word) {
                quick = true
            } else if valued.contains(word) {
                guard let value = words.popFirst() else { throw UsageError(message: "\(word) needs a value") }
                guard values.updateValue(value, forKey: word) == nil else { throw UsageError(message: "\(word) is given twice") }
            } else {
                throw UsageError(message: "unknown argument '\(word)'")
            }
        }
        switch mode {
        case "soak":
            let text = values["--minutes"] ?? "10"
            guard let minutes = Double(text), minutes > 0 else { throw UsageError(message: "--minutes needs a positive number") }
            self = .soak(minutes: minutes)
        case "profile":
            let path = values["--path"] ?? "websocket"
            guard path == "tunnel" || CarrierMode(rawValue: path) != nil else { throw UsageError(message: "unknown --path '\(path)'") }
            guard let mebibytes = Int(values["--mib"] ?? "8"), mebibytes > 0 else { throw UsageError(message: "--mib needs a positive whole number") }
            self = .profile(path: path, mebibytes: mebibytes)
        case "wan":
            guard let seconds = Double(values["--seconds"] ?? "10"), seconds >= 3 else {
                throw UsageError(message: "--seconds needs a number of at least 3")
            }
            self = .wan(
                seconds: seconds, output: values["--out"] ?? ".build/bench/wan.md",
                carriers: try Self.carriers(values["--carriers"]))
        default:
            self = .bench(quick: quick, output: values["--out"] ?? ".build/bench/report.md", carriers: try Self.carriers(values["--carriers"]))
        }
    }

    private static func carriers(_ list: String?) throws(UsageError) -> [CarrierMode] {
        var carriers: [CarrierMode] = []
        for name in (list ?? CarrierMode.allCases.map(\.rawValue).joined(separator: ",")).split(separator: ",") {
            guard let carrier = CarrierMode(rawValue: String(name)) else { throw UsageError(message: "unknown carrier '\(name)'") }
            carriers.append(carrier)
        }
        guard !carriers.isEmpty else { throw UsageError(message: "--carriers names no carrier") }
        return carriers
    }
}
