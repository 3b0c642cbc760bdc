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
    /// Faults on the network between the daemon and the relay, injected into the ciphertext
    /// by a TCP `FaultProxy`: a bulk stream is in flight when the fault starts. Expected on
    /// every carrier: the bulk stream either finishes intact or is closed (never stalls
    /// without an end), no byte comes back corrupted, and once the network is back a new
    /// local connection is served within 10 s. Recovery times are printed (FAILURES.md).
    @Suite struct NetworkFaults {
        enum Fault: String, CaseIterable, Sendable {
            /// Every connection goes silent for good; new ones too, for 4 s.
            case silentOutage
            /// New connections are reset for 3 s, current ones at once.
            case refusal
            /// Every connection is reset, once.
            case resetAll
            /// For 3 s, every connection is reset once 256 KiB passed it.
            case resetAfterBytes
            /// Nothing moves for 3 s, then everything resumes.
            case freeze
            /// 150 ms more each way for 3 s.
            case delay
            /// 256 KiB/s per direction and connection for 3 s.
            case throttle
        }

        /// Liveness settings scaled for a test: a silent WebSocket is pinged after 1 s and lost
        /// after 3 s (20 s in production); requests have 5 s, or 3 s without progress (8 s).
        static var settings: SessionSettings {
            var settings = SessionSettings()
            if ProcessEnvironment.current()["FAULT_PRODUCTION"] != nil { return settings }
            settings.socketPingAfter = .seconds(1)
            settings.socketDeadAfter = .seconds(3)
            settings.requestDeadline = .seconds(5)
            settings.requestSilence = .seconds(3)
            settings.longPollDeadline = .seconds(8)
            settings.retry.requestTimeout = .seconds(5)
            // The watchdog ticks every 3 s (and would rebuild after 9 s without progress).
            settings.stallBound = .seconds(9)
            return settings
        }

        /// FAULT_MODES / FAULT_KINDS (comma-separated) narrow the matrix when chasing one case.
        static let modes = ProcessEnvironment.current()["FAULT_MODES"].map { $0.split(separator: ",").compactMap { CarrierMode(rawValue: String($0)) } } ?? CarrierMode.allCases
        static let faults = ProcessEnvironment.current()["FAULT_KINDS"].map { $0.split(separator: ",").compactMap { Fault(rawValue: String($0)) } } ?? Fault.allCases

        /// FAULT_OUTAGE_SECONDS lengthens the silent outage (the issue's case is 10 s).
        static let outage = Duration.seconds(Int(ProcessEnvironment.current()["FAULT_OUTAGE_SECONDS"] ?? "") ?? 4)

        static let bulkBytes = isDebug ? 32 << 20 : 96 << 20

        @Test(arguments: Self.modes, Self.faults)
        func everyStreamMovesOrClosesAndTheDaemonServesAgain(mode: CarrierMode, fault: Fault) async throws {
            var limits = RelayLimits()
            limits.longPoll = .seconds(3)
            let harness = try await RelayServerHarness(mode: mode, limits: limits)
            let proxy = try FaultProxy(upstreamPort: harness.port)
            let rig = try await EndToEndRig(mode: mode, settings: Self.settings, harness: harness) { relay in
                relay.connectTo = try HostAndPort(parsing: "127.0.0.1:\(proxy.port)", what: "connect-to address")
            }
            defer { proxy.stop() }
            #expect(rig.waitForSessionsUp())
            try rig.expectIntactEcho(streams: 1, bytesPerStream: 64 << 10, seed: 0xFA, within: .seconds(10), "before the fault")

            let payload = testPayloads(count: 1, size: Self.bulkBytes, seed: 0xB0 &+ UInt64(fault.rawValue.utf8.count))[0]
            let bulk = try #require(rig.connect(timeoutSeconds: 45))
            defer { bulk.close() }
            let transfer = BulkTransfer(client: bulk, payload: payload)
            // Let the bulk get going, then break the network under it.
            _ = waitUntil(within: .seconds(10)) { transfer.received > payload.count / 8 }
            let clock = ContinuousClock()
            let faultStarted = clock.now
            switch fault {
            case .silentOutage: proxy.mode = .silentOutage
            case .refusal: proxy.mode = .refuse
            case .resetAll: proxy.resetAll()
            case .freeze: proxy.mode = .freeze
            case .delay: proxy.mode = .delay(.milliseconds(150))
            case .throttle: proxy.mode = .throttle(bytesPerSecond: 256 << 10)
            case .resetAfterBytes: proxy.mode = .resetAfter(bytes: 256 << 10)
            }
            if fault != .resetAll { try await Task.sleep(for: fault == .silentOutage ? Self.outage : .seconds(3)) }
            proxy.mode = .pass
            let networkBack = clock.now

            // A new local connection is served within 10 s of the network returning.
            let served = Self.probe(rig, within: .seconds(20))
            let servedInTime = served.map { $0 - networkBack <= .seconds(10) } == true
            if !servedInTime || ProcessEnvironment.current()["FAULT_LOG"] != nil {
                for line in rig.lines.suffix(80) { print("[faults] log: \(line)") }
            }
            #expect(servedInTime, "\(mode) \(fault): new connection served after \(served.map { "\(milliseconds($0 - networkBack)) ms" } ?? "never")")

            // The bulk stream finished intact or was closed, within the 30 s bound.
            let ending = transfer.wait(within: .seconds(40))
            if ending?.stalled != false {
                let queued = rig.daemon.relaySnapshots()?.first?.queued
                print("[faults] stalled: daemon queued up \(queued?.uplink ?? -1) down \(queued?.downlink ?? -1); relay got \(EndToEndFaultTests.relayUplinkBytesNow(harness)) DATA bytes, backend echoed \(EndToEndFaultTests.echoedBytesNow(harness)); client got \(transfer.received); \(rig.daemon.stateSummaries() ?? [])")
                let relayState = try await harness.withRelay { $0.stateSummary }
                print("[faults] relay: \(relayState)")
                if servedInTime { for line in rig.lines.suffix(80) { print("[faults] log: \(line)") } }
            }
            let ended = try #require(ending, "\(mode) \(fault): the in-flight stream neither finished nor closed within 40 s")
            #expect(ended.stalled == false, "\(mode) \(fault): the in-flight stream stalled with \(ended.bytes.count) of \(payload.count) bytes and no end")
            #expect(ended.bytes == Array(payload.prefix(ended.bytes.count)), "\(mode) \(fault): corrupted echo")
            let intact = ended.bytes.count == payload.count
            if !intact {
                // The journal says the daemon closed it, summed per watchdog tick.
                #expect(
                    waitUntil(within: Self.settings.stallBound / 3 + .seconds(3)) {
                        rig.lines.contains { $0.contains("local connection") && $0.contains("in the last") }
                    },
                    "\(mode) \(fault): no summary of the closed local connections in the log")
                // And it has a line of its own, with its cause class.
                #expect(
                    rig.lines.contains { $0.contains("closed local connection ") || $0.contains(" aborted: ") },
                    "\(mode) \(fault): no line for the closed in-flight stream")
            }
            print("[faults] \(mode) \(fault): fault for \(milliseconds(networkBack - faultStarted)) ms; new connection served \(served.map { "\(milliseconds($0 - networkBack)) ms" } ?? "never") after the network returned; in-flight stream \(intact ? "finished intact" : "closed after \(ended.bytes.count >> 10) KiB") \(milliseconds(ended.at - networkBack)) ms after; proxy accepted \(proxy.acceptedCount), reset \(proxy.resetCount)")
            await rig.stop()
            rig.expectNoCredentials()
        }

        /// When a fresh local connection first echoes 64 KiB intact, trying again every
        /// 200 ms; nil if none did within `limit`.
        static func probe(_ rig: EndToEndRig, within limit: Duration) -> ContinuousClock.Instant? {
            let clock = ContinuousClock()
            let deadline = clock.now + limit
            let payload = testPayloads(count: 1, size: 64 << 10, seed: 0x9B)[0]
            while clock.now < deadline {
                if let client = rig.connect(timeoutSeconds: 3) {
                    let outcome = echo([payload], over: [client], within: .seconds(4))[0]
                    client.close()
                    if outcome.received == payload { return clock.now }
                }
                usleep(200_000)
            }
            return nil
        }
    }
}

extension EndToEndFaultTests {
    /// Faults at the points of a session's life where a request or handshake is half done:
    /// the bootstrap (bridge page, session creation, WebSocket upgrade) and a lane being
    /// opened. Expected: once the network is back, a new local connection is served within
    /// 10 s, and nothing waits without a deadline.
    @Suite struct FaultsAtEachStage {
        enum Stage: String, CaseIterable, Sendable {
            /// The fault is on before the daemon starts: its first session is built through it.
            case bootstrap
            /// The fault starts as a local connection arrives on an idle session: on the lane
            /// carriers it opens a lane (an upgrade or a lane's first `/up`) through the fault.
            case streamOpening
        }

        enum Fault: String, CaseIterable, Sendable {
            case refusal
            case silentOutage
            /// Every connection is reset after 2 KiB, inside its TLS handshake or first request.
            case resetEarly

            var proxyMode: FaultProxy.Mode {
                switch self {
                case .refusal: .refuse
                case .silentOutage: .silentOutage
                case .resetEarly: .resetAfter(bytes: 2 << 10)
                }
            }
        }

        static let cases: [(CarrierMode, Stage, Fault)] = EndToEndFaultTests.NetworkFaults.modes.flatMap { mode in
            Stage.allCases.flatMap { stage in Fault.allCases.map { (mode, stage, $0) } }
        }

        @Test(arguments: Self.cases)
        func aFaultHalfwayThroughIsRecovered(mode: CarrierMode, stage: Stage, fault: Fault) async throws {
            var limits = RelayLimits()
            limits.longPoll = .seconds(3)
            let harness = try await RelayServerHarness(mode: mode, limits: limits)
            let proxy = try FaultProxy(upstreamPort: harness.port)
            defer { proxy.stop() }
            if stage == .bootstrap { proxy.mode = fault.proxyMode }
            let rig = try await EndToEndRig(mode: mode, settings: EndToEndFaultTests.NetworkFaults.settings, harness: harness) { relay in
                relay.connectTo = try HostAndPort(parsing: "127.0.0.1:\(proxy.port)", what: "connect-to address")
            }
            var opening: BulkTransfer?
            var openingClient: BlockingClient?
            defer { openingClient?.close() }
            if stage == .streamOpening {
                #expect(rig.waitForSessionsUp())
                proxy.mode = fault.proxyMode
                openingClient = rig.connect(timeoutSeconds: 30)
                opening = openingClient.map { BulkTransfer(client: $0, payload: testPayloads(count: 1, size: 256 << 10, seed: 0x51)[0]) }
            }
            try await Task.sleep(for: .seconds(3))
            proxy.mode = .pass
            let clock = ContinuousClock()
            let networkBack = clock.now
            let served = EndToEndFaultTests.NetworkFaults.probe(rig, within: .seconds(20))
            let servedInTime = served.map { $0 - networkBack <= .seconds(10) } == true
            if !servedInTime { for line in rig.lines.suffix(60) { print("[stages] log: \(line)") } }
            #expect(servedInTime, "\(mode) \(stage) \(fault): new connection served after \(served.map { "\(milliseconds($0 - networkBack)) ms" } ?? "never")")
            // The stream opened into the fault finished intact or was closed: never left hanging.
            if let opening {
                let ending = try #require(opening.wait(within: .seconds(40)), "\(mode) \(stage) \(fault): the opening stream neither finished nor closed")
                #expect(ending.stalled == false, "\(mode) \(stage) \(fault): the opening stream stalled")
            }
            print("[stages] \(mode) \(stage) \(fault): served \(served.map { "\(milliseconds($0 - networkBack)) ms" } ?? "never") after the network returned; proxy accepted \(proxy.acceptedCount), reset \(proxy.resetCount)")
            await rig.stop()
            rig.expectNoCredentials()
        }
    }
}

/// One local connection sending `payload` and reading its echo on threads of its own.
final class BulkTransfer: Sendable {
    struct Ending: Sendable {
        /// What came back.
        var bytes: [UInt8]
        /// True when the connection neither finished nor closed: a read timed out.
        var stalled: Bool
        var at: ContinuousClock.Instant
    }

    private final class Progress: Sendable {
        let bytes = Atomic<Int>(0)
    }

    private let progress = Progress()
    private let reader: BackgroundWork<Ending>
    private let writer: BackgroundWork<Bool>

    /// Bytes echoed so far.
    var received: Int { progress.bytes.load(ordering: .relaxed) }

    init(client: BlockingClient, payload: [UInt8]) {
        writer = BackgroundWork {
            var offset = 0
            while offset < payload.count {
                let end = min(payload.count, offset + (64 << 10))
                guard client.send(Array(payload[offset..<end])) else { return false }
                offset = end
            }
            return true
        }
        reader = BackgroundWork { [progress] in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(payload.count)
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while bytes.count < payload.count {
                let received = buffer.withUnsafeMutableBytes { client.receiveSome(into: $0) }
                switch received {
                case .bytes(let count):
                    bytes += buffer[..<count]
                    progress.bytes.store(bytes.count, ordering: .relaxed)
                case .closed, .failed:
                    return Ending(bytes: bytes, stalled: false, at: .now)
                case .timedOut:
                    return Ending(bytes: bytes, stalled: true, at: .now)
                }
            }
            return Ending(bytes: bytes, stalled: false, at: .now)
        }
    }

    /// How the transfer ended, or nil if it is still going after `limit`.
    func wait(within limit: Duration) -> Ending? {
        reader.wait(within: limit)
    }
}
