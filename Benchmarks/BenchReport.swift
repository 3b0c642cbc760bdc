import Foundation

/// Turns the results into the Markdown report (figures raw and as a ratio to the TLS tunnel).
struct BenchReport {
    var sizes: BenchSizes
    var quick: Bool
    var paths: [PathResult]
    var memory: MemoryResult
    var peakRSS: Int
    var machine: String

    private var tunnel: PathResult? { paths.first { $0.name == "TLS tunnel" } }
    private var direct: PathResult? { paths.first { $0.name == "direct TCP" } }
    private func path(_ name: String) -> PathResult? { paths.first { $0.name == name } }

    private func cell(_ value: Double, _ baseline: Double?) -> String {
        guard value.isFinite else { return "–" }
        guard let baseline, baseline.isFinite, baseline != 0 else { return format(value) }
        return "\(format(value)) (\(String(format: "%.2f", value / baseline))×)"
    }

    func markdown() -> String {
        var lines: [String] = []
        lines.append("# webproxyd benchmark report")
        lines.append("")
        lines.append("Run: `scripts/bench\(quick ? " --quick" : "")`, \(Date()). Machine: \(machine).")
        lines.append("Bulk: \(sizes.bulkBytes >> 20) MiB per direction on one stream; concurrent: \(sizes.concurrentBytes >> 20) MiB split across the streams (downloads); ping-pong: \(sizes.pingRounds) round trips of 64 bytes after \(sizes.pingRounds / 10) warm-up rounds.")
        lines.append("Every cell: the figure, then its ratio to the TLS tunnel baseline in parentheses.")
        lines.append("")
        let streamColumns = concurrentStreams.map { "\($0) streams MiB/s (per stream min–max)" }.joined(separator: " | ")
        lines.append("| path | upload MiB/s | download MiB/s | \(streamColumns) | RTT p50 µs | p95 µs | p99 µs | CPU-s per GiB (entry thread) |")
        lines.append("|---|---|---|" + String(repeating: "---|", count: concurrentStreams.count) + "---|---|---|---|")
        for result in paths {
            var row = "| \(result.name) | \(cell(result.upload, tunnel?.upload)) | \(cell(result.download, tunnel?.download))"
            for streams in concurrentStreams {
                if let concurrent = result.concurrent[streams] {
                    row += " | \(cell(concurrent.aggregate, tunnel?.concurrent[streams]?.aggregate)) (\(format(concurrent.slowest))–\(format(concurrent.fastest)))"
                } else {
                    row += " | –"
                }
            }
            row += " | \(cell(result.rtt.p50, tunnel?.rtt.p50)) | \(cell(result.rtt.p95, tunnel?.rtt.p95)) | \(cell(result.rtt.p99, tunnel?.rtt.p99))"
            row += " | \(cell(result.cpuPerGiB, tunnel?.cpuPerGiB)) |"
            lines.append(row)
        }
        lines.append("")
        lines.append("CPU per GiB: CPU time (user + system) of the path's entry event-loop thread, read from its thread CPU-time clock (the clock `pthread_getcpuclockid` returns, i.e. that thread's `CLOCK_THREAD_CPUTIME_ID`), over the single-stream upload and download, divided by the bytes moved (2 × bulk). For webproxyd that is the daemon's loop thread (`webproxyd`); for the TLS tunnel its entry thread (plaintext in, TLS client out). The relay, the tunnel's TLS front and the backend run on other threads and are not charged.")
        lines.append("")
        let counted = paths.filter { !$0.tlsConnections.isEmpty }
        if !counted.isEmpty {
            lines.append("TLS connections from webproxyd to the relay during each concurrent download: the most open at once (`webproxyd_tls_connections_open`, sampled every 50 ms) / how many were opened (`webproxyd_tls_connections_total`, before and after), read from the daemon's metrics endpoint. The TLS tunnel holds one per stream.")
            lines.append("")
            lines.append("| path | " + concurrentStreams.map { "\($0) streams" }.joined(separator: " | ") + " |")
            lines.append("|---|" + String(repeating: "---|", count: concurrentStreams.count))
            for result in counted {
                let cells = concurrentStreams.map { streams in
                    result.tlsConnections[streams].map { "\($0.peakOpen) / \($0.opened)" } ?? "–"
                }
                lines.append("| \(result.name) | " + cells.joined(separator: " | ") + " |")
            }
            lines.append("")
        }
        let recoveries = paths.compactMap { result in result.recoverySeconds.map { (result.name, $0) } }
        if !recoveries.isEmpty {
            lines.append("Relay restart (`TestRelayServer.restart`) until a new local connection carries data again:")
            lines.append("")
            for (name, seconds) in recoveries { lines.append("- \(name): \(format(seconds * 1000)) ms") }
            lines.append("")
        }
        for result in paths where !result.failures.isEmpty {
            lines.append("**Failed on \(result.name):** \(result.failures.joined(separator: "; ")).")
            lines.append("")
        }
        lines.append("## Memory")
        lines.append("")
        lines.append("| measure | value |")
        lines.append("|---|---|")
        lines.append("| standalone `webproxyd` (websocket), idle, 0 streams | \(mib(memory.standaloneIdle)) |")
        lines.append("| standalone `webproxyd`, 128 idle streams | \(mib(memory.standaloneIdle128)) (\(format(memory.standalonePerStream / 1024)) KiB per stream) |")
        lines.append("| in-process (daemon + relay + backend + clients), idle, 0 streams | \(mib(memory.inProcessIdle)) |")
        lines.append("| in-process, 128 idle streams | \(mib(memory.inProcessIdle128)) (\(format(memory.inProcessPerStream / 1024)) KiB per stream, relay side included) |")
        lines.append("| in-process peak RSS (VmHWM) after all runs | \(mib(peakRSS)) |")
        if let growth = memory.neverReadingGrowth, let first = memory.neverReadingSamples.first, let last = memory.neverReadingSamples.last {
            lines.append("| standalone under never-reading clients (\(memory.neverReadingNote)) | \(mib(first.1)) at \(format(first.0)) s → \(mib(last.1)) at \(format(last.0)) s; second half growth \(format(Double(growth) / 1024)) KiB |")
        }
        lines.append("")
        lines.append("RSS is `VmRSS` from `/proc/<pid>/status`; peak is `VmHWM`. The in-process figures include the test relay, the backend and the client threads' stacks, so they overstate the daemon; the standalone figures are the real binary in its own process.")
        if !memory.standaloneNote.isEmpty { lines.append("Note: \(memory.standaloneNote)") }
        lines.append("")
        lines.append("## Goals (issue 6)")
        lines.append("")
        lines.append("| goal | measured | verdict |")
        lines.append("|---|---|---|")
        for goal in goals() { lines.append("| \(goal.0) | \(goal.1) | \(goal.2) |") }
        lines.append("")
        return lines.joined(separator: "\n")
    }

    private func verdict(_ met: Bool?) -> String {
        guard let met else { return "not measured" }
        return met ? "met" : "**missed**"
    }

    func goals() -> [(String, String, String)] {
        var goals: [(String, String, String)] = []
        let websocket = path("webproxyd websocket")
        let https = path("webproxyd https")
        if let websocket, let tunnel {
            let cpu = websocket.cpuPerGiB / tunnel.cpuPerGiB
            goals.append(("CPU per GiB on websocket ≤ 1.5× TLS tunnel", "\(format(websocket.cpuPerGiB)) vs \(format(tunnel.cpuPerGiB)) s/GiB = \(String(format: "%.2f", cpu))×", verdict(cpu.isFinite ? cpu <= 1.5 : nil)))
            let up = websocket.upload / tunnel.upload
            let down = websocket.download / tunnel.download
            goals.append(("websocket single-stream throughput ≥ 0.5× TLS tunnel", "upload \(String(format: "%.2f", up))×, download \(String(format: "%.2f", down))×", verdict(min(up, down) >= 0.5)))
            if let direct {
                let added = websocket.rtt.p50 - direct.rtt.p50
                let tunnelAdded = tunnel.rtt.p50 - direct.rtt.p50
                let ratio = added / tunnelAdded
                goals.append(("added RTT on websocket ≤ 1.5× TLS tunnel's (p50 over direct TCP)", "\(format(added)) µs vs \(format(tunnelAdded)) µs = \(String(format: "%.2f", ratio))×", verdict(ratio.isFinite ? ratio <= 1.5 : nil)))
            }
        }
        if let websocket, let https {
            let up = websocket.upload / https.upload
            let down = websocket.download / https.download
            goals.append(("https bulk within 2× of websocket", "websocket/https: upload \(String(format: "%.2f", up))×, download \(String(format: "%.2f", down))×", verdict(max(up, down) <= 2)))
        }
        let idle = memory.standaloneIdle >= 0 ? memory.standaloneIdle : memory.inProcessIdle
        let idleSource = memory.standaloneIdle >= 0 ? "standalone" : "in-process"
        goals.append(("idle RSS ≤ 24 MiB", "\(mib(idle)) (\(idleSource))", verdict(idle < 0 ? nil : idle <= 24 << 20)))
        let perStream = memory.standaloneIdle >= 0 ? memory.standalonePerStream : memory.inProcessPerStream
        goals.append(("≤ 64 KiB per idle stream", "\(format(perStream / 1024)) KiB (\(idleSource), 128 streams)", verdict(idle < 0 ? nil : perStream <= 64 * 1024)))
        if let growth = memory.neverReadingGrowth {
            goals.append(("memory flat under a local client that never reads", "second-half growth \(format(Double(growth) / 1024)) KiB", verdict(growth <= 1 << 20)))
        } else {
            goals.append(("memory flat under a local client that never reads", "–", verdict(nil)))
        }
        return goals
    }
}
