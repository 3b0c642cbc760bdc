import Foundation
import Glibc
import Synchronization
import WebProxyCore
import WebProxyTestSupport

/// A long mixed run through the in-process daemon (websocket carrier): bulk streams and
/// chat-like streams opening and closing, the relay restarted periodically; every 10 s one
/// line of RSS, descriptors, streams and throughput; at the end a verdict on RSS and fds.
enum Soak {
    /// Counters shared by the worker threads.
    final class Counters: Sendable {
        let bytes = Atomic<Int>(0)
        let openStreams = Atomic<Int>(0)
        let streamsOpened = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
    }

    static let bulkWorkers = 2
    static let chatWorkers = 12
    static let sampleInterval = 10.0
    static let restartInterval = 60.0

    static func run(minutes: Double) throws -> Bool {
        let world = try BenchWorld()
        let path = try DaemonPath(world: world, mode: .websocket)
        say("soak: \(format(minutes)) min through webproxyd websocket, \(bulkWorkers) bulk + \(chatWorkers) chat workers, relay restart every \(Int(restartInterval)) s")
        guard Scenarios.echoWorks(path, milliseconds: 5000) else { throw BenchError("the daemon does not carry data") }
        sleep(1)
        let idleDescriptorsBefore = ProcessProbe.openDescriptorCount()
        let counters = Counters()
        let port = path.port
        let workers = DispatchGroup()
        for index in 0..<(bulkWorkers + chatWorkers) {
            workers.enter()
            let thread = Thread {
                var generator = SplitMix64(seed: UInt64(index + 1))
                while !counters.stop.load(ordering: .relaxed) {
                    let ok = index < bulkWorkers
                        ? bulkStream(port: port, generator: &generator, counters: counters)
                        : chatStream(port: port, generator: &generator, counters: counters)
                    if !ok {
                        counters.failures.add(1, ordering: .relaxed)
                        usleep(100_000)
                    }
                }
                workers.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }

        let start = ProcessProbe.now()
        let duration = minutes * 60
        var lastSample = start
        var lastBytes = 0
        var lastRestart = start
        var restarts = 0
        var samples: [(time: Double, rss: Int, fds: Int)] = []
        say("   time      RSS    fds  streams  backend  MiB/s  opened  failures  restarts")
        while ProcessProbe.now() - start < duration {
            usleep(200_000)
            let now = ProcessProbe.now()
            if now - lastRestart >= restartInterval {
                path.relay.restart()
                restarts += 1
                lastRestart = now
            }
            guard now - lastSample >= sampleInterval else { continue }
            let bytes = counters.bytes.load(ordering: .relaxed)
            let rate = Double(bytes - lastBytes) / mebibyte / (now - lastSample)
            lastBytes = bytes
            lastSample = now
            let rss = ProcessProbe.residentBytes()
            let fds = ProcessProbe.openDescriptorCount()
            let backend = world.backend
            let backendStreams = (try? world.backendLoop.submitAndWait { backend.connectionCount }) ?? -1
            samples.append((now - start, rss, fds))
            say(String(
                format: "%6.0f s %6.1f MiB %5d %8d %8d %6.1f %7d %9d %9d", now - start, Double(rss) / mebibyte, fds,
                counters.openStreams.load(ordering: .relaxed), backendStreams, rate,
                counters.streamsOpened.load(ordering: .relaxed), counters.failures.load(ordering: .relaxed), restarts))
        }
        counters.stop.store(true, ordering: .relaxed)
        workers.wait()
        sleep(3)
        let idleDescriptorsAfter = ProcessProbe.openDescriptorCount()
        let total = Double(counters.bytes.load(ordering: .relaxed))

        // Warm-up: the first minute (or the first sixth of a short run) is left out.
        let warmUp = min(60, duration / 6)
        let steady = samples.filter { $0.time >= warmUp }
        let third = max(1, steady.count / 3)
        let firstThird = steady.prefix(third)
        let lastThird = steady.suffix(third)
        func average(_ slice: ArraySlice<(time: Double, rss: Int, fds: Int)>) -> Double {
            slice.isEmpty ? .nan : Double(slice.map(\.rss).reduce(0, +)) / Double(slice.count)
        }
        let early = average(firstThird)
        let late = average(lastThird)
        let drift = (late - early) / early
        let rssFlat = steady.count >= 3 && abs(drift) <= 0.10
        let fdsFlat = idleDescriptorsAfter <= idleDescriptorsBefore + 2
        say("")
        say("soak summary")
        say("  duration \(format(ProcessProbe.now() - start)) s, \(format(total / mebibyte)) MiB moved (\(format(total / mebibyte / duration)) MiB/s average), \(counters.streamsOpened.load(ordering: .relaxed)) streams opened, \(counters.failures.load(ordering: .relaxed)) failed streams, \(restarts) relay restarts")
        say("  RSS: first third (after \(format(warmUp)) s warm-up) average \(format(early / mebibyte)) MiB, last third \(format(late / mebibyte)) MiB, drift \(String(format: "%+.1f", drift * 100)) % (limit ±10 %): \(rssFlat ? "flat" : "NOT FLAT")")
        say("  peak RSS (VmHWM) \(mib(ProcessProbe.peakResidentBytes()))")
        say("  open fds idle before load \(idleDescriptorsBefore), idle after load \(idleDescriptorsAfter): \(fdsFlat ? "no growth" : "GROWTH")")
        path.stop()
        world.shutdown()
        say("soak \(rssFlat && fdsFlat ? "passed" : "FAILED")")
        return rssFlat && fdsFlat
    }

    /// One download or upload of 1–16 MiB on a fresh stream.
    static func bulkStream(port: UInt16, generator: inout SplitMix64, counters: Counters) -> Bool {
        guard let client = BlockingClient.load(port: port, timeoutSeconds: 20) else { return false }
        defer { client.close() }
        counters.openStreams.add(1, ordering: .relaxed)
        counters.streamsOpened.add(1, ordering: .relaxed)
        defer { counters.openStreams.subtract(1, ordering: .relaxed) }
        let count = Int(1 + generator.next() % 16) << 20
        if generator.next() % 2 == 0 {
            guard client.begin(.download, count: UInt64(count)), client.receiveDiscarding(count) else { return false }
        } else {
            var ack = [UInt8](repeating: 0, count: 1)
            guard client.begin(.upload, count: UInt64(count)), client.sendBulk(count), client.receive(into: &ack)
            else { return false }
        }
        counters.bytes.add(count, ordering: .relaxed)
        return true
    }

    /// 10–100 echoed messages of 16–2048 bytes, 5–50 ms apart, on a fresh stream.
    static func chatStream(port: UInt16, generator: inout SplitMix64, counters: Counters) -> Bool {
        guard let client = BlockingClient.load(port: port, timeoutSeconds: 20) else { return false }
        defer { client.close() }
        guard client.begin(.echo) else { return false }
        counters.openStreams.add(1, ordering: .relaxed)
        counters.streamsOpened.add(1, ordering: .relaxed)
        defer { counters.openStreams.subtract(1, ordering: .relaxed) }
        let messages = 10 + Int(generator.next() % 91)
        for _ in 0..<messages {
            guard !counters.stop.load(ordering: .relaxed) else { return true }
            let size = 16 + Int(generator.next() % 2033)
            let message = [UInt8](repeating: UInt8(truncatingIfNeeded: size), count: size)
            var reply = [UInt8](repeating: 0, count: size)
            guard client.send(message), client.receive(into: &reply), reply == message else { return false }
            counters.bytes.add(2 * size, ordering: .relaxed)
            usleep(useconds_t(5_000 + generator.next() % 45_000))
        }
        return true
    }
}
