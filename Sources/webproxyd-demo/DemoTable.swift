import WebProxyCore
import WebProxyTestRelay

/// The text `webproxyd-demo` prints: a header that says what was measured, and one row per
/// carrier as it finishes. Only counts and times: no secret, address of the relay or payload.
enum DemoTable {
    static func header(workload: DemoWorkload) -> String {
        let mebibytes = Double(workload.bulkBytes) / 1_048_576
        return """
            webproxyd-demo: local TCP clients → webproxyd → TLS → in-process test relay → echo backend
            Per carrier: \(format(mebibytes, decimals: mebibytes < 10 ? 2 : 0)) MiB echoed over \
            \(workload.connections) connections (at most \(seconds(workload.bulkTimeLimit)) s), then \
            \(workload.roundTrips) round trips of \(DemoWorkload.messageBytes) bytes.
            The backend echoes, so up and down are not measured apart: echo MiB/s is payload per
            second that went up and came back. Every byte is checked (hash per bulk stream).

            \(pad("carrier", 16))\(leftPad("echoed", 11))  \(leftPad("echo MiB/s", 11))\
            \(leftPad("round trip p50", 17))\(leftPad("p95", 10))
            \(String(repeating: "-", count: 67))

            """
    }

    static func row(_ carrier: CarrierMode, _ report: DemoCarrierReport) -> String {
        let name = pad(carrier.rawValue, 16)
        if let failure = report.failure {
            return "\(name)  FAILED: \(failure)\n"
        }
        let echoed = leftPad(format(Double(report.echoedBytes) / 1_048_576, decimals: 1) + " MiB", 11)
        let rate = leftPad(format(report.echoMiBPerSecond, decimals: 1), 11)
        let p50 = leftPad(micros(report.roundTrip(percentile: 50)), 17)
        let p95 = leftPad(micros(report.roundTrip(percentile: 95)), 10)
        return "\(name)\(echoed)  \(rate)\(p50)\(p95)\n"
    }

    private static func micros(_ duration: Duration?) -> String {
        guard let duration else { return "-" }
        let (seconds, attoseconds) = duration.components
        return "\(seconds * 1_000_000 + attoseconds / 1_000_000_000_000) µs"
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return format(Double(seconds) + Double(attoseconds) * 1e-18, decimals: attoseconds == 0 ? 0 : 1)
    }

    /// Fixed-point formatting without Foundation.
    static func format(_ value: Double, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        guard decimals > 0 else { return String(scaled) }
        let whole = scaled / Int(scale)
        let fraction = String(scaled % Int(scale))
        return "\(whole)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(width - text.count, 0))
    }

    private static func leftPad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(width - text.count, 0)) + text
    }
}
