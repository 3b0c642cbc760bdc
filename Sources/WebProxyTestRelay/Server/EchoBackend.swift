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

    /// Bytes echoed so far, across connections (for tests).
    public private(set) var echoedByteCount = 0

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
        connection.delegate = Echo(connection: connection, backend: self)
    }

    /// Echoes one connection.
    private final class Echo: ByteStreamDelegate {
        let connection: TCPConnection
        weak var backend: EchoBackend?

        init(connection: TCPConnection, backend: EchoBackend) {
            self.connection = connection
            self.backend = backend
        }

        func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            do {
                try connection.write(bytes)
                backend?.echoedByteCount += bytes.count
            } catch {
                connection.abort()
                return
            }
            if !connection.isWritable { connection.pauseReading() }
        }

        func streamDidReachEnd(_ stream: any ByteStream, clean: Bool) {
            connection.shutdownWrite()
        }

        func streamDidBecomeWritable(_ stream: any ByteStream) {
            connection.resumeReading()
        }

        func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
            backend?.connections[ObjectIdentifier(connection)] = nil
        }
    }
}
