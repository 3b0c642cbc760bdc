import WebProxyNet

/// A TCP echo server on an `EventLoop` (for tests and the demo): every connection gets its
/// bytes back, reading pauses while the echo queue is full, and EOF is answered with FIN.
/// Use it on its loop's thread only.
public final class EchoBackend {
    /// The loop the server lives on.
    public let loop: EventLoop
    /// The bound address (with the kernel's port when bound to port 0).
    public let localAddress: SocketAddress

    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: TCPConnection] = [:]
    private let handler = Handler()

    /// Bytes echoed so far, across connections (for tests).
    public var echoedByteCount: Int { handler.echoed }

    private init(loop: EventLoop, localAddress: SocketAddress) {
        self.loop = loop
        self.localAddress = localAddress
    }

    /// Listens on `address` (default: 127.0.0.1, a kernel-chosen port) on the loop thread.
    public static func start(
        on loop: EventLoop, address: SocketAddress = .loopbackIPv4(port: 0)
    ) throws(NetError) -> EchoBackend {
        final class Box { var echo: EchoBackend? }
        let box = Box()
        let listener = try TCPListener.listen(on: address, loop: loop) { connection in
            box.echo?.accepted(connection)
        }
        let echo = EchoBackend(loop: loop, localAddress: listener.localAddress)
        echo.listener = listener
        echo.handler.closed = { [weak echo] connection in
            echo?.connections[ObjectIdentifier(connection)] = nil
        }
        box.echo = echo
        return echo
    }

    /// Stops listening and closes every connection.
    public func stop() {
        listener?.close()
        listener = nil
        for connection in connections.values { connection.abort() }
        connections = [:]
    }

    private func accepted(_ connection: TCPConnection) {
        connections[ObjectIdentifier(connection)] = connection
        connection.delegate = handler
    }

    /// Echoes for every connection (the connections are told apart by their identity).
    private final class Handler: TCPConnectionDelegate {
        var echoed = 0
        var closed: ((TCPConnection) -> Void)?

        func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
            do {
                try connection.write(bytes)
                echoed += bytes.count
            } catch {
                connection.abort()
                return
            }
            if !connection.isWritable { connection.pauseReading() }
        }

        func connectionDidReadEOF(_ connection: TCPConnection) {
            connection.shutdownWrite()
        }

        func connectionDidBecomeWritable(_ connection: TCPConnection) {
            connection.resumeReading()
        }

        func connection(_ connection: TCPConnection, didCloseWith error: NetError?) {
            closed?(connection)
        }
    }
}
