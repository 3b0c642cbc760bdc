import Foundation
import WebProxyCore
import WebProxyNet

// webproxyd-bench: throughput, latency, CPU and memory of webproxyd against a direct TCP
// connection and a plain TLS tunnel, all in one process on loopback; a soak mode and a
// profiling mode (`BenchCommand.usage`).

try ProcessSignal.ignoreBrokenPipes()

let command: BenchCommand
do {
    command = try BenchCommand(parsing: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("webproxyd-bench: \(error.message)\n\n\(BenchCommand.usage)\n".utf8))
    exit(64)
}

func machineDescription() -> String {
    let cpuInfo = ProcessProbe.readFile("/proc/cpuinfo")
    let model = cpuInfo.split(separator: "\n").first { $0.hasPrefix("model name") }
        .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" } ?? "unknown CPU"
    let load = ProcessProbe.readFile("/proc/loadavg").split(separator: " ").prefix(3).joined(separator: " ")
    return "\(ProcessInfo.processInfo.activeProcessorCount) vCPU \(model), load average \(load) at the start"
}

/// The WAN benchmark: the tunnel, then each carrier.
func runWAN(seconds: Double, output: String, carriers: [CarrierMode]) throws {
    let shape = DelayLine.Shape.telegramWAN
    let machine = machineDescription()
    say("webproxyd-bench wan: \(shape); \(machine)")
    let world = try BenchWorld()
    var results: [WANScenario.Result] = []
    let tunnel = try TunnelPath(world: world, wan: shape)
    results.append(WANScenario.run(tunnel, startedAt: tunnel.startedAt, shape: shape, seconds: seconds, log: { say($0) }))
    tunnel.stop()
    for mode in carriers {
        // The https carriers over h2 and HTTP/1.1; websocket without and with `pace-uploads`.
        let variants: [(http1Only: Bool, pacesUploads: Bool)] =
            switch mode {
            case .https, .httpsLanes: [(false, false), (true, false)]
            case .websocket: [(false, false), (false, true)]
            case .websocketLanes: [(false, false)]
            }
        for variant in variants {
            // Start with the carrier pinned, as after a lost session (the last page named it).
            let pinned = try DaemonPath(
                world: world, mode: mode, http1Only: variant.http1Only, pacesUploads: variant.pacesUploads,
                pinsCarrier: true, wan: shape)
            let pinnedStart = WANScenario.firstEcho(port: pinned.port, since: pinned.startedAt)
            pinned.stop()
            let path = try DaemonPath(
                world: world, mode: mode, http1Only: variant.http1Only, pacesUploads: variant.pacesUploads, wan: shape)
            var result = WANScenario.run(path, startedAt: path.startedAt, shape: shape, seconds: seconds, log: { say($0) })
            result.pinnedStartMilliseconds = pinnedStart ?? .nan
            say(
                "  \(path.name): start to first echo, carrier pinned, \(format(result.pinnedStartMilliseconds)) ms "
                    + "(\(format(result.pinnedStartMilliseconds / shape.roundTripMilliseconds)) RTT)")
            results.append(result)
            path.stop()
        }
    }
    world.shutdown()
    try publish(WANScenario.markdown(results, shape: shape, seconds: seconds, machine: machine), to: output)
}

/// Prints the report and writes it to `output`.
func publish(_ markdown: String, to output: String) throws {
    say("")
    say(markdown)
    try FileManager.default.createDirectory(
        atPath: (output as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try markdown.write(toFile: output, atomically: true, encoding: .utf8)
    say("report written to \(output)")
}

let quick: Bool
let output: String
let carriers: [CarrierMode]
switch command {
case .help:
    print(BenchCommand.usage)
    exit(0)
case .soak(let minutes):
    exit(try Soak.run(minutes: minutes) ? 0 : 1)
case .profile(let path, let mebibytes):
    try ProfileRun.run(pathName: path, mebibytes: mebibytes)
    exit(0)
case .wan(let seconds, let file, let chosen):
    try runWAN(seconds: seconds, output: file, carriers: chosen)
    exit(0)
case .bench(let isQuick, let file, let chosen):
    quick = isQuick
    output = file
    carriers = chosen
}
let sizes = quick ? BenchSizes.quick : BenchSizes.full
let machine = machineDescription()
say("webproxyd-bench\(quick ? " --quick" : ""): \(machine)")

let world = try BenchWorld()
var results: [PathResult] = []
var memory = MemoryResult()

say("direct TCP")
let direct = DirectPath(world: world)
results.append(Scenarios.run(direct, sizes: sizes, log: { say($0) }))

say("TLS tunnel")
let tunnel = try TunnelPath(world: world)
results.append(Scenarios.run(tunnel, sizes: sizes, log: { say($0) }))
tunnel.stop()

for mode in carriers {
    say("webproxyd \(mode.rawValue)")
    let path = try DaemonPath(world: world, mode: mode)
    let result = Scenarios.run(path, sizes: sizes, log: { say($0) })
    if mode == .websocket {
        MemoryScenarios.inProcess(path, into: &memory, log: { say($0) })
        MemoryScenarios.standalone(path, world: world, seconds: quick ? 6 : 12, into: &memory, log: { say($0) })
    }
    results.append(result)
    path.stop()
}

let report = BenchReport(
    sizes: sizes, quick: quick, paths: results, memory: memory,
    peakRSS: ProcessProbe.peakResidentBytes(), machine: machine)
world.shutdown()
try publish(report.markdown(), to: output)
