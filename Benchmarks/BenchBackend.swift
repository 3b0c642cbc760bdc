import WebProxyDaemon
import WebProxyNet

/// The TCP backend every benchmarked path ends at. It skips the 64-byte obfuscated2 init a
/// connection opens with (as an MTProxy would read it); the next byte picks what it does
/// with the rest:
///
/// - `E`: echo every byte back;
/// - `U` + 8-byte big-endian count: read and discard that many bytes, then send one `K`
///   (a sink, for upload throughput);
/// - `D` + 8-byte big-endian count: send that many bytes (a source, for download
///   throughput), honouring backpressure.
///
/// Lives on its own `EventLoop`; use it on that loop only.
final class BenchBackend {
    enum Mode: UInt8 {
        case echo = 0x45  // "E"
        case upload = 0x55  // "U"
        case download = 0x44  // "D"
    }

    let localAddress: SocketAddress
    private var listener: TCPListener?
    private var handlers: [ObjectIdentifier: Handler] = [:]

    private init(listener: TCPListener) {
        self.listener = listener
        localAddress = listener.localAddress
    }

    /// Listens on 127.0.0.1 (kernel-chosen port); call on `loop`.
    static func start(on loop: EventLoop) throws -> BenchBackend {
        final class Box { var backend: BenchBackend? }
        let box = Box()
        let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
            box.backend?.accepted(connection)
        }
        let backend = BenchBackend(listener: listener)
        box.backend = backend
        return backend
    }

    /// Stops listening and drops every connection.
    func stop() {
        listener?.close()
        listener = nil
        for handler in handlers.values { handler.connection.abort() }
        handlers = [:]
    }

    /// Open backend connections (loop thread).
    var connectionCount: Int { handlers.count }

    private func accepted(_ connection: TCPConnection) {
        let handler = Handler(connection: connection)
        let key = ObjectIdentifier(connection)
        handler.closed = { [weak self] in self?.handlers[key] = nil }
        handlers[key] = handler
        connection.delegate = handler
    }

    /// One connection: parses the header, then echoes, sinks or sources.
    private final class Handler: ByteStreamDelegate {
        let connection: TCPConnection
        var closed: (() -> Void)?
        /// Init bytes still to skip.
        private var initLeft = ObfuscatedInit.length
        private var header: [UInt8] = []
        private var mode: Mode?
        private var remaining: UInt64 = 0
        private static let pattern = [UInt8]((0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) })

        init(connection: TCPConnection) { self.connection = connection }

        func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            var body = bytes[...]
            let skipped = min(initLeft, body.count)
            initLeft -= skipped
            body = body.dropFirst(skipped)
            if mode == nil {
                guard !body.isEmpty else { return }
                while header.count < 9, let byte = body.first {
                    header.append(byte)
                    body = body.dropFirst()
                    if header.count == 1, header[0] == Mode.echo.rawValue { break }
                }
                guard let first = header.first, let parsed = Mode(rawValue: first) else {
                    connection.abort()
                    return
                }
                if parsed != .echo {
                    guard header.count == 9 else { return }
                    remaining = header[1...].reduce(0) { $0 << 8 | UInt64($1) }
                }
                mode = parsed
                if parsed == .download { sendMore() }
            }
            guard !body.isEmpty, let mode else { return }
            switch mode {
            case .echo:
                do { try connection.write(UnsafeRawBufferPointer(rebasing: body)) } catch {
                    connection.abort()
                    return
                }
                if !connection.isWritable { connection.pauseReading() }
            case .upload:
                let taken = min(remaining, UInt64(body.count))
                remaining -= taken
                if remaining == 0, taken > 0 { try? connection.write([0x4B]) }
            case .download:
                break
            }
        }

        private func sendMore() {
            while remaining > 0, connection.isWritable {
                let count = Int(min(remaining, UInt64(Self.pattern.count)))
                do {
                    try Self.pattern.withUnsafeBytes { try connection.write(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                } catch {
                    connection.abort()
                    return
                }
                remaining -= UInt64(count)
            }
        }

        func streamDidBecomeWritable(_ connection: any ByteStream) {
            if mode == .download { sendMore() } else { connection.resumeReading() }
        }

        func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) { connection.close() }

        func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) { closed?() }
    }
}
