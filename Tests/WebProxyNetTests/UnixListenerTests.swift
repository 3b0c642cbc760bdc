import Glibc
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

@Suite struct UnixListenerTests {
    /// A fresh private directory under /tmp, removed (with what is left in it) by `remove`.
    struct TemporaryDirectory {
        let path: String

        init() throws {
            var template = Array("/tmp/webproxynet-unix-XXXXXX".utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            path = try #require(made.map { String(cString: $0) })
        }

        func remove(_ names: String...) {
            for name in names { unlink(path + "/" + name) }
            rmdir(path)
        }
    }

    @Test func echoesOverASocketInATemporaryDirectory() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove("echo.sock") }
        let path = directory.path + "/echo.sock"
        try await withLoop { loop in
            let payload = patternBytes(300_000)
            let outcome: (echoed: [UInt8], peer: SocketAddress?, mode: mode_t, removed: Bool) = try await onLoop(loop) {
                done in
                var peer: SocketAddress?
                let listener = try UnixListener.listen(path: path, loop: loop) { connection in
                    peer = connection.remoteAddress
                    connection.delegate = EchoDelegate()
                }
                #expect(listener.localAddress == SocketAddress.unix(path: path))
                var status = stat()
                #expect(stat(path, &status) == 0)
                let mode = status.st_mode & 0o7777
                let address = try #require(SocketAddress.unix(path: path))
                _ = TCPConnection.connect(to: address, on: loop, timeout: .seconds(5)) { result in
                    guard case .success(let connection) = result else {
                        Issue.record("connect failed: \(String(describing: result.failure))")
                        return done(([], nil, mode, false))
                    }
                    #expect(connection.remoteAddress == address)
                    let client = RecordingDelegate()
                    connection.delegate = client
                    client.onClose = { error in
                        #expect(error == nil)
                        listener.close()
                        done((client.received, peer, mode, access(path, F_OK) != 0))
                    }
                    client.write(payload, to: connection, inPiecesOf: 64_000)
                }
            }
            #expect(outcome.echoed == payload)
            #expect(outcome.peer?.family == .unix)
            #expect(outcome.peer?.unixPath == "", "the connecting side is unnamed")
            #expect(outcome.mode == 0o600)
            #expect(outcome.removed, "close() removes the socket file")
        }
    }

    @Test func anOccupiedPathIsRefusedAndTheLoopStoppingRemovesTheSocket() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove("busy.sock") }
        let path = directory.path + "/busy.sock"
        let loop = try EventLoop(name: "unix-test")
        let refusal: Int32 = try await onLoop(loop) { done in
            // Kept open by its registration until the loop stops.
            _ = try UnixListener.listen(path: path, mode: 0o660, loop: loop) { _ in }
            var status = stat()
            #expect(stat(path, &status) == 0 && status.st_mode & 0o7777 == 0o660)
            do throws(NetError) {
                _ = try UnixListener.listen(path: path, loop: loop) { _ in }
                done(0)  // not refused
            } catch {
                done(error.errno)
            }
        }
        #expect(refusal == EADDRINUSE)
        #expect(access(path, F_OK) == 0, "the refused second listener left the first one's socket alone")
        loop.stop()
        loop.waitUntilStopped()
        #expect(access(path, F_OK) != 0, "the loop stopping removed the socket file")
    }

    @Test func unixAddressesAreBoundedAndDescribed() throws {
        #expect(SocketAddress.unix(path: "") == nil)
        #expect(SocketAddress.unix(path: "/tmp/a\u{0}b") == nil)
        #expect(SocketAddress.unix(path: "/" + String(repeating: "x", count: 107)) == nil)
        let longest = try #require(SocketAddress.unix(path: "/" + String(repeating: "x", count: 106)))
        #expect(longest.unixPath?.utf8.count == 107)
        let address = try #require(SocketAddress.unix(path: "/run/example.sock"))
        #expect(address.description == "unix:/run/example.sock")
        #expect(address.family == .unix)
        #expect(address.port == 0)
        #expect(address.ipAddress == "")
        #expect(SocketAddress.loopbackIPv4(port: 1).unixPath == nil)
    }
}
