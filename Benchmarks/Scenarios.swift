import Foundation
import Glibc
import Synchronization
import WebProxyTestSupport

/// How much each scenario moves.
struct BenchSizes {
    var bulkBytes: Int
    var concurrentBytes: Int
    var pingRounds: Int

    static let full = BenchSizes(bulkBytes: 256 << 20, concurrentBytes: 256 << 20, pingRounds: 5000)
    static let quick = BenchSizes(bulkBytes: 32 << 20, concurrentBytes: 32 << 20, pingRounds: 500)
}

/// Aggregate and per-stream throughput of one concurrent run.
struct ConcurrentResult {
    var aggregate: Double
    var slowest: Double
    var fastest: Double
}

/// Every figure of one path.
struct PathResult {
    var name: String
    var upload = Double.nan
    var download = Double.nan
    var concurrent: [Int: ConcurrentResult] = [:]
    /// webproxyd: TLS connections during each concurrent run, by streams: the most open at
    /// once, and how many were opened.
    var tlsConnections: [Int: (peakOpen: Int, opened: Int)] = [:]
    var rtt: (p50: Double, p95: Double, p99: Double) = (.nan, .nan, .nan)
    var cpuPerGiB = Double.nan
    var recoverySeconds: Double?
    /// Scenarios that failed, with their errors.
    var failures: [String] = []
}

let mebibyte = Double(1 << 20)

/// The stream counts of the concurrent downloads.
let concurrentStreams = [8, 16, 64]

/// The scenarios, each run against a path from fresh client threads.
enum Scenarios {
    /// Single-stream upload into the sink: MiB/s from the first byte sent to the sink's ack.
    static func upload(_ path: BenchPath, bytes: Int) throws -> Double {
        let seconds = onThreads(1) { _ -> Double? in
            guard let client = BlockingClient.load(port: path.port) else { return nil }
            defer { client.close() }
            let start = ProcessProbe.now()
            guard client.begin(.upload, count: UInt64(bytes)), client.sendBulk(bytes) else { return nil }
            var ack = [UInt8](repeating: 0, count: 1)
            guard client.receive(into: &ack) else { return nil }
            return ProcessProbe.now() - start
        }[0] ?? nil
        guard let seconds else { throw BenchError("\(path.name): upload failed") }
        return Double(bytes) / mebibyte / seconds
    }

    /// Single-stream download from the source: MiB/s from the request to the last byte.
    static func download(_ path: BenchPath, bytes: Int) throws -> Double {
        let result = try concurrentDownload(path, streams: 1, totalBytes: bytes)
        return result.aggregate
    }

    /// `streams` concurrent downloads sharing `totalBytes`.
    static func concurrentDownload(_ path: BenchPath, streams: Int, totalBytes: Int) throws -> ConcurrentResult {
        let each = totalBytes / streams
        let clients = (0..<streams).map { _ in BlockingClient.load(port: path.port) }
        defer { for client in clients { client?.close() } }
        guard clients.allSatisfy({ $0 != nil }) else { throw BenchError("\(path.name): connect failed") }
        let start = ProcessProbe.now()
        let finishes = onThreads(streams) { index -> Double? in
            guard let client = clients[index], client.begin(.download, count: UInt64(each)),
                client.receiveDiscarding(each)
            else { return nil }
            return ProcessProbe.now()
        }
        let ends = finishes.compactMap { $0 ?? nil }
        guard ends.count == streams, let last = ends.max() else {
            throw BenchError("\(path.name): \(streams - ends.count) of \(streams) downloads failed")
        }
        let rates = ends.map { Double(each) / mebibyte / ($0 - start) }
        return ConcurrentResult(
            aggregate: Double(each * streams) / mebibyte / (last - start),
            slowest: rates.min() ?? .nan, fastest: rates.max() ?? .nan)
    }

    /// 64-byte echo round trips on one stream: p50/p95/p99 in microseconds.
    static func pingPong(_ path: BenchPath, rounds: Int) throws -> (Double, Double, Double) {
        let samples = onThreads(1) { _ -> [Double] in
            guard let client = BlockingClient.load(port: path.port) else { return [] }
            defer { client.close() }
            guard client.begin(.echo) else { return [] }
            let message = [UInt8](repeating: 0x5A, count: 64)
            var reply = [UInt8](repeating: 0, count: 64)
            var samples: [Double] = []
            samples.reserveCapacity(rounds)
            for round in 0..<(rounds + rounds / 10) {
                let start = ProcessProbe.now()
                guard client.send(message), client.receive(into: &reply) else { return [] }
                if round >= rounds / 10 { samples.append((ProcessProbe.now() - start) * 1e6) }  // after warm-up
            }
            return samples
        }[0] ?? []
        guard !samples.isEmpty else { throw BenchError("\(path.name): ping-pong failed") }
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return (percentile(0.50), percentile(0.95), percentile(0.99))
    }

    /// Whether one echo of 64 bytes makes it through within `milliseconds`.
    static func echoWorks(_ path: BenchPath, milliseconds: Int) -> Bool {
        guard let client = BlockingClient.load(port: path.port, timeoutSeconds: 1) else { return false }
        defer { client.close() }
        client.setTimeouts(.milliseconds(milliseconds))
        let message = [UInt8](repeating: 0x42, count: 64)
        var reply = [UInt8](repeating: 0, count: 64)
        return client.begin(.echo) && client.send(message) && client.receive(into: &reply) && reply == message
    }

    /// Seconds from `TestRelayServer.restart` until a new local connection carries data again.
    static func relayRestartRecovery(_ path: DaemonPath) throws -> Double {
        guard echoWorks(path, milliseconds: 5000) else { throw BenchError("\(path.name): not up before the restart") }
        path.relay.restart()
        let start = ProcessProbe.now()
        usleep(1000)
        while ProcessProbe.now() - start < 60 {
            if echoWorks(path, milliseconds: 2000) { return ProcessProbe.now() - start }
            usleep(20_000)
        }
        throw BenchError("\(path.name): no data 60 s after a relay restart")
    }

    /// Runs every throughput and latency scenario on `path`; charges the bulk runs' bytes
    /// to the CPU time of the path's entry thread.
    static func run(_ path: BenchPath, sizes: BenchSizes, log: (String) -> Void) -> PathResult {
        var result = PathResult(name: path.name)
        /// Runs one scenario; a failure is logged and noted in the report, and the run goes on.
        func attempt(_ body: () throws -> Void) {
            do { try body() } catch {
                log("  \(path.name): FAILED: \(error)")
                result.failures.append("\(error)")
            }
        }
        let thread = path.entryThreadName.isEmpty ? nil : ProcessProbe.threadID(named: path.entryThreadName)
        // Warm up: the first connection may build a session.
        attempt { _ = try download(path, bytes: 1 << 20) }
        let cpuBefore = thread.map(ProcessProbe.threadCPUSeconds)
        attempt {
            result.upload = try upload(path, bytes: sizes.bulkBytes)
            log("  \(path.name): upload \(format(result.upload)) MiB/s")
        }
        attempt {
            result.download = try download(path, bytes: sizes.bulkBytes)
            log("  \(path.name): download \(format(result.download)) MiB/s")
        }
        if let thread, let cpuBefore, result.upload.isFinite, result.download.isFinite {
            let cpu = ProcessProbe.threadCPUSeconds(thread) - cpuBefore
            result.cpuPerGiB = cpu / (Double(2 * sizes.bulkBytes) / Double(1 << 30))
            log("  \(path.name): \(format(result.cpuPerGiB)) CPU-s/GiB on thread '\(path.entryThreadName)'")
        }
        for streams in concurrentStreams {
            attempt {
                let daemon = path as? DaemonPath
                let before = daemon?.metric("webproxyd_tls_connections_total")
                // The open connections, sampled every 50 ms while the streams run.
                let peak = Mutex(0)
                let running = Atomic(true)
                let sampler = daemon.map { daemon in
                    Thread {
                        while running.load(ordering: .relaxed) {
                            if let open = daemon.metric("webproxyd_tls_connections_open") {
                                peak.withLock { $0 = max($0, open) }
                            }
                            usleep(50_000)
                        }
                    }
                }
                sampler?.start()
                defer { running.store(false, ordering: .relaxed) }
                let concurrent = try concurrentDownload(path, streams: streams, totalBytes: sizes.concurrentBytes)
                running.store(false, ordering: .relaxed)
                result.concurrent[streams] = concurrent
                var line = "  \(path.name): \(streams) streams \(format(concurrent.aggregate)) MiB/s (per stream \(format(concurrent.slowest))–\(format(concurrent.fastest)))"
                if let before, let after = daemon?.metric("webproxyd_tls_connections_total") {
                    let peakOpen = peak.withLock { $0 }
                    result.tlsConnections[streams] = (peakOpen, after - before)
                    line += "; TLS connections: at most \(peakOpen) open, \(after - before) opened"
                }
                log(line)
            }
        }
        attempt {
            result.rtt = try pingPong(path, rounds: sizes.pingRounds)
            log("  \(path.name): RTT p50 \(format(result.rtt.p50)) µs, p95 \(format(result.rtt.p95)) µs, p99 \(format(result.rtt.p99)) µs")
        }
        if let daemonPath = path as? DaemonPath {
            attempt {
                result.recoverySeconds = try relayRestartRecovery(daemonPath)
                log("  \(path.name): relay restart → data again in \(format(result.recoverySeconds! * 1000)) ms")
            }
        }
        return result
    }
}

/// Three significant-ish figures, for tables.
func format(_ value: Double) -> String {
    guard value.isFinite else { return "–" }
    if abs(value) >= 100 { return String(format: "%.0f", value) }
    if abs(value) >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
}
