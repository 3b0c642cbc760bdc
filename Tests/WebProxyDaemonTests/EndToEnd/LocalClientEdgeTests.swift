#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

extension EndToEndFaultTests {
    /// Cases 7, 8 and 12: local clients that half-close, arrive by the thousand, or are
    /// cut off by a stop.
    @Suite struct LocalClientEdges {
        /// Case 7 — expected: a client that half-closes after sending gets every byte to the
        /// relay: the daemon flushes its queued DATA before CLOSE. The protocol makes CLOSE an
        /// abort, not a half-close (PROTOCOL.md §4.4 rule 4: each side drops what it still
        /// queues for the stream), and the daemon finishes the local connection once CLOSE is
        /// queued, so neither the echo nor the backend is promised the bytes: the relay may
        /// drop what it still holds (ours does when CLOSE arrives while it is still dialing
        /// the backend, as on the websocket carriers). Asserted: the relay received exactly
        /// the bytes sent, what came back is an unchanged prefix, and the connection ended.
        @Test(arguments: CarrierMode.allCases)
        func aHalfClosedClientsBytesAllReachTheRelay(mode: CarrierMode) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let echoedBefore = EndToEndFaultTests.echoedBytesNow(rig.harness)
            let payload = testPayloads(count: 1, size: 256 << 10, seed: 0x7)[0]
            let client = try #require(rig.connect(timeoutSeconds: 10))
            defer { client.close() }
            #expect(client.send(payload))
            client.shutdownWrite()
            let outcome = client.receiveUntilClosed()
            #expect(outcome.closed, "over \(mode) the half-closed connection never ended")
            #expect(EndToEndFaultTests.isPrefix(outcome.bytes, of: payload), "over \(mode) the echo was altered")
            var atRelay = 0
            let all = waitUntil(within: .seconds(15)) {
                atRelay = EndToEndFaultTests.relayUplinkBytesNow(rig.harness)
                return atRelay >= payload.count
            }
            #expect(all && atRelay == payload.count, "over \(mode) \(atRelay) of \(payload.count) bytes reached the relay")
            let atBackend = EndToEndFaultTests.echoedBytesNow(rig.harness) - echoedBefore
            print("[e2e] case 7 \(mode): \(atRelay) of \(payload.count) bytes reached the relay, \(atBackend) the backend; \(outcome.bytes.count) echoed back before the close")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 8 — expected: 1000 local connections at once: at most 128 are carried, every
        /// other one is closed at once and counted in the log; the carried ones still echo,
        /// and after they all leave a new connection is served.
        @Test(arguments: CarrierMode.allCases)
        func aThousandConnectionsAtOnceKeepAtMost128(mode: CarrierMode) async throws {
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            if limit.rlim_cur < limit.rlim_max {
                limit.rlim_cur = limit.rlim_max
                setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            }
            // Each attempt costs a client and a daemon descriptor; carried ones also a relay
            // backend and an echo descriptor (and a lane socket on websocket-lanes).
            let attempts = min(1000, (Int(limit.rlim_cur) - 1000) / 2)
            // The watchdog ticks, and sums the closed connections in the log, every 3 s.
            var settings = SessionSettings()
            settings.stallBound = .seconds(9)
            let rig = try await EndToEndRig(mode: mode, settings: settings)
            #expect(rig.waitForSessionsUp())
            let clock = ContinuousClock()
            let started = clock.now
            let clients = (0..<attempts).compactMap { _ in rig.connect(timeoutSeconds: 10) }
            defer { for client in clients { client.close() } }
            // The kernel may refuse a few connects while the accept queue is full.
            let kernelRefused = attempts - clients.count
            #expect(kernelRefused <= attempts / 100, "only \(clients.count) of \(attempts) connects succeeded")
            var closed = Set<Int>()
            let settled = waitUntil(within: .seconds(10)) {
                for (index, client) in clients.enumerated() where !closed.contains(index) && client.isClosedNow() {
                    closed.insert(index)
                }
                return clients.count - closed.count <= 128
            }
            let refusedIn = clock.now - started
            #expect(settled, "over \(mode) \(clients.count - closed.count) connections stayed open")
            // Nothing else closes once the surplus is gone.
            usleep(200_000)
            for (index, client) in clients.enumerated() where !closed.contains(index) && client.isClosedNow() {
                closed.insert(index)
            }
            let live = clients.enumerated().filter { !closed.contains($0.offset) }.map(\.element)
            #expect(live.count == 128, "over \(mode) \(live.count) connections are carried")
            // The first refusals have a line each ("… (N so far)"), a few per tick; the tick's
            // summary ("closed N local connections in the last …: N stream-limit") sums them all.
            let lines = rig.log.records.filter { $0.message.hasPrefix("closed a local connection: stream limit reached (") }
            #expect(!lines.isEmpty && lines.count < closed.count, "over \(mode) \(lines.count) refusal lines for \(closed.count) closed")
            func summed() -> Int {
                rig.log.records.filter { $0.message.contains("in the last") }.flatMap { record in
                    (record.message.split(separator: ": ").last ?? "").split(separator: ", ").compactMap { part in
                        part.hasSuffix(" stream-limit") ? Int(part.split(separator: " ")[0]) : nil
                    }
                }.reduce(0, +)
            }
            _ = waitUntil(within: .seconds(6)) { summed() >= closed.count }
            #expect(
                summed() >= closed.count && summed() <= closed.count + kernelRefused,
                "over \(mode) the log sums \(summed()) refusals for \(closed.count) closed")
            let sample = Array(live.prefix(4))
            let payloads = testPayloads(count: sample.count, size: 8 << 10, seed: 0x1000)
            let echoes = echo(payloads, over: sample, within: .seconds(20))
            for (index, outcome) in echoes.enumerated() {
                #expect(outcome.received == payloads[index], "over \(mode) carried connection \(index) did not echo")
            }
            for client in clients { client.close() }
            let afterwards = clock.now
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: afterwards)
            #expect(recovery != nil, "over \(mode) no connection was served after the crowd left")
            print("[e2e] case 8 \(mode): \(attempts) attempts (\(kernelRefused) refused by the kernel), \(closed.count) closed at once within \(milliseconds(refusedIn)) ms, \(live.count) carried; a new one served \(recovery.map { "\(milliseconds($0)) ms" } ?? "never") after the crowd left")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 12 — expected: a stop request (SIGTERM's path) during heavy traffic finishes
        /// within the drain limit, closes every local connection after an unchanged prefix,
        /// and sends the DELETE (the relay forgets the session; the log says it was deleted).
        @Test(arguments: CarrierMode.allCases)
        func aStopDuringHeavyTrafficDrainsAndDeletes(mode: CarrierMode) async throws {
            let drainLimit = Duration.seconds(2)
            let rig = try await EndToEndRig(mode: mode, drainLimit: drainLimit)
            #expect(rig.waitForSessionsUp())
            let payloads = testPayloads(count: 8, size: 8 << 20, seed: 0x12)
            let clients = try (0..<payloads.count).map { _ in try #require(rig.connect(timeoutSeconds: 10)) }
            defer { for client in clients { client.close() } }
            let senders = clients.enumerated().map { index, client in BackgroundWork { client.send(payloads[index]) } }
            let readers = clients.map { client in BackgroundWork { client.receiveUntilClosed() } }
            #expect(waitUntil(within: .seconds(10)) { EndToEndFaultTests.echoedBytesNow(rig.harness) >= 2 << 20 })
            let took = rig.stopDaemon()
            #expect(took < drainLimit + .seconds(1), "over \(mode) the stop took \(took)")
            for (index, reader) in readers.enumerated() {
                let outcome = reader.wait(within: .seconds(10))
                #expect(outcome?.closed == true, "over \(mode) local \(index) was not closed")
                let prefix = outcome.map { EndToEndFaultTests.isPrefix($0.bytes, of: payloads[index]) } ?? false
                #expect(prefix, "over \(mode) local \(index) got altered bytes")
            }
            for sender in senders { _ = sender.wait(within: .seconds(5)) }
            let sessions = try await rig.harness.withRelay { $0.sessionCount }
            #expect(sessions == 0, "over \(mode) the relay still holds the session: no DELETE")
            let deleted = rig.log.records.contains { $0.message.hasPrefix("session deleted (204)") }
            #expect(deleted, "over \(mode) the log does not say the session was deleted")
            print("[e2e] case 12 \(mode): stopped in \(milliseconds(took)) ms (drain limit \(milliseconds(drainLimit)) ms); DELETE answered 204: \(deleted)")
            await rig.stop()
            rig.expectNoCredentials()
        }
    }
}

extension BlockingClient {
    /// Whether the peer has closed (EOF or reset), without waiting.
    func isClosedNow() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }
}
