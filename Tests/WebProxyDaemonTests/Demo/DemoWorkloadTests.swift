#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon

/// `webproxyd demo`'s parts at a small scale: the environment and workload the executable
/// uses, with the daemon wired the same way, and the workload's own checks. No speed is
/// asserted; the bounds are safety nets.
@Suite(.serialized) struct DemoWorkloadTests {
    /// Over 2 MiB, so a carrier socket must keep sending past one `batchLimit` of uplink.
    static let bulkBytes = 3 << 20

    @Test func everyCarrierEchoesVerifiedDataThroughTheDaemon() async throws {
        let workload = DemoWorkload(
            bulkBytes: Self.bulkBytes, connections: 3, bulkTimeLimit: .seconds(120), roundTrips: 10)
        let reports = try await onPlainThread { () throws -> [(CarrierMode, DemoCarrierReport)] in
            let environment = try DemoEnvironment.start()
            defer { environment.stop() }
            let daemon = try Self.startDaemon(environment)
            defer {
                daemon.requestStop()
                _ = daemon.waitUntilStopped()
            }
            let listeners = daemon.listenAddresses()
            return DemoEnvironment.profiles.map { profile in
                guard let port = listeners[profile.carrier.rawValue]?.port else {
                    return (profile.carrier, DemoCarrierReport(failure: DemoFailure("no listener")))
                }
                return (profile.carrier, workload.run(port: port))
            }
        }
        #expect(reports.map(\.0) == [.https, .httpsLanes, .websocket, .websocketLanes])
        for (carrier, report) in reports {
            #expect(report.failure == nil, "\(carrier): \(report.failure?.description ?? "")")
            #expect(report.echoedBytes == Self.bulkBytes, "\(carrier)")
            #expect(report.roundTripTimes.count == 10, "\(carrier)")
            #expect(report.bulkDuration > .zero, "\(carrier)")
            #expect(report.echoMiBPerSecond > 0, "\(carrier)")
        }
    }

    @Test func aCorruptedEchoIsReportedAsAHashMismatch() async throws {
        // One byte of each connection is flipped at offset 100 000: past the round trips'
        // 64-byte messages, inside every bulk stream.
        let server = try CorruptingEchoServer(flipAt: 100_000)
        let workload = DemoWorkload(
            bulkBytes: 512 << 10, connections: 2, bulkTimeLimit: .seconds(60), roundTrips: 3,
            stallLimit: .seconds(10))
        let report = try await onPlainThread { workload.run(port: server.port) }
        server.stop()
        #expect(report.roundTripTimes.count == 3)
        #expect(report.echoedBytes == 0)
        #expect(
            report.failure?.description.hasSuffix("the echoed bytes differ from the sent bytes (hash mismatch)")
                == true, "\(report.failure?.description ?? "no failure")")
    }

    @Test func aListenerThatNeverAnswersFailsWithinTheStallLimit() async throws {
        let server = try CorruptingEchoServer(flipAt: nil, answers: false)
        let workload = DemoWorkload(
            bulkBytes: 1024, connections: 1, bulkTimeLimit: .seconds(1), roundTrips: 1,
            stallLimit: .milliseconds(300))
        let report = try await onPlainThread { workload.run(port: server.port) }
        server.stop()
        #expect(report.failure == DemoFailure("round trip 0: no answer in time after 0 of 64 bytes"))
    }

    @Test func percentilesAndRateComeFromTheMeasurements() {
        let report = DemoCarrierReport(
            echoedBytes: 2 << 20, bulkDuration: .milliseconds(500),
            roundTripTimes: (1...20).reversed().map { .microseconds($0) })
        #expect(report.echoMiBPerSecond == 4)
        #expect(report.roundTrip(percentile: 50) == .microseconds(10))
        #expect(report.roundTrip(percentile: 95) == .microseconds(19))
        #expect(report.roundTrip(percentile: 100) == .microseconds(20))
        #expect(DemoCarrierReport().roundTrip(percentile: 50) == nil)
        #expect(DemoCarrierReport().echoMiBPerSecond == 0)
    }

    /// The daemon as `webproxyd demo` starts it: one relay section per carrier, each pinned
    /// to its carrier, trusting the demo CA and dialing the relay's loopback port.
    private static func startDaemon(_ environment: DemoEnvironment) throws -> Daemon {
        let caPath = temporaryFile(named: "demo-ca.pem", environment.caPEM)
        defer { unlink(caPath) }
        let relays = try DemoEnvironment.profiles.map { profile in
            RelayConfiguration(
                name: profile.carrier.rawValue, host: try RelayHost(DemoEnvironment.host), basePath: nil,
                secret: profile.secret, listen: try ListenAddress(parsing: "127.0.0.1:\(unusedLoopbackPort())"),
                carrier: try #require(CarrierChoice(rawValue: profile.carrier.rawValue)), caFile: caPath,
                connectTo: try HostAndPort(parsing: "127.0.0.1:\(environment.relayPort)"))
        }
        let daemon = try Daemon(
            configuration: DaemonConfiguration(relays: relays), configurationPath: nil, environment: [:],
            logger: Logger(backend: MemoryLogBackend()).redacting(relays.map(\.secret)), drainLimit: .seconds(2))
        try daemon.start()
        return daemon
    }
}

/// Runs blocking work on its own thread (never on the cooperative pool) and awaits it.
private func onPlainThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result(catching: body)) }
    }
}

/// A blocking loopback echo server on plain threads that flips one byte of every
/// connection at `flipAt` (nil: none), or that reads and never answers.
private final class CorruptingEchoServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32

    init(flipAt: Int?, answers: Bool = true) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        port = try #require(bindLoopback(listener, listeningWith: 16))
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Thread.detachNewThread { Self.serve(connection, flipAt: flipAt, answers: answers) }
            }
        }
    }

    /// Stops accepting (the accept loop ends); served connections end when their clients close.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func serve(_ connection: Int32, flipAt: Int?, answers: Bool) {
        defer { close(connection) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var offset = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            guard answers else { continue }
            if let flipAt, flipAt >= offset, flipAt < offset + count { buffer[flipAt - offset] ^= 0x01 }
            offset += count
            let sent = buffer.withUnsafeBytes { send(connection, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
            guard sent == count else { return }
        }
    }
}
