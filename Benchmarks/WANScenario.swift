import Glibc
import Synchronization
import WebProxyTestSupport

/// Latency under load on an emulated WAN (`DelayLine` between the path's client side and its
/// server side): a chat connection echoes 64 bytes every 100 ms while two bulk connections
/// download, upload, or do both, as fast as the path lets them.
enum WANScenario {
    enum Pattern: String, CaseIterable {
        case download, upload, both
    }

    struct Loaded {
        var addedMedianMilliseconds = Double.nan
        var addedP99Milliseconds = Double.nan
        var chatMessages = 0
        /// Bulk bytes per second as a share of the link's rate (`both`: each direction's own).
        var linkShare = Double.nan
    }

    struct Result {
        var name: String
        var idleMilliseconds = Double.nan
        var loaded: [Pattern: Loaded] = [:]
        var failures: [String] = []
    }

    /// The chat's round trips (ms), one every 100 ms, for at least `minimum` rounds and then
    /// until `stop` says so.
    static func chat(port: UInt16, minimum: Int, stop: @escaping () -> Bool = { true }) -> [Double]? {
        guard let client = BlockingClient.load(port: port), client.begin(.echo) else { return nil }
        defer { client.close() }
        let message = [UInt8](repeating: 0x42, count: 64)
        var rounds: [Double] = []
        while rounds.count < minimum || !stop() {
            let start = ProcessProbe.now()
            guard client.send(message), client.receive(count: 64).count == 64 else { return nil }
            let elapsed = ProcessProbe.now() - start
            rounds.append(elapsed * 1000)
            let pause = 0.1 - elapsed
            if pause > 0 { usleep(useconds_t(pause * 1e6)) }
        }
        return rounds
    }

    static func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// A bulk connection that downloads or uploads `bytes`; the seconds it took (an upload
    /// ends when the backend acknowledged the last byte).
    static func bulk(port: UInt16, download: Bool, bytes: Int) -> Double? {
        guard let client = BlockingClient.load(port: port, timeoutSeconds: 120) else { return nil }
        defer { client.close() }
        let start = ProcessProbe.now()
        // Downloads go to a media cluster, as Telegram Desktop's file downloads do; uploads to the DC.
        guard client.begin(download ? .download : .upload, count: UInt64(bytes), dc: download ? -2 : 2) else {
            return nil
        }
        if download {
            guard client.receiveDiscarding(bytes) else { return nil }
        } else {
            var ack = [UInt8](repeating: 0, count: 1)
            guard client.sendBulk(bytes), client.receive(into: &ack) else { return nil }
        }
        return ProcessProbe.now() - start
    }

    /// Each bulk connection moves what the link carries in `seconds` at half its rate.
    static func run(_ path: BenchPath, shape: DelayLine.Shape, seconds: Double, log: (String) -> Void) -> Result {
        var result = Result(name: path.name)
        guard let idle = chat(port: path.port, minimum: 20), !idle.isEmpty else {
            result.failures.append("idle chat failed")
            return result
        }
        result.idleMilliseconds = median(idle)
        log("  \(path.name): idle RTT \(format(result.idleMilliseconds)) ms")
        let linkBytesPerSecond = shape.bitsPerSecond / 8
        let bytesPerBulk = Int(linkBytesPerSecond * seconds / 2)
        for pattern in Pattern.allCases {
            let directions: [Bool] =
                switch pattern {
                case .download: [true, true]
                case .upload: [false, false]
                case .both: [true, false]
                }
            let port = path.port
            let bulksLeft = Atomic<Int>(2)
            let outcomes = onThreads(3) { index -> ([Double]?, Double?) in
                if index == 0 {
                    usleep(500_000)  // the bulk flows start first
                    return (chat(port: port, minimum: 1) { bulksLeft.load(ordering: .relaxed) == 0 }, nil)
                }
                defer { bulksLeft.subtract(1, ordering: .relaxed) }
                return (nil, bulk(port: port, download: directions[index - 1], bytes: bytesPerBulk))
            }
            guard let rounds = outcomes[0]?.0, let first = outcomes[1]?.1, let second = outcomes[2]?.1 else {
                result.failures.append("\(pattern) failed")
                log("  \(path.name): \(pattern) failed")
                continue
            }
            // Two bulks in one direction share its link; `both` has a link each way to itself.
            let share =
                pattern == .both
                ? (Double(bytesPerBulk) / first + Double(bytesPerBulk) / second) / (2 * linkBytesPerSecond)
                : 2 * Double(bytesPerBulk) / max(first, second) / linkBytesPerSecond
            let loaded = Loaded(
                addedMedianMilliseconds: median(rounds) - result.idleMilliseconds,
                addedP99Milliseconds: percentile(rounds, 0.99) - result.idleMilliseconds,
                chatMessages: rounds.count, linkShare: share)
            result.loaded[pattern] = loaded
            log(
                "  \(path.name): \(pattern): chat +\(format(loaded.addedMedianMilliseconds)) ms median, "
                    + "+\(format(loaded.addedP99Milliseconds)) ms p99, \(loaded.chatMessages) messages; "
                    + "bulk \(format(loaded.linkShare * 100)) % of the link")
            sleep(2)  // the queues drain before the next pattern
        }
        return result
    }

    static func markdown(_ results: [Result], shape: DelayLine.Shape, seconds: Double, machine: String) -> String {
        var out = "# webproxyd WAN benchmark\n\n"
        out += "Path between the daemon (or the TLS tunnel's entry) and the relay (or the tunnel's front): "
        out += "\(shape). \(machine). Each pattern: two bulk connections (two downloads, two uploads, "
        out += "or one of each), each moving what the link carries in \(format(seconds / 2)) s, and a chat connection "
        out += "echoing 64 bytes every 100 ms while they run; all of one session. Added: the chat's round trip "
        out += "minus its idle median. Messages: chat round trips completed during the bulk. Bulk share: "
        out += "the bulk bytes over the time the slower bulk took, as a share of the link's rate.\n\n"
        out += "| path | idle RTT ms |"
        for pattern in Pattern.allCases { out += " \(pattern): added median / p99 ms, messages, bulk share |" }
        out += "\n|---|---:|" + String(repeating: "---|", count: Pattern.allCases.count) + "\n"
        for result in results {
            out += "| \(result.name) | \(format(result.idleMilliseconds)) |"
            for pattern in Pattern.allCases {
                guard let loaded = result.loaded[pattern] else {
                    out += " failed |"
                    continue
                }
                out += " +\(format(loaded.addedMedianMilliseconds)) / +\(format(loaded.addedP99Milliseconds)), "
                out += "\(loaded.chatMessages), \(format(loaded.linkShare * 100)) % |"
            }
            out += "\n"
        }
        return out
    }
}
