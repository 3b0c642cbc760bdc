import Foundation
import WebProxyCore
import WebProxyNet

/// A tiny fixed workload for instruction-counting profilers (`valgrind --tool=callgrind`):
/// one path only, a 1 MiB warm-up download, then one upload and one download of `mebibytes`.
///
///   webproxyd-bench profile [--path tunnel|https|https-lanes|websocket|websocket-lanes] [--mib N]
enum ProfileRun {
    static func run(pathName: String, mebibytes: Int) throws {
        let world = try BenchWorld()
        let path: BenchPath
        if pathName == "tunnel" {
            path = try TunnelPath(world: world)
        } else if let mode = CarrierMode(rawValue: pathName) {
            path = try DaemonPath(world: world, mode: mode)
        } else {
            throw BenchError("unknown path '\(pathName)' (tunnel, or a carrier mode)")
        }
        let thread = ProcessProbe.threadID(named: path.entryThreadName)
        _ = try Scenarios.download(path, bytes: 1 << 20)
        let cpuBefore = thread.map(ProcessProbe.threadCPUSeconds)
        let countersBefore = path.loopCounters()
        let bytes = mebibytes << 20
        let upload = try Scenarios.upload(path, bytes: bytes)
        let download = try Scenarios.download(path, bytes: bytes)
        var cpu = Double.nan
        if let thread, let cpuBefore { cpu = ProcessProbe.threadCPUSeconds(thread) - cpuBefore }
        say("\(path.name): \(mebibytes) MiB up \(format(upload)) MiB/s, down \(format(download)) MiB/s, "
            + "thread '\(path.entryThreadName)' \(format(cpu)) CPU-s")
        if let before = countersBefore, let after = path.loopCounters() {
            // Per GiB carried each way: what explains the thread's CPU.
            let gibibytes = Double(2 * bytes) / Double(1 << 30)
            func perGiB(_ value: KeyPath<LoopCounters, Int>) -> String {
                String(Int((Double(after[keyPath: value] - before[keyPath: value]) / gibibytes).rounded()))
            }
            let socket = "socket reads \(perGiB(\.socketReads)) writes \(perGiB(\.socketWrites))"
            let tls = "TLS records down \(perGiB(\.tlsRecordsReceived)) up \(perGiB(\.tlsRecordsSent))"
            let webSocket =
                "WebSocket messages down \(perGiB(\.webSocketMessagesReceived)) up \(perGiB(\.webSocketMessagesSent))"
            say("  per GiB: \(perGiB(\.wakeups)) wake-ups, \(socket), \(tls), \(webSocket)")
        }
        path.stop()
        world.shutdown()
    }
}
