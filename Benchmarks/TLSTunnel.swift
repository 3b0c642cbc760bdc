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
                        Splice(tls, plain).start()
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
                Splice(plain, tls).start()
            }
        }
    }
}

/// Copies bytes both ways between two streams (TCP or TLS) with backpressure; closes both
/// when either ends. It keeps itself alive (through the delegates) until both have closed.
private final class Splice: ByteStreamDelegate {
    private let first: any ByteStream
    private let second: any ByteStream
    private var closing = false

    init(_ first: any ByteStream, _ second: any ByteStream) {
        self.first = first
        self.second = second
    }

    func start() {
        first.delegate = self
        second.delegate = self
    }

    private func other(than stream: any ByteStream) -> (source: any ByteStream, target: any ByteStream) {
        first === stream ? (first, second) : (second, first)
    }

    private func closeBoth() {
        guard !closing else { return }
        closing = true
        first.close()
        second.close()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        let (source, target) = other(than: stream)
        guard (try? target.write(bytes)) != nil else { return closeBoth() }
        if !target.isWritable { source.pauseReading() }
    }

    func streamDidReachEnd(_ stream: any ByteStream, clean: Bool) { closeBoth() }

    func streamDidBecomeWritable(_ stream: any ByteStream) { other(than: stream).target.resumeReading() }

    func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) { closeBoth() }
}
