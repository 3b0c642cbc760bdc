import Glibc
import Synchronization
import WebProxyTestSupport

/// Latency under load on an emulated WAN (`DelayLine` between the path's client side and its
/// server side): a chat connection echoes 64 bytes every 100 ms while two bulk connections,
/// opened after it, download, upload, or do both, as fast as the path lets them.
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
        /// From the path's start (the daemon's, or the tunnel entry's) to a first connection's echo.
        var startToFirstEchoMilliseconds = Double.nan
        /// The same with the daemon's carrier pinned (`carrier = <mode>`), so that the
        /// WebSocket's connection is dialled from the session build's start; nan for the tunnel.
        var pinnedStartMilliseconds = Double.nan
        /// A new connection's first echo once the path is warm: the median of `openSamples`.
        var firstEchoMilliseconds = Double.nan
        var idleMilliseconds = Double.nan
        var loaded: [Pattern: Loaded] = [:]
        var failures: [String] = []
    }

    /// The chat's round trips (ms), one every 100 ms, for at least `minimum` rounds and then
    /// until `stop` says so. `opened` runs when the connection is open and has echoed a first
    /// message (not counted) or failed to; the rounds start `settle` seconds later.
    static func chat(
        port: UInt16, minimum: Int, opened: () -> Void = {}, settle: Double = 0, stop: @escaping () -> Bool = { true }
    ) -> [Double]? {
        let message = [UInt8](repeating: 0x42, count: 64)
        let client = BlockingClient.load(port: port)
        defer { client?.close() }
        let echoed = client.map { $0.begin(.echo) && $0.send(message) && $0.receive(count: 64).count == 64 } ?? false
        opened()
        guard let client, echoed else { return nil }
        if settle > 0 { usleep(useconds_t(settle * 1e6)) }
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

    static let openSamples = 7

    /// A new connection's first round trip: from its connect to the echo of its first 64 bytes
    /// (ms); `since` (a `ProcessProbe.now()` instant) starts the clock earlier instead.
    static func firstEcho(port: UInt16, since: Double? = nil) -> Double? {
        let start = since ?? ProcessProbe.now()
        guard let client = BlockingClient.load(port: port), client.begin(.echo) else { return nil }
        defer { client.close() }
        guard client.send([UInt8](repeating: 0x42, count: 64)), client.receive(count: 64).count == 64 else { return nil }
        return (ProcessProbe.now() - start) * 1000
    }

    static func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

    /// An added delay with its sign: +3.61, −0.10.
    static func signed(_ value: Double) -> String { value < 0 ? "−" + format(-value) : "+" + format(value) }

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

    /// Each bulk connection moves what the link carries in `seconds` at half its rate. Call it
    /// right after the path started at `startedAt` (a `ProcessProbe.now()` instant).
    static func run(
        _ path: BenchPath, startedAt: Double, shape: DelayLine.Shape, seconds: Double, log: (String) -> Void
    ) -> Result {
        var result = Result(name: path.name)
        let roundTrip = shape.roundTripMilliseconds
        guard let start = firstEcho(port: path.port, since: startedAt) else {
            result.failures.append("first echo failed")
            return result
        }
        result.startToFirstEchoMilliseconds = start
        log("  \(path.name): start to first echo \(format(start)) ms (\(format(start / roundTrip)) RTT)")
        var opens: [Double] = []
        for _ in 0..<openSamples {
            usleep(300_000)
            guard let open = firstEcho(port: path.port) else { break }
            opens.append(open)
        }
        guard opens.count == openSamples else {
            result.failures.append("a new connection's first echo failed")
            return result
        }
        result.firstEchoMilliseconds = median(opens)
        log("  \(path.name): new connection's first echo \(format(result.firstEchoMilliseconds)) ms (\(format(result.firstEchoMilliseconds / roundTrip)) RTT)")
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
            let chatOpen = Atomic<Bool>(false)
            let outcomes = onThreads(3) { index -> ([Double]?, Double?) in
                // The chat's connection is open first, as Telegram's main connection is before
                // any file moves; its rounds start once the bulk flows are under way.
                if index == 0 {
                    let rounds = chat(
                        port: port, minimum: 1, opened: { chatOpen.store(true, ordering: .relaxed) }, settle: 0.5
                    ) { bulksLeft.load(ordering: .relaxed) == 0 }
                    return (rounds, nil)
                }
                defer { bulksLeft.subtract(1, ordering: .relaxed) }
                while !chatOpen.load(ordering: .relaxed) { usleep(1000) }
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
                "  \(path.name): \(pattern): chat \(signed(loaded.addedMedianMilliseconds)) ms median, "
                    + "\(signed(loaded.addedP99Milliseconds)) ms p99, \(loaded.chatMessages) messages; "
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
        out += "echoing 64 bytes every 100 ms while they run, opened before them as Telegram's main connection is; all "
        out += "through one daemon. Added: the chat's round trip "
        out += "minus its idle median. Messages: chat round trips completed during the bulk. Bulk share: "
        out += "the bulk bytes over the time the slower bulk took, as a share of the link's rate. "
        out += "Start: from the daemon's (or the tunnel entry's) start to a first connection's echo; pinned: "
        out += "the same with the carrier pinned (`carrier = <mode>`), as after a lost session. New: a "
        out += "new connection's first echo on the warm path (connect, init, 64 bytes, their echo), the "
        out += "median of \(openSamples). Both in base round trips (\(format(shape.roundTripMilliseconds)) ms); "
        out += "the delay line charges each new TCP connection one round trip, as a handshake costs.\n\n"
        out += "| path | start RTT | pinned | new RTT | idle RTT ms |"
        for pattern in Pattern.allCases { out += " \(pattern): added median / p99 ms, messages, bulk share |" }
        out += "\n|---|---:|---:|---:|---:|" + String(repeating: "---|", count: Pattern.allCases.count) + "\n"
        for result in results {
            let roundTrip = shape.roundTripMilliseconds
            out += "| \(result.name) | \(format(result.startToFirstEchoMilliseconds / roundTrip)) "
            out += "| \(format(result.pinnedStartMilliseconds / roundTrip)) "
            out += "| \(format(result.firstEchoMilliseconds / roundTrip)) | \(format(result.idleMilliseconds)) |"
            for pattern in Pattern.allCases {
                guard let loaded = result.loaded[pattern] else {
                    out += " failed |"
                    continue
                }
                out += " \(signed(loaded.addedMedianMilliseconds)) / \(signed(loaded.addedP99Milliseconds)), "
                out += "\(loaded.chatMessages), \(format(loaded.linkShare * 100)) % |"
            }
            out += "\n"
        }
        return out
    }
}
