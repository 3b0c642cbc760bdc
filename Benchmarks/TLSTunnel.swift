import WebProxyNet

/// The baseline the daemon is compared with: a plain TLS tunnel built from the same
/// `WebProxyNet` parts, in two halves on two loops, as stunnel would be deployed:
///
/// ```
/// client ──TCP──▶ TunnelEntry (plaintext in, TLS client out) ──TLS──▶ TunnelFront (TLS server) ──TCP──▶ backend
/// ```
///
/// The entry does what the daemon does minus the relay protocol (framing, multiplexing,
/// HTTP/WebSocket), so its loop thread's CPU time is the figure the daemon's is held against.
enum TLSTunnel {
    /// The TLS-terminating half: accepts TLS and splices each connection to `backend` over TCP.
    static func startFront(
        on loop: EventLoop, context: TLSContext, backend: SocketAddress
    ) throws -> TCPListener {
        try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { tcp in
            do {
                _ = try TLSConnection.startServer(over: tcp, context: context) { result in
                    guard case .success(let tls) = result else { return }
                    _ = TCPConnection.connect(to: backend, on: loop, timeout: .seconds(5)) { dialed in
                        guard case .success(let plain) = dialed else { return tls.abort() }
                        Splice(.tls(tls), .tcp(plain)).start()
                    }
                }
            } catch {
                tcp.abort()
            }
        }
    }

    /// The client half: accepts plaintext TCP and splices each connection to `front` over TLS.
    static func startEntry(
        on loop: EventLoop, dialer: SecureDialer, resolver: Resolver, front: SecureEndpoint
    ) throws -> TCPListener {
        try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { plain in
            _ = dialer.connect(to: front, on: loop, resolver: resolver) { result in
                guard case .success(let tls) = result else { return plain.abort() }
                Splice(.tcp(plain), .tls(tls)).start()
            }
        }
    }
}

/// Copies bytes both ways between two connections with backpressure; closes both when
/// either ends. It keeps itself alive (through the delegates) until both have closed.
private final class Splice: TCPConnectionDelegate, TLSConnectionDelegate {
    enum End {
        case tcp(TCPConnection)
        case tls(TLSConnection)

        func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
            switch self {
            case .tcp(let connection): (try? connection.write(bytes)) != nil
            case .tls(let connection): (try? connection.write(bytes)) != nil
            }
        }
        var isWritable: Bool {
            switch self {
            case .tcp(let connection): connection.isWritable
            case .tls(let connection): connection.isWritable
            }
        }
        func pauseReading() {
            switch self {
            case .tcp(let connection): connection.pauseReading()
            case .tls(let connection): connection.pauseReading()
            }
        }
        func resumeReading() {
            switch self {
            case .tcp(let connection): connection.resumeReading()
            case .tls(let connection): connection.resumeReading()
            }
        }
        func close() {
            switch self {
            case .tcp(let connection): connection.close()
            case .tls(let connection): connection.close()
            }
        }
        func isSame(_ object: AnyObject) -> Bool {
            switch self {
            case .tcp(let connection): connection === object
            case .tls(let connection): connection === object
            }
        }
    }

    private let first: End
    private let second: End
    private var closing = false

    init(_ first: End, _ second: End) {
        self.first = first
        self.second = second
    }

    func start() {
        for end in [first, second] {
            switch end {
            case .tcp(let connection): connection.delegate = self
            case .tls(let connection): connection.delegate = self
            }
        }
    }

    private func other(than object: AnyObject) -> (source: End, target: End) {
        first.isSame(object) ? (first, second) : (second, first)
    }

    private func forward(_ bytes: UnsafeRawBufferPointer, from object: AnyObject) {
        let (source, target) = other(than: object)
        guard target.write(bytes) else { return closeBoth() }
        if !target.isWritable { source.pauseReading() }
    }

    private func drained(_ object: AnyObject) {
        other(than: object).target.resumeReading()
    }

    private func closeBoth() {
        guard !closing else { return }
        closing = true
        first.close()
        second.close()
    }

    func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        forward(bytes, from: connection)
    }
    func connectionDidReadEOF(_ connection: TCPConnection) { closeBoth() }
    func connectionDidBecomeWritable(_ connection: TCPConnection) { drained(connection) }
    func connection(_ connection: TCPConnection, didCloseWith error: NetError?) { closeBoth() }

    func tlsConnection(_ connection: TLSConnection, didRead plaintext: UnsafeRawBufferPointer) {
        forward(plaintext, from: connection)
    }
    func tlsConnection(_ connection: TLSConnection, didReachEndOfStream clean: Bool) { closeBoth() }
    func tlsConnectionDidBecomeWritable(_ connection: TLSConnection) { drained(connection) }
    func tlsConnection(_ connection: TLSConnection, didCloseWith error: TransportError?) { closeBoth() }
}
