#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

extension EndToEndFaultTests {
    /// Cases 1 and 2: many streams at once, and a stream whose local reader stalls.
    @Suite struct StreamLoad {
        static let streams = 16
        static let bytesPerStream = ProcessEnvironment.current()["LOAD_MIB"].flatMap { Int($0) }.map { $0 << 20 } ?? (isDebug ? 512 << 10 : 4 << 20)

        /// Case 1 — expected: 16 concurrent streams of one session echo every byte both ways,
        /// unchanged and exactly once.
        @Test(arguments: CarrierMode.allCases)
        func sixteenConcurrentStreamsEchoEveryByte(mode: CarrierMode) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let payloads = testPayloads(count: Self.streams, size: Self.bytesPerStream, seed: 0x16 &+ UInt64(mode.rawValue.utf8.count))
            let clients = try (0..<Self.streams).map { _ in try #require(rig.connect(timeoutSeconds: 30)) }
            let clock = ContinuousClock()
            let started = clock.now
            let outcomes = echo(payloads, over: clients, within: .seconds(40))
            let took = clock.now - started
            for (index, outcome) in outcomes.enumerated() {
                let intact = outcome.received == payloads[index]
                #expect(outcome.sentAll, "stream \(index) over \(mode) could not send everything")
                #expect(intact, "stream \(index) over \(mode): \(outcome.received.count) bytes came back, intact: \(intact)")
            }
            let sessions = try await rig.harness.withRelay { $0.sessionCount }
            #expect(sessions == 1)
            print("[e2e] case 1 \(mode): \(Self.streams) streams × \(Self.bytesPerStream >> 10) KiB each way in \(milliseconds(took)) ms")
            for client in clients { client.close() }
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 2 — expected: a local client that stops reading stalls only its own stream:
        /// backpressure reaches its sender before it has sent everything, a second stream of
        /// the same session runs to completion meanwhile, and the daemon never holds more than
        /// its bounds, counted by the daemon itself (`QueuedBytes`): per stream the 8 MiB
        /// uplink queue plus the 4 MiB receive window, per session the 32 MiB bound. Once
        /// the stalled client reads, it gets every byte intact.
        @Test(arguments: CarrierMode.allCases)
        func aStalledReaderStallsOnlyItsOwnStream(mode: CarrierMode) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let stalledSize = Self.stalledSize
            let seed = 0x57A1 &+ UInt64(mode.rawValue.utf8.count)
            let stalledPayload = testPayloads(count: 1, size: stalledSize, seed: seed)[0]
            let neighbourPayload = testPayloads(count: 1, size: 1 << 20, seed: ~seed)[0]
            let stalled = try #require(rig.connect(timeoutSeconds: 30))
            stalled.setBuffers(64 << 10)
            let neighbour = try #require(rig.connect(timeoutSeconds: 30))

            // The stalled client writes in 64 KiB pieces from its own thread, counting progress.
            let sent = Atomic<Int>(0)
            let sender = BackgroundWork { () -> Bool in
                var offset = 0
                while offset < stalledPayload.count {
                    let end = min(stalledPayload.count, offset + (64 << 10))
                    guard stalled.send(Array(stalledPayload[offset..<end])) else { return false }
                    offset = end
                    sent.store(offset, ordering: .relaxed)
                }
                return true
            }
            // Wait until its sending stops making progress (backpressure reached it).
            var last = -1
            var stalledAt = 0
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(20)
            while clock.now < deadline {
                usleep(300_000)
                let now = sent.load(ordering: .relaxed)
                if now == last { stalledAt = now; break }
                last = now
            }
            #expect(stalledAt > 0 && stalledAt < stalledPayload.count, "over \(mode) the stalled client sent \(stalledAt) of \(stalledPayload.count) bytes")

            let neighbourOutcome = echo([neighbourPayload], over: [neighbour], within: .seconds(20))[0]
            #expect(neighbourOutcome.received == neighbourPayload, "over \(mode) the neighbour got \(neighbourOutcome.received.count) bytes")
            let queued = try #require(rig.daemon.relaySnapshots()?.first?.queued)
            let settings = SessionSettings()
            // Its uplink queue (one batch on the https carriers, two messages on the WebSocket
            // ones) and its receive window.
            let queueBound = mode == .https || mode == .httpsLanes ? settings.perStreamQueueLimit : 2 * SessionDriver.socketBufferBytes
            let streamBound = queueBound + Int(FlowWindow.initialCredit)
            #expect(queued.peakStream <= streamBound, "over \(mode) one stream held \(queued.peakStream) bytes")
            #expect(queued.peakTotal <= settings.globalQueueLimit, "over \(mode) the session held \(queued.peakTotal) bytes")
            #expect(queued.peakStream > 0, "over \(mode) the daemon counted nothing queued while a reader stalled")
            print("[e2e] case 2 \(mode): stalled after \(stalledAt >> 10) KiB of \(stalledPayload.count >> 10) KiB; daemon held at most \(queued.peakStream >> 10) KiB for one stream, \(queued.peakTotal >> 10) KiB in all; neighbour \(neighbourPayload.count >> 10) KiB echoed intact: \(neighbourOutcome.received == neighbourPayload)")

            // Now the stalled client reads: everything comes back intact.
            let drained = onThreads(1, within: .seconds(40)) { _ in stalled.receive(count: stalledPayload.count) }[0] ?? []
            #expect(sender.wait(within: .seconds(5)) == true)
            #expect(drained.count == stalledPayload.count && drained == stalledPayload, "over \(mode) the stalled stream got \(drained.count) bytes back")
            stalled.close()
            neighbour.close()
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Senders usually stall after 16–26 MiB: the daemon's bounds plus the relay's, the
        /// echo's and the kernel's socket buffers, which autotune (up to 32 MiB per socket on
        /// the CI machine). Once a debug run sent all of 40 MiB, so the payload is 96 MiB.
        static let stalledSize = 96 << 20
    }
}
