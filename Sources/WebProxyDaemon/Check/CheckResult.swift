/// A stage of `webproxyd check`, in the order they run; each failure has its exit status.
enum CheckStage: String, CaseIterable, Sendable {
    case resolve, tcp, tls, bridge, session, carrier, stream

    /// The exit status when this stage fails (10…16).
    var exitCode: Int32 {
        switch self {
        case .resolve: 10
        case .tcp: 11
        case .tls: 12
        case .bridge: 13
        case .session: 14
        case .carrier: 15
        case .stream: 16
        }
    }
}

/// How one stage went: its verdict, how long it took and a line for a person. The detail
/// never holds the secret, a capability, a token, the bridge URL or payload bytes.
struct CheckResult: Sendable, Equatable {
    enum Verdict: Sendable, Equatable {
        case passed, warning, failed
    }

    let stage: CheckStage
    let verdict: Verdict
    let elapsed: Duration?
    let detail: String

    static func passed(_ stage: CheckStage, _ elapsed: Duration?, _ detail: String) -> CheckResult {
        CheckResult(stage: stage, verdict: .passed, elapsed: elapsed, detail: detail)
    }

    static func failed(_ stage: CheckStage, _ elapsed: Duration?, _ detail: String) -> CheckResult {
        CheckResult(stage: stage, verdict: .failed, elapsed: elapsed, detail: detail)
    }

    /// `✓ tls      38 ms  TLSv1.3 …`; `plain` uses `ok`/`!!`/`FAIL` instead of symbols.
    func line(plain: Bool) -> String {
        let mark: String
        switch verdict {
        case .passed: mark = plain ? "ok  " : "✓"
        case .warning: mark = plain ? "warn" : "!"
        case .failed: mark = plain ? "FAIL" : "✗"
        }
        let name = stage.rawValue + String(repeating: " ", count: max(0, 8 - stage.rawValue.count))
        let time = elapsed.map { "\(Self.milliseconds($0)) ms" } ?? "-"
        return "\(mark) \(name) \(String(repeating: " ", count: max(0, 8 - time.count)))\(time)  \(detail)"
    }

    /// Whole milliseconds, rounded.
    static func milliseconds(_ duration: Duration) -> Int {
        Int((duration / .milliseconds(1)).rounded())
    }

    /// The exit status of a run: the first failed stage's code, else 0.
    static func exitCode(of results: [CheckResult]) -> Int32 {
        results.first { $0.verdict == .failed }?.stage.exitCode ?? 0
    }
}
