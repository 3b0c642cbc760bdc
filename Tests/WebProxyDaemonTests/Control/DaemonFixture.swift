#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestSupport

@testable import WebProxyDaemon

/// A `Daemon` in-process in front of a `StubRelay`, with its relay named `default` on a
/// free loopback port. Stop it with `stop()`.
final class DaemonFixture {
    let relay: StubRelay
    let daemon: Daemon
    let listenPort: UInt16
    let backend = MemoryLogBackend()

    init(
        name: String, controlSocketPath: String? = nil, metrics: ListenAddress? = nil, listenPort: UInt16? = nil,
        activatedSockets: [String: Int32] = [:]
    ) throws {
        relay = try StubRelay()
        let caPath = temporaryFile(named: "\(name)-ca.pem", relay.authority.certificatePEM)
        self.listenPort = listenPort ?? unusedLoopbackPort()
        let configuration = try RelayConfiguration(
            quickLink: DaemonRunTests.link, listen: "127.0.0.1:\(self.listenPort)", caFile: caPath,
            connectTo: "127.0.0.1:\(relay.port)")
        do {
            daemon = try Daemon(
                configuration: DaemonConfiguration(metrics: metrics, relays: [configuration]), configurationPath: nil,
                environment: [:], logger: Logger(backend: backend, level: .debug).redacting([configuration.secret]),
                drainLimit: .seconds(2), controlSocketPath: controlSocketPath, activatedSockets: activatedSockets)
            try daemon.start()
        } catch {
            relay.shutdown()
            throw error
        }
    }

    /// Polls (bounded) until the relay's session is up.
    func waitForSessionUp() -> Bool {
        for _ in 0..<200 {
            if daemon.statusSnapshot()?.relays.first?.state == .up { return true }
            usleep(25_000)
        }
        return false
    }

    func stop() -> Int32 {
        daemon.requestStop()
        let status = daemon.waitUntilStopped()
        relay.shutdown()
        return status
    }
}

/// A `ControlServer` alone on an event loop of its own. Stop it with `stop()`.
final class ControlServerFixture {
    private let loop: EventLoop
    private let server: LoopBox<ControlServer>

    /// Starts a server at `path` answering with `answer`; throws what `start` threw.
    init(path: String, answer: @escaping @Sendable (String) -> [UInt8]) throws {
        loop = try EventLoop(name: "control-test")
        let outcome = LoopBox<Result<ControlServer, ControlSocketError>>()
        let done = DispatchSemaphore(value: 0)
        loop.execute { [loop] in
            outcome.value = Result { () throws(ControlSocketError) in
                try ControlServer.start(path: path, loop: loop, answer: answer)
            }
            done.signal()
        }
        done.wait()
        do {
            server = LoopBox(try outcome.value!.get())
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
        }
    }

    /// Stops the server (removing its socket), then the loop.
    func stop() {
        loop.execute { [server] in server.value?.stop() }
        loop.stop()
        loop.waitUntilStopped()
    }
}

/// Hands a loop-thread value between the test thread and the loop; the semaphore or the
/// loop's task queue orders the accesses.
final class LoopBox<Value>: @unchecked Sendable {
    var value: Value?
    init(_ value: Value? = nil) { self.value = value }
}

/// A fresh path for a control socket under /tmp.
func temporaryControlPath(_ name: String) -> String {
    let path = "/tmp/webproxyd-test-\(getpid())-\(name).sock"
    unlink(path)
    return path
}

/// Sends `request` on the unix socket at `path` and reads the answer until EOF.
func askControlSocket(_ path: String, _ request: String) -> String? {
    guard let fd = UnixSocketAddress(path: path)?.connect(timeoutSeconds: 5) else { return nil }
    defer { close(fd) }
    let bytes = Array(request.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
        return nil
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        answer += buffer[..<count]
    }
    return String(decoding: answer, as: UTF8.self)
}
