import Foundation
import Glibc
import WebProxyTestSupport

/// Memory figures. The in-process figures include the relay, the backend and the clients
/// living in the same process; the standalone figures are the real `webproxyd` binary in
/// its own process (in front of the same in-process relay), so they are the daemon's alone.
struct MemoryResult {
    var inProcessIdle = -1
    var inProcessIdle128 = -1
    var standaloneIdle = -1
    var standaloneIdle128 = -1
    /// RSS samples (seconds since start, bytes) of the standalone daemon under clients that never read.
    var neverReadingSamples: [(Double, Int)] = []
    var neverReadingNote = ""
    var standaloneNote = ""

    var inProcessPerStream: Double { Double(inProcessIdle128 - inProcessIdle) / 128 }
    var standalonePerStream: Double { Double(standaloneIdle128 - standaloneIdle) / 128 }

    /// Growth over the second half of the never-reading run (after the windows filled).
    var neverReadingGrowth: Int? {
        guard let last = neverReadingSamples.last else { return nil }
        let half = last.0 / 2
        guard let mid = neverReadingSamples.first(where: { $0.0 >= half }) else { return nil }
        return last.1 - mid.1
    }
}

enum MemoryScenarios {
    /// Opens `count` echo streams through `port` and checks each carries data.
    static func openIdleStreams(port: UInt16, count: Int) -> [BlockingClient] {
        (0..<count).compactMap { _ in
            guard let client = BlockingClient.load(port: port, timeoutSeconds: 10) else { return nil }
            let message = [UInt8](repeating: 1, count: 64)
            var reply = [UInt8](repeating: 0, count: 64)
            if client.begin(.echo) && client.send(message) && client.receive(into: &reply) { return client }
            client.close()
            return nil
        }
    }

    /// In-process RSS with the daemon idle, then with 128 idle streams open.
    static func inProcess(_ path: DaemonPath, into result: inout MemoryResult, log: (String) -> Void) {
        sleep(1)
        result.inProcessIdle = ProcessProbe.residentBytes()
        let clients = openIdleStreams(port: path.port, count: 128)
        defer { for client in clients { client.close() } }
        sleep(1)
        result.inProcessIdle128 = ProcessProbe.residentBytes()
        log("  in-process RSS: idle \(mib(result.inProcessIdle)), with \(clients.count) idle streams \(mib(result.inProcessIdle128))")
        if clients.count != 128 { result.standaloneNote += "in-process: only \(clients.count) of 128 streams opened. " }
    }

    /// The standalone `webproxyd` (next to this executable) in front of `path`'s relay.
    static func standalone(_ path: DaemonPath, world: BenchWorld, seconds: Int, into result: inout MemoryResult, log: (String) -> Void) {
        let executable = URL(fileURLWithPath: ProcessProbe.executablePath()).deletingLastPathComponent()
            .appendingPathComponent("webproxyd").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            result.standaloneNote = "webproxyd not found next to the bench executable; standalone figures skipped"
            log("  " + result.standaloneNote)
            return
        }
        let port = unusedLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "run", "--link", "tg://webproxy?server=\(BenchWorld.host)&secret=\(BenchWorld.secret)",
            "--listen", "127.0.0.1:\(port)", "--ca-file", world.caPath, "--connect-to", "127.0.0.1:\(path.relay.port)",
        ]
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        do { try process.run() } catch {
            result.standaloneNote = "cannot start webproxyd: \(error)"
            return
        }
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let pid = String(process.processIdentifier)
        let start = ProcessProbe.now()
        while !Scenarios.echoWorks(PortPath(port: port), milliseconds: 2000) {
            guard ProcessProbe.now() - start < 20 else {
                result.standaloneNote = "standalone webproxyd did not carry data within 20 s"
                log("  " + result.standaloneNote)
                return
            }
            usleep(100_000)
        }
        sleep(2)
        result.standaloneIdle = ProcessProbe.residentBytes(pid: pid)
        let clients = openIdleStreams(port: port, count: 128)
        sleep(2)
        result.standaloneIdle128 = ProcessProbe.residentBytes(pid: pid)
        log("  standalone webproxyd RSS: idle \(mib(result.standaloneIdle)), with \(clients.count) idle streams \(mib(result.standaloneIdle128)) (peak \(mib(ProcessProbe.peakResidentBytes(pid: pid))))")
        for client in clients { client.close() }
        sleep(1)

        // Clients that ask for endless downloads and never read.
        let stalled = (0..<8).compactMap { _ -> BlockingClient? in
            guard let client = BlockingClient.load(port: port) else { return nil }
            if client.begin(.download, count: 1 << 40) { return client }
            client.close()
            return nil
        }
        let runStart = ProcessProbe.now()
        while ProcessProbe.now() - runStart < Double(seconds) {
            usleep(500_000)
            result.neverReadingSamples.append((ProcessProbe.now() - runStart, ProcessProbe.residentBytes(pid: pid)))
        }
        result.neverReadingNote = "\(stalled.count) streams each asking for 1 TiB and never reading, \(seconds) s"
        for client in stalled { client.close() }
        let samples = result.neverReadingSamples.map { "\(format($0.0))s:\(mib($0.1))" }.joined(separator: " ")
        log("  never-reading clients: \(samples)")
    }
}

/// A path that is just a port (for probing the standalone daemon).
final class PortPath: BenchPath, @unchecked Sendable {
    let name = "port"
    let port: UInt16
    let entryThreadName = ""
    init(port: UInt16) { self.port = port }
    func stop() {}
}

func mib(_ bytes: Int) -> String { bytes < 0 ? "–" : "\(format(Double(bytes) / mebibyte)) MiB" }

extension ProcessProbe {
    /// This executable's path (from /proc/self/exe).
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
