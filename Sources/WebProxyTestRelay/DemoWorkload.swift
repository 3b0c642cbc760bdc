import Synchronization
import WebProxyTestSupport

/// The traffic `webproxyd demo` pushes through one carrier: small-message round trips on one
/// connection, then a bulk echo from several concurrent connections. Every byte that comes
/// back is checked (round trips byte for byte, bulk streams by length and hash).
///
/// All socket I/O runs on plain threads; `run` blocks until they finish. Every wait is
/// bounded by `stallLimit`, so a carrier that stops moving data fails instead of hanging.
public struct DemoWorkload: Sendable {
    /// The size of a round-trip message.
    public static let messageBytes = 64

    /// Bulk payload per carrier, split evenly across `connections`.
    public var bulkBytes: Int
    /// Concurrent bulk connections.
    public var connections: Int
    /// Bulk senders stop early after this long (each sends at least one chunk).
    public var bulkTimeLimit: Duration
    /// Measured round trips (one more, unmeasured, first waits for the session).
    public var roundTrips: Int
    /// The longest wait for any byte to move.
    public var stallLimit: Duration

    public init(
        bulkBytes: Int = 32 << 20, connections: Int = 4, bulkTimeLimit: Duration = .seconds(3),
        roundTrips: Int = 200, stallLimit: Duration = .seconds(15)
    ) {
        self.bulkBytes = bulkBytes
        self.connections = connections
        self.bulkTimeLimit = bulkTimeLimit
        self.roundTrips = roundTrips
        self.stallLimit = stallLimit
    }

    /// Runs the workload against an MTProxy-facing listener on `127.0.0.1:port` whose
    /// streams end at an echo backend.
    public func run(port: UInt16) -> DemoCarrierReport {
        var report = DemoCarrierReport()
        do throws(DemoFailure) {
            let roundTrips = self.roundTrips
            let stallLimit = self.stallLimit
            report.roundTripTimes = try Self.onThread { () throws(DemoFailure) in
                try Self.pingPong(port: port, roundTrips: roundTrips, stallLimit: stallLimit)
            }
            (report.echoedBytes, report.bulkDuration) = try bulkEcho(port: port)
        } catch {
            report.failure = error
        }
        return report
    }

    // MARK: Round trips

    private static func pingPong(
        port: UInt16, roundTrips: Int, stallLimit: Duration
    ) throws(DemoFailure) -> [Duration] {
        let connection = try Self.connect(port: port, sendTimeout: stallLimit, receiveTimeout: stallLimit)
        defer { connection.close() }
        var payload = SplitMix64(seed: 0x726F_756E_6474_7269)
        var message = [UInt8](repeating: 0, count: messageBytes)
        var echo = [UInt8](repeating: 0, count: messageBytes)
        var times: [Duration] = []
        times.reserveCapacity(max(roundTrips, 0))
        let clock = ContinuousClock()
        for index in 0...max(roundTrips, 0) {
            message.withUnsafeMutableBytes { payload.fill($0) }
            let start = clock.now
            guard message.withUnsafeBytes({ connection.send($0) }) else {
                throw DemoFailure("round trip \(index): the send failed or stalled")
            }
            var filled = 0
            while filled < messageBytes {
                let outcome = echo.withUnsafeMutableBytes {
                    connection.receiveSome(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
                }
                guard case .bytes(let count) = outcome else {
                    throw DemoFailure(
                        "round trip \(index): \(describe(outcome)) after \(filled) of \(messageBytes) bytes")
                }
                filled += count
            }
            let elapsed = start.duration(to: clock.now)
            guard echo == message else { throw DemoFailure("round trip \(index): the echo differs from the message") }
            // Round trip 0 is not measured: it may wait for the relay session to come up.
            if index > 0 { times.append(elapsed) }
        }
        return times
    }

    // MARK: Bulk echo

    private func bulkEcho(port: UInt16) throws(DemoFailure) -> (bytes: Int, duration: Duration) {
        let count = max(connections, 1)
        var sockets: [BlockingClient] = []
        defer { for socket in sockets { socket.close() } }
        for _ in 0..<count {
            sockets.append(try Self.connect(port: port, sendTimeout: stallLimit, receiveTimeout: .milliseconds(100)))
        }
        let streams = (0..<count).map { index in
            BulkStream(share: max(bulkBytes, 0) / count + (index < max(bulkBytes, 0) % count ? 1 : 0))
        }
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start.advanced(by: bulkTimeLimit)
        let stallLimit = self.stallLimit
        var bodies: [@Sendable () -> Void] = []
        for (index, (socket, stream)) in zip(sockets, streams).enumerated() {
            bodies.append { Self.send(stream, over: socket, seed: UInt64(index + 1), until: deadline) }
            bodies.append { Self.receive(stream, over: socket, stallLimit: stallLimit) }
        }
        DemoThreads.run(bodies)
        let duration = start.duration(to: clock.now)
        var total = 0
        for (index, stream) in streams.enumerated() {
            switch stream.progress {
            case .verified(let bytes): total += bytes
            case .failed(let failure): throw DemoFailure("bulk stream \(index): \(failure)")
            case .sending, .sent: throw DemoFailure("bulk stream \(index): unfinished")
            }
        }
        return (total, duration)
    }

    private static func send(
        _ stream: BulkStream, over connection: BlockingClient, seed: UInt64, until deadline: ContinuousClock.Instant
    ) {
        var payload = SplitMix64(seed: seed)
        var digest = DemoDigest()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while digest.count < stream.share && (digest.count == 0 || ContinuousClock.now < deadline) {
            guard !stream.hasFailed else { return }
            let size = min(chunk.count, stream.share - digest.count)
            let sent = chunk.withUnsafeMutableBytes { buffer in
                let part = UnsafeMutableRawBufferPointer(rebasing: buffer[..<size])
                payload.fill(part)
                digest.update(UnsafeRawBufferPointer(part))
                return connection.send(UnsafeRawBufferPointer(part))
            }
            guard sent else {
                stream.fail(DemoFailure("the send failed or stalled after \(digest.count - size) bytes"))
                return
            }
        }
        stream.finishSending(digest)
    }

    private static func receive(_ stream: BulkStream, over connection: BlockingClient, stallLimit: Duration) {
        var digest = DemoDigest()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var lastProgress = ContinuousClock.now
        while true {
            let outcome = buffer.withUnsafeMutableBytes { buffer in
                let outcome = connection.receiveSome(into: buffer)
                if case .bytes(let count) = outcome {
                    digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
                return outcome
            }
            switch outcome {
            case .bytes:
                lastProgress = ContinuousClock.now
            case .timedOut:
                break
            case .closed, .failed:
                return stream.fail(DemoFailure("\(describe(outcome)) after \(digest.count) echoed bytes"))
            }
            switch stream.progress {
            case .failed, .verified:
                return
            case .sent(let sent) where digest.count >= sent.count:
                guard digest == sent else {
                    return stream.fail(DemoFailure(
                        digest.count == sent.count
                            ? "the echoed bytes differ from the sent bytes (hash mismatch)"
                            : "\(digest.count) bytes came back for \(sent.count) sent"))
                }
                return stream.verified(digest.count)
            case .sending where digest.count > stream.share:
                return stream.fail(DemoFailure("more bytes came back than were sent"))
            case .sending, .sent:
                guard lastProgress.duration(to: .now) <= stallLimit else {
                    return stream.fail(DemoFailure("no echo for \(stallLimit) after \(digest.count) bytes"))
                }
            }
        }
    }

    /// A client of `127.0.0.1:port` with Nagle off, so a 64-byte message leaves at once.
    private static func connect(
        port: UInt16, sendTimeout: Duration, receiveTimeout: Duration
    ) throws(DemoFailure) -> BlockingClient {
        do throws(BlockingClient.ConnectFailure) {
            return try BlockingClient(port: port, sendTimeout: sendTimeout, receiveTimeout: receiveTimeout, noDelay: true)
        } catch {
            throw error.call == "socket"
                ? DemoFailure("cannot create a socket (errno \(error.errno))")
                : DemoFailure("cannot connect to 127.0.0.1:\(port) (errno \(error.errno))")
        }
    }

    private static func describe(_ outcome: BlockingClient.Received) -> String {
        switch outcome {
        case .bytes(let count): "\(count) bytes"
        case .timedOut: "no answer in time"
        case .closed: "the connection closed"
        case .failed(let error): "the connection failed (errno \(error))"
        }
    }

    /// Runs `body` on a plain thread and returns its result.
    private static func onThread<T: Sendable>(
        _ body: @escaping @Sendable () throws(DemoFailure) -> T
    ) throws(DemoFailure) -> T {
        let result = Mutex<Result<T, DemoFailure>?>(nil)
        DemoThreads.run([{
            let outcome = Result(catching: body)
            result.withLock { $0 = outcome }
        }])
        guard let outcome = result.withLock({ $0 }) else { throw DemoFailure("the worker thread did not run") }
        return try outcome.get()
    }
}

/// One bulk connection's progress, shared by its sender and receiver threads.
private final class BulkStream: Sendable {
    enum Progress: Sendable {
        case sending
        /// The sender is done; the digest covers everything it sent.
        case sent(DemoDigest)
        case verified(Int)
        case failed(DemoFailure)
    }

    /// Bytes this connection should send (fewer if the time limit hits first).
    let share: Int
    private let state = Mutex(Progress.sending)

    init(share: Int) { self.share = share }

    var progress: Progress { state.withLock { $0 } }

    var hasFailed: Bool {
        if case .failed = progress { return true }
        return false
    }

    func finishSending(_ digest: DemoDigest) {
        state.withLock { if case .sending = $0 { $0 = .sent(digest) } }
    }

    func verified(_ bytes: Int) {
        state.withLock { if case .sent = $0 { $0 = .verified(bytes) } }
    }

    /// Records the first failure; later ones are consequences.
    func fail(_ failure: DemoFailure) {
        state.withLock { progress in
            switch progress {
            case .sending, .sent: progress = .failed(failure)
            case .verified, .failed: break
            }
        }
    }
}
