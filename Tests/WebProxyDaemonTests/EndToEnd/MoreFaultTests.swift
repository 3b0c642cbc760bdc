#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

@testable import WebProxyDaemon

extension EndToEndFaultTests {
    /// Cases 13–16: a slow relay, a relay answering garbage, frames for unknown streams, and
    /// a reload during heavy traffic.
    @Suite struct MoreFaults {
        static let streams = 4
        static let bytesPerStream = isDebug ? 256 << 10 : 2 << 20

        /// Echoes fresh payloads on `streams` new clients and checks every byte came back once.
        static func expectIntactEcho(_ rig: EndToEndRig, seed: UInt64, _ what: String) throws {
            let payloads = testPayloads(count: streams, size: bytesPerStream, seed: seed)
            let clients = try (0..<streams).map { _ in try #require(rig.connect(timeoutSeconds: 60)) }
            defer { for client in clients { client.close() } }
            let outcomes = echo(payloads, over: clients, within: .seconds(60))
            for (index, outcome) in outcomes.enumerated() {
                let intact = outcome.received == payloads[index]
                #expect(outcome.sentAll && intact, "\(what): stream \(index) got \(outcome.received.count) bytes, intact: \(intact)")
            }
        }

        /// The daemon's `http` stage log lines (request failures name the error class there).
        static func httpFailureLines(_ rig: EndToEndRig) -> [String] {
            rig.log.records.filter { $0.fields.stage == "http" && $0.fields.error != nil }
                .map { StandardErrorLogBackend.line(for: $0) }
        }

        /// Case 13 — expected: with every relay response held 300 ms, traffic completes
        /// intact on one session. (On websocket only the HTTP answers — bridge page, session
        /// creation — are delayed; the WebSocket messages are not responses.)
        @Test(arguments: [CarrierMode.https, .websocket])
        func slowRelayCompletesIntact(mode: CarrierMode) async throws {
            let harness = try await RelayServerHarness(mode: mode)
            try await harness.withRelay { $0.faults.responseDelay = .milliseconds(300) }
            let clock = ContinuousClock()
            let started = clock.now
            let rig = try await EndToEndRig(mode: mode, harness: harness)
            #expect(rig.waitForSessionsUp(within: .seconds(30)))
            let up = clock.now - started
            let echoStarted = clock.now
            try Self.expectIntactEcho(rig, seed: 0x510, "slow relay over \(mode)")
            let took = clock.now - echoStarted
            #expect(rig.sessionsUp == 1, "over \(mode) the session was rebuilt")
            print("[e2e] case 13 \(mode): 300 ms per response; session up after \(milliseconds(up)) ms; \(Self.streams)×\(Self.bytesPerStream >> 10) KiB echoed intact in \(milliseconds(took)) ms")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// What a relay answering nonsense sends instead of a `/down` answer.
        enum Garbage: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case notHTTP, oversizedHead, oversizedBody

            var testDescription: String { rawValue }

            var bytes: [UInt8] {
                switch self {
                case .notHTTP:
                    return Array("SSH-2.0-NotARelay\r\nthis is not an HTTP response\r\n\r\n".utf8)
                case .oversizedHead:
                    // 80 fields of 256 bytes: over the 16 KiB head limit, under 100 fields.
                    var text = "HTTP/1.1 200 OK\r\n"
                    for index in 0..<80 { text += "X-Filler-\(index): " + String(repeating: "a", count: 240) + "\r\n" }
                    return Array((text + "Content-Length: 0\r\n\r\n").utf8)
                case .oversizedBody:
                    let size = RelayTransport.maxResponseBodyBytes + 1
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n"
                    return Array(head.utf8) + [UInt8](repeating: 0, count: size)
                }
            }
        }

        /// Case 14a — expected: one garbage answer to `/down` is no HTTP response, which the
        /// contract (relay-protocol.md §6) retries identically: traffic completes intact, the
        /// session stays up, the log names the error class.
        @Test(arguments: Garbage.allCases)
        func oneGarbageAnswerIsRetriedIntact(garbage: Garbage) async throws {
            let rig = try await EndToEndRig(mode: .https)
            #expect(rig.waitForSessionsUp())
            try await rig.harness.withRelay { $0.replaceAppliedResponses(1, pathSuffix: "/down", with: garbage.bytes) }
            let clock = ContinuousClock()
            let started = clock.now
            try Self.expectIntactEcho(rig, seed: 0x6A4, "one \(garbage) answer")
            let took = clock.now - started
            let left = try await rig.harness.withRelay { $0.pendingRawResponses }
            #expect(left.isEmpty, "the armed \(garbage) answer was not used: \(left)")
            #expect(rig.sessionsUp == 1, "one \(garbage) answer rebuilt the session")
            let failures = Self.httpFailureLines(rig)
            #expect(!failures.isEmpty, "no log line names the \(garbage) failure")
            print("[e2e] case 14a \(garbage): echoed intact in \(milliseconds(took)) ms; logged: \(failures.first ?? "nothing")")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 14b — expected: a relay that answers every `/down` with garbage exhausts the
        /// retries: the session ends, its local connection is closed after an unchanged prefix,
        /// and once the relay answers properly again the rebuilt session serves new
        /// connections. No crash; no credential in the log.
        @Test(arguments: Garbage.allCases)
        func garbageEveryTimeEndsTheSessionAndRecovers(garbage: Garbage) async throws {
            let rig = try await EndToEndRig(mode: .https, settings: EndToEndFaultTests.failFastSettings)
            #expect(rig.waitForSessionsUp())
            let client = try #require(rig.connect(timeoutSeconds: 10))
            defer { client.close() }
            let payloads = testPayloads(count: 2, size: 32 << 10, seed: 0x6A5)
            #expect(client.send(payloads[0]))
            #expect(client.receive(count: payloads[0].count) == payloads[0])
            try await rig.harness.withRelay { $0.replaceAppliedResponses(1000, pathSuffix: "/down", with: garbage.bytes) }
            let clock = ContinuousClock()
            let started = clock.now
            #expect(client.send(payloads[1]))
            let outcome = client.receiveUntilClosed()
            let closedAfter = clock.now - started
            let lost = waitUntil(within: .seconds(20)) { rig.log.records.contains { $0.fields.event == .sessionLost } }
            try await rig.harness.withRelay { $0.replaceAppliedResponses(0, pathSuffix: "/down") }
            #expect(outcome.closed, "the local connection stayed open under \(garbage) answers")
            #expect(EndToEndFaultTests.isPrefix(outcome.bytes, of: payloads[1]), "corrupted bytes reached the client")
            #expect(lost, "\(garbage) answers did not end the session")
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: started, within: .seconds(30))
            #expect(recovery != nil, "the daemon did not serve again after \(garbage) answers")
            #expect(rig.sessionsUp >= 2)
            let failures = Self.httpFailureLines(rig)
            #expect(!failures.isEmpty, "no log line names the \(garbage) failure")
            let lostLine = rig.log.records.first { $0.fields.event == .sessionLost }.map { StandardErrorLogBackend.line(for: $0) }
            print("[e2e] case 14b \(garbage): local closed after \(milliseconds(closedAfter)) ms; serving again after \(recovery.map { "\(milliseconds($0)) ms" } ?? "never"); \(failures.count) failed requests, e.g. \(failures.first ?? "none"); \(lostLine ?? "no session-lost line")")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 15 — expected: a DATA frame for a stream id the client never opened is a
        /// protocol error (relay-protocol.md §5): the session ends, its local connection is
        /// closed after an unchanged prefix, and the rebuilt session serves new connections.
        @Test(arguments: [CarrierMode.https, .websocket])
        func dataForAnUnknownStreamEndsTheSessionAndRecovers(mode: CarrierMode) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let client = try #require(rig.connect(timeoutSeconds: 10))
            defer { client.close() }
            let payloads = testPayloads(count: 2, size: 32 << 10, seed: 0x15)
            #expect(client.send(payloads[0]))
            #expect(client.receive(count: payloads[0].count) == payloads[0])
            try await rig.harness.withRelay { $0.faults.corruptNextDownlink = .unknownStream }
            let clock = ContinuousClock()
            let started = clock.now
            #expect(client.send(payloads[1]))
            let outcome = client.receiveUntilClosed()
            #expect(outcome.closed, "over \(mode) the local connection stayed open")
            #expect(EndToEndFaultTests.isPrefix(outcome.bytes, of: payloads[1]), "over \(mode) corrupted bytes reached the client")
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: started)
            #expect(recovery != nil, "over \(mode) the daemon did not serve again")
            let lost = rig.log.records.first { $0.fields.event == .sessionLost }
            #expect(lost?.fields.error == SessionFailure.Kind.protocolViolation.rawValue, "over \(mode) the session ended as \(lost?.fields.error ?? "nothing")")
            print("[e2e] case 15 \(mode): local closed after \(outcome.bytes.count) bytes; serving again after \(recovery.map { "\(milliseconds($0)) ms" } ?? "never"); \(lost.map { StandardErrorLogBackend.line(for: $0) } ?? "no session-lost line")")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 16 — expected: a reload (SIGHUP's path) with an unchanged file, then with a
        /// changed section of another relay, during heavy traffic on `busy` leaves `busy`
        /// alone: its streams echo intact and its session is never rebuilt.
        @Test(arguments: [CarrierMode.https, .websocket])
        func reloadDoesNotInterruptABusyRelay(mode: CarrierMode) async throws {
            let harness = try await RelayServerHarness(mode: mode)
            let caPath = temporaryFile(named: "reload-ca-\(mode.rawValue)-\(UInt32.random(in: 0...UInt32.max)).pem", harness.caPEM)
            let busyPort = unusedLoopbackPort()
            let busy = """
                [relay busy]
                link = \(EndToEndRig.link)
                listen = 127.0.0.1:\(busyPort)
                ca-file = \(caPath)
                connect-to = 127.0.0.1:\(harness.port)

                """
            func other(_ port: UInt16) -> String {
                "[relay other]\nlink = \(EndToEndRig.link)\nlisten = 127.0.0.1:\(port)\nconnect-to = 127.0.0.1:\(unusedLoopbackPort())\n"
            }
            let fileName = "reload.\(mode.rawValue).\(UInt32.random(in: 0...UInt32.max)).conf"  // dots: no token-shaped run in the log
            let path = temporaryFile(named: fileName, busy + other(unusedLoopbackPort()))
            let loaded = try DaemonConfiguration.load(path: path, environment: [:])
            let log = MemoryLogBackend()
            let daemon = try Daemon(
                configuration: loaded.configuration, configurationPath: path, environment: [:],
                logger: Logger(backend: log, level: .debug).redacting([try ProxySecret(parsing: RelayServerHarness.secret)]), drainLimit: .seconds(2))
            try daemon.start()
            defer {
                daemon.requestStop()
                _ = daemon.waitUntilStopped()
            }
            func busyEvents(_ event: LogEvent) -> Int {
                log.records.filter { $0.fields.relay == "busy" && $0.fields.event == event }.count
            }
            func reloaded(_ summary: String) -> Bool {
                waitUntil(within: .seconds(30)) { log.records.contains { $0.message == summary } }
            }
            #expect(waitUntil(within: .seconds(15)) { busyEvents(.sessionUp) == 1 })

            let size = isDebug ? 8 << 20 : 32 << 20
            let payloads = testPayloads(count: Self.streams, size: size, seed: 0x16)
            let clients = try (0..<Self.streams).map { _ in try #require(BlockingClient(port: busyPort, timeoutSeconds: 60)) }
            defer { for client in clients { client.close() } }
            let traffic = BackgroundWork { echo(payloads, over: clients, within: .seconds(120)) }
            #expect(waitUntil(within: .seconds(20)) { EndToEndFaultTests.echoedBytesNow(harness) >= 1 << 20 })
            let clock = ContinuousClock()
            let started = clock.now
            daemon.requestReload()
            #expect(reloaded("reload: 0 added, 0 removed, 0 changed, 2 unchanged"))
            _ = temporaryFile(named: fileName, busy + other(unusedLoopbackPort()))
            daemon.requestReload()
            #expect(reloaded("reload: 0 added, 0 removed, 1 changed, 1 unchanged"))
            let reloadsTook = clock.now - started
            let echoedDuringReloads = EndToEndFaultTests.echoedBytesNow(harness)
            let outcomes = try #require(traffic.wait(within: .seconds(150)))
            let took = clock.now - started
            for (index, outcome) in outcomes.enumerated() {
                let intact = outcome.received == payloads[index]
                #expect(outcome.sentAll && intact, "over \(mode) stream \(index) got \(outcome.received.count) bytes, intact: \(intact)")
            }
            #expect(echoedDuringReloads < Self.streams * size, "the traffic ended before the reloads did")
            #expect(busyEvents(.sessionUp) == 1 && busyEvents(.sessionLost) == 0, "over \(mode) the busy relay's session was rebuilt")
            let sessions = try await harness.withRelay { $0.sessionCount }
            #expect(sessions == 1)
            print("[e2e] case 16 \(mode): two reloads done \(milliseconds(reloadsTook)) ms after the first (\(echoedDuringReloads >> 20) of \(Self.streams * size >> 20) MiB echoed by then); \(Self.streams)×\(size >> 20) MiB intact \(milliseconds(took)) ms after it; busy sessions up: \(busyEvents(.sessionUp))")
            let lines = log.records.map { StandardErrorLogBackend.line(for: $0) }
            for line in lines {
                #expect(!line.contains(RelayServerHarness.secret) && !line.contains("tg://") && !containsTokenShape(line), "log leaks a credential: \(line)")
            }
            await harness.shutdown()
        }
    }
}
