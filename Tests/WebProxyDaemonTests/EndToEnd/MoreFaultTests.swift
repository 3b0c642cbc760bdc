import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

extension EndToEndFaultTests {
    /// Cases 13–18: a slow relay, a relay answering garbage (to the carrier's requests, the
    /// bootstrap and the WebSocket upgrade), frames for unknown streams, and a reload during
    /// heavy traffic.
    @Suite struct MoreFaults {
        static let streams = 4
        static let bytesPerStream = isDebug ? 256 << 10 : 2 << 20

        /// The daemon's log lines of `stage` that name an error class without a session event:
        /// request failures (`http`) and WebSocket upgrade failures (`carrier`).
        static func failureLines(_ rig: EndToEndRig, stage: String = "http") -> [String] {
            rig.log.records.filter { $0.fields.stage == stage && $0.fields.error != nil && $0.fields.event == nil }
                .map { String(StandardErrorLogBackend.line(for: $0).prefix { $0 != "\n" }) }
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
            let took = try rig.expectIntactEcho(
                streams: Self.streams, bytesPerStream: Self.bytesPerStream, seed: 0x510, within: .seconds(60), "slow relay over \(mode)")
            #expect(rig.sessionsUp == 1, "over \(mode) the session was rebuilt")
            print("[e2e] case 13 \(mode): 300 ms per response; session up after \(milliseconds(up)) ms; \(Self.streams)×\(Self.bytesPerStream >> 10) KiB echoed intact in \(milliseconds(took)) ms")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// What a relay answering nonsense sends instead of a proper answer.
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

        /// An https carrier and the endpoint whose answers case 14 replaces with garbage.
        struct CarrierEndpoint: Sendable, CustomStringConvertible {
            let mode: CarrierMode
            let path: String

            var description: String { "\(mode) \(path)" }

            static let all = [CarrierMode.https, .httpsLanes].flatMap { mode in
                ["/down", "/up"].map { CarrierEndpoint(mode: mode, path: $0) }
            }
        }

        /// Case 14a — expected: one garbage answer to `/down` or `/up` (applied by the relay)
        /// is no HTTP response, which PROTOCOL.md §6.1 retries identically:
        /// traffic completes intact, the session stays up, the log names the error class.
        @Test(arguments: CarrierEndpoint.all, Garbage.allCases)
        func oneGarbageAnswerIsRetriedIntact(target: CarrierEndpoint, garbage: Garbage) async throws {
            let rig = try await EndToEndRig(mode: target.mode)
            #expect(rig.waitForSessionsUp())
            try await rig.harness.withRelay { $0.replaceAppliedResponses(1, pathSuffix: target.path, with: garbage.bytes) }
            let took = try rig.expectIntactEcho(
                streams: Self.streams, bytesPerStream: Self.bytesPerStream, seed: 0x6A4, within: .seconds(60), "one \(garbage) answer")
            let left = try await rig.harness.withRelay { $0.pendingRawResponses }
            #expect(left.isEmpty, "the armed \(garbage) answer was not used: \(left)")
            #expect(rig.sessionsUp == 1, "one \(garbage) answer rebuilt the session")
            let failures = Self.failureLines(rig)
            #expect(!failures.isEmpty, "no log line names the \(garbage) failure")
            print("[e2e] case 14a \(target) \(garbage): echoed intact in \(milliseconds(took)) ms; logged: \(failures.first ?? "nothing")")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 14b — expected: a relay that answers every `/down` or every `/up` with garbage
        /// exhausts the retries: the session ends, its local connection is closed after an
        /// unchanged prefix, and once the relay answers properly again the rebuilt session
        /// serves new connections. No crash; no credential in the log.
        @Test(arguments: CarrierEndpoint.all, Garbage.allCases)
        func garbageEveryTimeEndsTheSessionAndRecovers(target: CarrierEndpoint, garbage: Garbage) async throws {
            let rig = try await EndToEndRig(mode: target.mode, settings: EndToEndFaultTests.failFastSettings)
            #expect(rig.waitForSessionsUp())
            let faulted = try await rig.faultMidStream(seed: 0x6A5) {
                $0.replaceAppliedResponses(1000, pathSuffix: target.path, with: garbage.bytes)
            }
            defer { faulted.client.close() }
            let (outcome, started) = (faulted.outcome, faulted.sent)
            let closedAfter = ContinuousClock.now - started
            let lost = waitUntil(within: .seconds(20)) { rig.log.records.contains { $0.fields.event == .sessionLost } }
            try await rig.harness.withRelay { $0.replaceAppliedResponses(0, pathSuffix: target.path) }
            #expect(outcome.closed, "the local connection stayed open under \(garbage) answers")
            #expect(EndToEndFaultTests.isPrefix(outcome.bytes, of: faulted.payload), "corrupted bytes reached the client")
            #expect(lost, "\(garbage) answers did not end the session")
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: started, within: .seconds(30))
            #expect(recovery != nil, "the daemon did not serve again after \(garbage) answers")
            #expect(rig.sessionsUp >= 2)
            let failures = Self.failureLines(rig)
            #expect(!failures.isEmpty, "no log line names the \(garbage) failure")
            let lostLine = rig.log.records.first { $0.fields.event == .sessionLost }.map { StandardErrorLogBackend.line(for: $0) }
            print("[e2e] case 14b \(target) \(garbage): local closed after \(milliseconds(closedAfter)) ms; serving again after \(recovery.map { "\(milliseconds($0)) ms" } ?? "never"); \(failures.count) failed requests, e.g. \(failures.first ?? "none"); \(lostLine ?? "no session-lost line")")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// Case 15 — expected: a DATA frame for a stream id the client never opened is a
        /// protocol error (PROTOCOL.md §4.4 rule 5; on a lane carrier it is also a
        /// cross-lane frame). On https, https-lanes and websocket the session ends, its local
        /// connection is closed after an unchanged prefix, and the rebuilt session serves new
        /// connections; on websocket-lanes the error is scoped to its lane (§4.3): that
        /// stream's connection is closed, the session lives on and serves at once.
        @Test(arguments: CarrierMode.allCases)
        func dataForAnUnknownStreamFailsItsScopeAndRecovers(mode: CarrierMode) async throws {
            let rig = try await EndToEndRig(mode: mode)
            #expect(rig.waitForSessionsUp())
            let faulted = try await rig.faultMidStream(seed: 0x15) { $0.faults.corruptNextDownlink = .unknownStream }
            defer { faulted.client.close() }
            let outcome = faulted.outcome
            #expect(outcome.closed, "over \(mode) the local connection stayed open")
            #expect(EndToEndFaultTests.isPrefix(outcome.bytes, of: faulted.payload), "over \(mode) corrupted bytes reached the client")
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: faulted.sent)
            #expect(recovery != nil, "over \(mode) the daemon did not serve again")
            let lost = rig.log.records.first { $0.fields.event == .sessionLost }
            let aborted = rig.lines.first { $0.contains("aborted: the relay sent DATA for stream 16777200") }
            if mode == .websocketLanes {
                #expect(lost == nil && rig.sessionsUp == 1, "over \(mode) the lane's error ended the session")
                #expect(aborted != nil, "over \(mode) no log line names the aborted lane")
            } else {
                #expect(lost?.fields.error == SessionFailure.Kind.protocolViolation.rawValue, "over \(mode) the session ended as \(lost?.fields.error ?? "nothing")")
            }
            let logged = lost.map { StandardErrorLogBackend.line(for: $0) } ?? aborted ?? "no session-lost or abort line"
            print("[e2e] case 15 \(mode): local closed after \(outcome.bytes.count) bytes; serving again after \(recovery.map { "\(milliseconds($0)) ms" } ?? "never"); \(logged)")
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

        /// A request of the session's setup that cases 17 and 18 answer with garbage.
        enum SetupRequest: String, Sendable, CustomTestStringConvertible {
            case bridgePage, sessionCreation, upgrade

            var testDescription: String { rawValue }

            /// The end of its path (PROTOCOL.md §3.1, §3.3, §5.3).
            var pathSuffix: String {
                switch self {
                case .bridgePage: "/"
                case .sessionCreation: "/session"
                case .upgrade: "/ws"
                }
            }
        }

        /// What the daemon did while every `SetupRequest` got garbage, and after.
        struct SetupGarbageRun {
            let rig: EndToEndRig
            /// Sessions the log called up, and the relay held, before the garbage was disarmed.
            let sessionsUpWhileArmed: Int
            let relaySessionsWhileArmed: Int
            /// The first session-down record (`relay-unreachable`, `relay-rejected` or `session-lost`).
            let down: LogRecord?
            /// Log lines naming the failed requests or upgrades.
            let failures: [String]
            /// The local connection's wait until it was closed.
            let closedAfter: Duration
            /// From disarming to the first intact echo on a new connection.
            let recovery: Duration?

            var summary: String {
                "local closed after \(milliseconds(closedAfter)) ms; serving again \(recovery.map { "\(milliseconds($0)) ms" } ?? "never") after the relay answered properly; failures logged: \(failures.count), e.g. \(failures.first ?? "none"); \(down.map { StandardErrorLogBackend.line(for: $0) } ?? "no session-down line")"
            }
        }

        /// Answers every `request` with `garbage` (never applied by the relay) from before the
        /// daemon starts; checks that a local connection is closed without a byte (fail closed),
        /// that a session-down line and a failure line with the error class are logged and the
        /// garbage was used; then disarms it and measures how long until the daemon serves.
        static func failsClosedUntilTheRelayAnswers(
            _ request: SetupRequest, _ garbage: Garbage, mode: CarrierMode
        ) async throws -> SetupGarbageRun {
            let harness = try await RelayServerHarness(mode: mode)
            try await harness.withRelay { $0.answerUnapplied(1000, pathSuffix: request.pathSuffix, with: garbage.bytes) }
            let rig = try await EndToEndRig(mode: mode, settings: EndToEndFaultTests.failFastSettings, harness: harness)
            let clock = ContinuousClock()
            let client = try #require(rig.connect(timeoutSeconds: 10))
            defer { client.close() }
            let connected = clock.now
            #expect(client.send(testPayloads(count: 1, size: 16 << 10, seed: 0x17)[0]))
            let outcome = client.receiveUntilClosed()
            let closedAfter = clock.now - connected
            #expect(outcome.closed && outcome.bytes.isEmpty, "\(garbage) \(request) answers over \(mode): closed \(outcome.closed) after \(outcome.bytes.count) bytes")
            let downEvents: [LogEvent] = [.relayUnreachable, .relayRejected, .sessionLost]
            #expect(waitUntil(within: .seconds(20)) { rig.log.records.contains { $0.fields.event.map(downEvents.contains) ?? false } })
            let left = try await harness.withRelay { $0.pendingUnappliedAnswers[request.pathSuffix] ?? 0 }
            #expect(left < 1000, "no \(request) got the \(garbage) answer")
            let relaySessions = try await harness.withRelay { $0.sessionCount }
            let sessionsUp = rig.sessionsUp
            let stage = request == .upgrade ? "carrier" : "http"
            let failures = failureLines(rig, stage: stage)
            #expect(!failures.isEmpty, "no \(stage) log line names the \(garbage) failure")
            try await harness.withRelay { $0.answerUnapplied(0, pathSuffix: request.pathSuffix) }
            let recovery = EndToEndFaultTests.timeUntilServing(rig, since: clock.now, within: .seconds(30))
            #expect(recovery != nil, "the daemon did not serve again after \(garbage) \(request) answers over \(mode)")
            return SetupGarbageRun(
                rig: rig, sessionsUpWhileArmed: sessionsUp, relaySessionsWhileArmed: relaySessions,
                down: rig.log.records.first { $0.fields.event.map(downEvents.contains) ?? false }, failures: failures,
                closedAfter: closedAfter, recovery: recovery)
        }

        /// Case 17 — expected: a relay that answers the bootstrap — the bridge page GET or the
        /// session creation — with garbage builds no session: every attempt fails with the
        /// error class logged, the bootstrap ends as `relay-unreachable` (no HTTP response is a
        /// network failure), a local connection is closed without a byte (fail closed), and
        /// once the relay answers properly again the daemon serves.
        @Test(arguments: [SetupRequest.bridgePage, .sessionCreation], Garbage.allCases)
        func garbageBootstrapBuildsNoSessionAndRecovers(request: SetupRequest, garbage: Garbage) async throws {
            let run = try await Self.failsClosedUntilTheRelayAnswers(request, garbage, mode: .https)
            #expect(run.sessionsUpWhileArmed == 0 && run.relaySessionsWhileArmed == 0, "a session was built from \(garbage) \(request) answers")
            #expect(run.down?.fields.event == .relayUnreachable, "the bootstrap ended as \(run.down?.fields.event?.name ?? "nothing")")
            print("[e2e] case 17 \(request) \(garbage): \(run.summary)")
            await run.rig.stop()
            run.rig.expectNoCredentials()
        }

        /// Case 18 — expected: a relay that answers every WebSocket upgrade with garbage
        /// gives the daemon no carrier: the session (created over HTTPS) is lost as
        /// `carrier-lost` at its first upgrade — the session socket on websocket, the first
        /// lane on websocket-lanes (a failed new lane ends the session, PROTOCOL.md
        /// §5.4) — a local connection is closed without a byte, the log names the upgrade's
        /// error, and once the relay answers properly again the daemon serves.
        @Test(arguments: [CarrierMode.websocket, .websocketLanes], Garbage.allCases)
        func garbageUpgradeAnswersFailClosedAndRecover(mode: CarrierMode, garbage: Garbage) async throws {
            let run = try await Self.failsClosedUntilTheRelayAnswers(.upgrade, garbage, mode: mode)
            #expect(run.down?.fields.event == .sessionLost, "over \(mode) the first failure was \(run.down?.fields.event?.name ?? "nothing")")
            #expect(run.down?.fields.error == SessionFailure.Kind.carrierLost.rawValue, "over \(mode) the session ended as \(run.down?.fields.error ?? "nothing")")
            print("[e2e] case 18 \(mode) \(garbage): \(run.summary)")
            await run.rig.stop()
            run.rig.expectNoCredentials()
        }
    }
}
