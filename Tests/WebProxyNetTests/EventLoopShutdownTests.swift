import Glibc
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

/// A delegate that holds its connection, as the daemon's and the tests' delegates do.
private final class CyclicDelegate: ByteStreamDelegate {
    var connection: TCPConnection?
    func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {}
    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {}
    func streamDidBecomeWritable(_ connection: any ByteStream) {}
    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {}
}

@Suite struct EventLoopShutdownTests {
    /// Stopping a loop with open connections closes their sockets without callbacks and
    /// lets go of their delegates, so a connection ↔ delegate cycle does not outlive it.
    @Test func stoppingTheLoopReleasesDelegatesOfOpenConnections() async throws {
        let loop = try EventLoop(name: "shutdown-test")
        let probe = WeakProbe()
        let listenerBox = LoopBound<TCPListener?>(handingOver: nil, loop: loop)
        let connected: Bool = try await onLoop(loop) { done in
            let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { accepted in
                let delegate = CyclicDelegate()
                delegate.connection = accepted
                accepted.delegate = delegate
                probe.object = delegate
                done(true)
            }
            listenerBox.value = listener
            _ = TCPConnection.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { _ in }
        }
        #expect(connected)
        #expect(probe.object != nil)
        loop.stop()
        loop.waitUntilStopped()
        #expect(probe.object == nil)
    }
}

/// Watches an object without keeping it alive; read only after the loop thread is joined.
private final class WeakProbe: @unchecked Sendable {
    weak var object: AnyObject?
}
