import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

@testable import WebProxyDaemon
@testable import WebProxySession

extension EndToEndFaultTests {
    /// Cases 3–6: the relay misbehaves on purpose (dropped answers, 503s, a restart, bad frames).
    @Suite struct RelayMisbehaviour {
        static let streams = 4
        static let bytesPerStream = isDebug ? 512 << 10 : 2 << 20

        /// Case 3 — expected: a response the relay applied and then lost (connection reset
        /// instead of the answer) on `/up` or `/down` is retried byte-identically; nothing is
        /// lost and nothing duplicated; the session stays up.
        @Test(arguments: [CarrierMode.https, .httpsLanes], ["/up", "/down"])
        func droppedResponsesLoseAndDuplicateNothing(mode: CarrierMode, endpoint: String) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            try await rig.harness.withRelay { $0.dropAppliedResponses(3, pathSuffix: endpoint) }
            let took = try rig.expectIntactEcho(
                streams: Self.streams, bytesPerStream: Self.bytesPerStream, seed: 0xD20F, within: .seconds(30),
                "\(endpoint) drops over \(mode)")
            let left = try await rig.harness.withRelay { $0.pendingAppliedResponseDrops }
            #expect(left.isEmpty, "the relay did not drop every armed \(endpoint) answer: \(left)")
            let sessions = try await rig.harness.withRelay { $0.sessionCount }
            #expect(sessions == 1 && rig.sessionsUp == 1, "the session was rebuilt")
            print("[e2e] case 3 \(mode) \(endpoint): 3 answers dropped, \(Self.streams)×\(Self.bytesPerStream >> 10) KiB echoed intact in \(milliseconds(took)) ms")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 4 — expected: bursts of `503 + Retry-After: 1` delay traffic but it completes
        /// intact. On https carriers they hit `/up` and `/down` mid-transfer; on websocket
        /// carriers (whose traffic is not HTTP requests) they hit the session creation.
        @Test(arguments: CarrierMode.allCases)
        func burstsOf503DelayButDoNotBreakTraffic(mode: CarrierMode) async throws {
            let harness = try await RelayServerHarness(mode: mode)
            let httpCarrier = mode == .https || mode == .httpsLanes
            if !httpCarrier { try await harness.withRelay { $0.faults.unavailableResponses = 2 } }
            let clock = ContinuousClock()
            let started = clock.now
            let rig = try await EndToEndRig(mode: mode, harness: harness)
            #expect(rig.waitForSessionsUp(within: .seconds(15)))
            let up = clock.now - started
            if httpCarrier { try await harness.withRelay { $0.faults.unavailableResponses = 3 } }
            let took = try rig.expectIntactEcho(
                streams: Self.streams, bytesPerStream: Self.bytesPerStream, seed: 0x503, within: .seconds(30), "503s over \(mode)")
            let left = try await harness.withRelay { $0.faults.unavailableResponses }
            #expect(left == 0, "\(left) armed 503s were not used")
            print("[e2e] case 4 \(mode): session up after \(milliseconds(up)) ms, echo with 503s in \(milliseconds(took)) ms")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 5 — expected: a relay restart mid-transfer ends the session; its local
        /// connections are closed (fail closed) after an unchanged prefix of their echo; the
        /// daemon rebuilds and new local connections carry data again. The recovery time
        /// (restart → first intact echo on a new connection) is printed.
        @Test(arguments: CarrierMode.allCases)
        func relayRestartClosesLocalsAndTheDaemonRecovers(mode: CarrierMode) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let payloads = testPayloads(count: Self.streams, size: 8 << 20, seed: 0x5E5)
            let clients = try (0..<Self.streams).map { _ in try #require(rig.connect(timeoutSeconds: 20)) }
            let senders = clients.enumerated().map { index, client in BackgroundWork { client.send(payloads[index]) } }
            let readers = clients.map { client in BackgroundWork { client.receiveUntilClosed() } }
            // Restart once data flows.
            let flowing = waitUntil(within: .seconds(10)) {
                EndToEndFaultTests.echoedBytesNow(rig.harness) >= 1 << 20
            }
            #expect(flowing)
            let clock = ContinuousClock()
            let restarted = clock.now
            try await rig.harness.withRelay { $0.restart() }
            for (index, reader) in readers.enumerated() {
                let outcome = reader.wait(within: .seconds(15))
                #expect(outcome?.closed == true, "over \(mode) local \(index) was not closed")
                let prefix = outcome.map { EndToEndFaultTests.isPrefix($0.bytes, of: payloads[index]) } ?? false
                #expect(prefix, "over \(mode) local \(index) got bytes that are not its own prefix")
            }
            let closedAfter = clock.now - restarted
            for sender in senders { _ = sender.wait(within: .seconds(5)) }
            for client in clients { client.close() }
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: restarted)
            #expect(recovery != nil, "over \(mode) the daemon did not serve again")
            #expect(rig.sessionsUp >= 2)
            print("[e2e] case 5 \(mode): locals closed \(milliseconds(closedAfter)) ms after the restart; serving again after \(recovery.map { "\(milliseconds($0)) ms" } ?? "never")")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 6 — expected: a malformed downlink (a truncated trailing frame, or a frame one
        /// byte over the payload limit) is a protocol violation: on https, https-lanes and
        /// websocket the session ends, its local connections are closed after an unchanged
        /// prefix, and the rebuilt session serves new connections; on websocket-lanes the
        /// fault is scoped to its lane (that stream's connection is closed, the session lives
        /// on and serves new connections at once).
        @Test(arguments: CarrierMode.allCases, [WebProxyTestRelay.RelayFaults.DownlinkCorruption.truncatedFrame, .oversizedFrame])
        func malformedDownlinkEndsTheSessionCleanly(mode: CarrierMode, corruption: WebProxyTestRelay.RelayFaults.DownlinkCorruption) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let faulted = try await rig.faultMidStream(seed: 0xC0) { $0.faults.corruptNextDownlink = corruption }
            defer { faulted.client.close() }
            let outcome = faulted.outcome
            #expect(outcome.closed, "over \(mode) the local connection stayed open after \(corruption)")
            #expect(EndToEndFaultTests.isPrefix(outcome.bytes, of: faulted.payload), "over \(mode) corrupted bytes reached the client")
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: faulted.sent)
            #expect(recovery != nil, "over \(mode) the daemon did not serve again")
            let lost = rig.log.records.contains { $0.fields.event == .sessionLost }
            #expect(lost == (mode != .websocketLanes), "over \(mode) session lost: \(lost)")
            print("[e2e] case 6 \(mode) \(corruption): local closed after \(outcome.bytes.count) bytes; session lost: \(lost); serving again after \(recovery.map { "\(milliseconds($0)) ms" } ?? "never")")
            await rig.stop()
            rig.expectNoCredentials()
        }
    }
}
