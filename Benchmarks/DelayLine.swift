import WebProxyNet
import WebProxyTestSupport

/// An emulated WAN path in front of a loopback port, for the `wan` benchmark: every TCP
/// connection accepted on `port` is carried to `target` through two one-way links. Each link
/// sends at `bitsPerSecond`, then delays by `delay`. At the bottleneck every flow has a queue
/// of its own, at most `bufferBytes`, and the link serves the queues in turn, 4 KiB at a
/// time (fair queuing, as fq_codel does on a home router, without the drops): a flow waits
/// behind its own bytes, not another flow's. A full queue stops reading the sender, so its
/// TCP backs up as at a real bottleneck whose buffer is full.
///
/// Runs on its own loop; `start` and `stop` are called on it.
final class DelayLine {
    struct Shape: CustomStringConvertible {
        var delay: Duration
        var bitsPerSecond: Double
        var bufferBytes: Int

        /// The path: 25 ms each way, 20 Mbit/s, a 1 MiB buffer per flow.
        static let telegramWAN = Shape(delay: .milliseconds(25), bitsPerSecond: 20e6, bufferBytes: 1 << 20)

        /// The base round trip: the delay both ways.
        var roundTripMilliseconds: Double { Double((delay * 2) / .microseconds(1)) / 1000 }

        var description: String {
            "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000) ms each way, \(Int(bitsPerSecond / 1e6)) Mbit/s per direction, "
                + "a \(bufferBytes >> 10) KiB queue per flow at the bottleneck, served in turn"
        }
    }

    let shape: Shape
    private let loop: EventLoop
    private let target: SocketAddress
    private var listener: TCPListener?
    private var flows: [ObjectIdentifier: Flow] = [:]
    private let up: Link
    private let down: Link

    private init(loop: EventLoop, target: SocketAddress, shape: Shape) {
        self.loop = loop
        self.target = target
        self.shape = shape
        up = Link(loop: loop, bitsPerSecond: shape.bitsPerSecond)
        down = Link(loop: loop, bitsPerSecond: shape.bitsPerSecond)
    }

    /// Listens on 127.0.0.1 (kernel port) and carries each connection to `target`.
    static func start(on loop: EventLoop, to target: SocketAddress, shape: Shape) throws -> DelayLine {
        let line = DelayLine(loop: loop, target: target, shape: shape)
        line.listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { [weak line] client in
            line?.accepted(client)
        }
        return line
    }

    var port: UInt16 { listener?.localAddress.port ?? 0 }

    func stop() {
        listener?.close()
        listener = nil
        for flow in flows.values { flow.close() }
        flows = [:]
    }

    /// A real path's TCP handshake costs a round trip before the first byte can cross it, so
    /// a flow starts carrying one round trip after the accept (the client's first bytes wait
    /// in the kernel meanwhile: nothing reads a connection without a delegate).
    private func accepted(_ client: TCPConnection) {
        _ = loop.scheduleTimer(after: shape.delay * 2) { [weak self] in self?.connect(client) }
    }

    private func connect(_ client: TCPConnection) {
        _ = TCPConnection.connect(to: target, on: loop, timeout: .seconds(5)) { [weak self] result in
            guard let self, case .success(let server) = result else { return client.abort() }
            let flow = Flow(loop: loop, shape: shape, client: client, server: server, up: up, down: down)
            let key = ObjectIdentifier(flow)
            flow.onClose = { [weak self] in self?.flows[key] = nil }
            flows[key] = flow
            flow.start()
        }
    }

    /// One direction of the path: sends one piece at a time, taking the flows' queues in turn.
    /// Its clock is ideal: a piece starts when the one before it ended on paper, not when the
    /// loop's timer for it fired, so timer lateness does not slow the link, however small the
    /// pieces (a real link serialises bytes, not pieces).
    private final class Link {
        private let loop: EventLoop
        private let bitsPerSecond: Double
        /// Pipes with bytes waiting, in the order they are served.
        private var waiting: [Pipe] = []
        private var sending = false
        /// When the piece on the link ends, on the ideal clock (`ContinuousClock`).
        private var freeAt = ContinuousClock.now

        init(loop: EventLoop, bitsPerSecond: Double) {
            self.loop = loop
            self.bitsPerSecond = bitsPerSecond
        }

        func wake(_ pipe: Pipe) {
            if !waiting.contains(where: { $0 === pipe }) { waiting.append(pipe) }
            sendNext()
        }

        private func sendNext() {
            guard !sending, !waiting.isEmpty else { return }
            let pipe = waiting.removeFirst()
            guard let piece = pipe.takePiece() else { return sendNext() }
            if pipe.hasWaitingBytes { waiting.append(pipe) }
            sending = true
            let serialisation = Duration.nanoseconds(Int64(Double(piece.count) * 8 / bitsPerSecond * 1e9))
            let now = ContinuousClock.now
            freeAt = max(now, freeAt) + serialisation
            loop.scheduleTimer(after: max(.zero, now.duration(to: freeAt))) { [self] in
                sending = false
                pipe.departed(piece)
                sendNext()
            }
        }
    }

    /// One carried connection: a pipe each way.
    private final class Flow: ByteStreamDelegate {
        private let client: TCPConnection
        private let server: TCPConnection
        private let upstream: Pipe
        private let downstream: Pipe
        var onClose: (() -> Void)?
        private var closed = false

        init(loop: EventLoop, shape: Shape, client: TCPConnection, server: TCPConnection, up: Link, down: Link) {
            self.client = client
            self.server = server
            upstream = Pipe(loop: loop, shape: shape, link: up, source: client, destination: server)
            downstream = Pipe(loop: loop, shape: shape, link: down, source: server, destination: client)
        }

        func start() {
            client.delegate = self
            server.delegate = self
        }

        func close() {
            guard !closed else { return }
            closed = true
            client.close()
            server.close()
            onClose?()
        }

        private func pipe(from connection: any ByteStream) -> Pipe { connection === client ? upstream : downstream }
        private func pipe(to connection: any ByteStream) -> Pipe { connection === client ? downstream : upstream }

        func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            pipe(from: connection).carry(bytes)
        }
        func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
            pipe(from: connection).finish { [weak self] in self?.close() }
        }
        func streamDidBecomeWritable(_ connection: any ByteStream) { pipe(to: connection).flush() }
        func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) { close() }
    }

    /// One direction of one flow: its queue at the bottleneck, then the propagation delay.
    private final class Pipe {
        private let loop: EventLoop
        private let shape: Shape
        private let link: Link
        private let source: TCPConnection
        private let destination: TCPConnection
        /// Pieces waiting at the bottleneck, and their bytes.
        private var queue: [[UInt8]] = []
        private var queued = 0
        /// Pieces that arrived and wait for the destination's write queue.
        private var arrived: [[UInt8]] = []
        private var readingPaused = false
        private var piecesInFlight = 0
        private var onFinished: (() -> Void)?

        /// The unit the link sends: a few packets, so flows interleave nearly as finely as
        /// fq_codel's per-packet turns (a 16 KiB turn is 6.5 ms at 20 Mbit/s, and a WINDOW or a
        /// chat echo could wait two of another flow's).
        private static let pieceBytes = 4 << 10

        init(loop: EventLoop, shape: Shape, link: Link, source: TCPConnection, destination: TCPConnection) {
            self.loop = loop
            self.shape = shape
            self.link = link
            self.source = source
            self.destination = destination
        }

        var hasWaitingBytes: Bool { !queue.isEmpty }

        func carry(_ bytes: UnsafeRawBufferPointer) {
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + Self.pieceBytes)
                queue.append(Array(bytes[offset..<end]))
                queued += end - offset
                offset = end
            }
            if queued >= shape.bufferBytes && !readingPaused {
                readingPaused = true
                source.pauseReading()
            }
            link.wake(self)
        }

        func takePiece() -> [UInt8]? {
            guard !queue.isEmpty else { return nil }
            piecesInFlight += 1
            return queue.removeFirst()
        }

        /// `piece` left the bottleneck: it arrives after the delay.
        func departed(_ piece: [UInt8]) {
            queued -= piece.count
            if readingPaused && queued < shape.bufferBytes {
                readingPaused = false
                source.resumeReading()
            }
            loop.scheduleTimer(after: shape.delay) { [self] in
                piecesInFlight -= 1
                arrived.append(piece)
                flush()
            }
        }

        func flush() {
            while !arrived.isEmpty, destination.isWritable {
                let piece = arrived.removeFirst()
                guard (try? destination.write(piece)) != nil else { return destination.abort() }
            }
            if arrived.isEmpty, queue.isEmpty, piecesInFlight == 0, let onFinished {
                self.onFinished = nil
                onFinished()
            }
        }

        /// The source ended: close once every byte on the way was delivered.
        func finish(_ then: @escaping () -> Void) {
            onFinished = then
            flush()
        }
    }
}

/// A `DelayLine` on a loop of its own, in front of `target`.
final class WANLeg: @unchecked Sendable {
    let port: UInt16
    private let loop: EventLoop
    private let line: DelayLine

    init(to target: SocketAddress, shape: DelayLine.Shape) throws {
        loop = try EventLoop(name: "bench-wan")
        let loop = loop
        line = try loop.submitAndWait { try DelayLine.start(on: loop, to: target, shape: shape) }
        port = line.port
    }

    func stop() {
        let line = line
        _ = try? loop.submitAndWait { line.stop() }
        loop.stop()
        loop.waitUntilStopped()
    }
}
