#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyTestSupport

@testable import WebProxyDaemon

/// The control socket and `webproxyd status` against a daemon running in-process.
@Suite(.serialized) struct ControlSocketTests {
    @Test func statusReportsTheRunningRelayThroughTheCommandLine() throws {
        let path = temporaryControlPath("status")
        let fixture = try DaemonFixture(name: "status", controlSocketPath: path)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(fixture.waitForSessionUp())

        let client = try #require(BlockingClient(port: fixture.listenPort))
        #expect(client.send(Array("hello".utf8)))
        #expect(client.receive(count: 5) == Array("hello".utf8))

        let json = Capture(), jsonErrors = Capture()
        let jsonExit = CommandLineTool.run(
            arguments: ["status", "--json", "--socket", path], output: json.sink, errors: jsonErrors.sink,
            environment: [:])
        #expect(jsonExit == 0)
        #expect(jsonErrors.value.isEmpty)
        let document = try StatusDocument(decoding: Array(json.value.utf8))
        #expect(document.version == WebProxyDaemon.version)
        #expect(document.pid == getpid())
        #expect(
            document.relays == [
                RelayStatusEntry(
                    name: "default", listen: "127.0.0.1:\(fixture.listenPort)", state: .up, carrier: "https",
                    streams: 1, refusedConnections: 0, bytesUp: 5, bytesDown: 5, sessionsEstablished: 1,
                    reconnects: 0, lastError: nil)
            ])
        #expect(json.value.contains("\"sessions_established\" : 1"))

        let table = Capture()
        #expect(
            CommandLineTool.run(
                arguments: ["status", "--socket=\(path)"], output: table.sink, errors: Capture().sink, environment: [:])
                == 0)
        let lines = table.value.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("webproxyd \(WebProxyDaemon.version), pid \(getpid()), ") == true)
        // Exact column layout is the golden test's job (StatusTableTests); here, the values.
        let cells = lines.dropFirst().map { $0.split(separator: " ").joined(separator: " ") }
        #expect(
            cells == [
                "RELAY LISTEN STATE CARRIER STREAMS REFUSED UP DOWN SESSIONS RECONNECTS",
                "default 127.0.0.1:\(fixture.listenPort) up https 1 0 5 B 5 B 1 0",
            ])
        client.close()

        #expect(fixture.stop() == 0)
        #expect(access(path, F_OK) != 0, "the socket is removed on stop")
        let gone = Capture()
        let goneExit = CommandLineTool.run(
            arguments: ["status", "--socket", path], output: Capture().sink, errors: gone.sink, environment: [:])
        #expect(goneExit == 69)
        #expect(gone.value == "webproxyd status: webproxyd is not running (nothing answers on \(path))\n")
    }

    @Test func anUnknownRequestGetsAnErrorDocument() throws {
        let path = temporaryControlPath("unknown")
        let server = try ControlServerFixture(path: path) { request in Array("answer to \(request)\n".utf8) }
        defer { server.stop() }
        #expect(askControlSocket(path, "status\n") == "answer to status\n")
        #expect(askControlSocket(path, "  status  \r\n") == "answer to status\n")
        // A request line over the bound is refused at the bound, never buffered whole.
        let long = String(repeating: "x", count: 10_000)
        #expect(askControlSocket(path, long) == #"{"error": "the request line is longer than 256 bytes"}"# + "\n")
        #expect(ControlAnswer.error("unknown request; send \"status\"") == Array(#"{"error": "unknown request; send \"status\""}"#.utf8) + [10])
    }

    @Test func aSilentClientIsResetAtItsDeadlineWithoutHoldingUpOthers() throws {
        let path = temporaryControlPath("silent")
        let server = try ControlServerFixture(path: path) { _ in Array("ok\n".utf8) }
        defer { server.stop() }
        let silent = try #require(UnixSocketAddress(path: path)?.connect(timeoutSeconds: 5))
        defer { close(silent) }
        #expect(askControlSocket(path, "status\n") == "ok\n", "answered while the silent client is connected")
        var byte: UInt8 = 0
        let count = recv(silent, &byte, 1, 0)
        let failure = errno
        // Reset after `clientDeadline` (2 s), well before the 5 s receive timeout.
        #expect(count == 0 || (count < 0 && failure == ECONNRESET), "recv gave \(count), errno \(failure)")
    }

    @Test func aStaleSocketIsReplacedAndALiveOneIsNot() throws {
        let path = temporaryControlPath("stale")
        // A socket file nobody listens on, as a crashed daemon leaves behind.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let address = try #require(UnixSocketAddress(path: path))
        try #require(address.withSockaddr { bind(fd, $0, $1) } == 0)
        close(fd)
        let first = try ControlServerFixture(path: path) { _ in Array("one\n".utf8) }
        defer { first.stop() }
        #expect(askControlSocket(path, "status\n") == "one\n")
        #expect(throws: ControlSocketError.self) { try ControlServerFixture(path: path) { _ in [] } }
        do {
            _ = try ControlServerFixture(path: path) { _ in [] }
            Issue.record("a second server started on a live socket")
        } catch let error as ControlSocketError {
            #expect(error.description == "another webproxyd answers on \(path); stop it or choose another --control-socket")
        }
        #expect(askControlSocket(path, "status\n") == "one\n", "the first server still answers")
    }

    @Test func statusWithoutADaemonExits69() {
        let errors = Capture()
        let path = temporaryControlPath("absent")
        #expect(
            CommandLineTool.run(arguments: ["status", "--socket", path], output: Capture().sink, errors: errors.sink)
                == 69)
        #expect(errors.value.contains("webproxyd is not running"))
        #expect(CommandLineTool.run(arguments: ["status", "--bogus"], output: Capture().sink, errors: Capture().sink) == 64)
    }

    @Test(arguments: [
        (["RUNTIME_DIRECTORY": "/run/webproxyd-a:/run/other"], true, "/run/webproxyd-a/control.sock"),
        (["XDG_RUNTIME_DIR": "/run/user/1000"], true, "/run/webproxyd/control.sock"),
        (["XDG_RUNTIME_DIR": "/run/user/1000"], false, "/run/user/1000/webproxyd/control.sock"),
        (["XDG_RUNTIME_DIR": "relative"], false, nil),
        ([:], false, nil),
    ] as [([String: String], Bool, String?)])
    func daemonSocketPath(environment: [String: String], runWritable: Bool, expected: String?) {
        #expect(ControlSocketPath.forDaemon(environment: environment, isWritableDirectory: { _ in runWritable }) == expected)
    }

    @Test func clientLooksInEveryPlaceInOrder() {
        #expect(
            ControlSocketPath.candidatesForClient(environment: ["XDG_RUNTIME_DIR": "/run/user/7"])
                == ["/run/webproxyd/control.sock", "/run/user/7/webproxyd/control.sock"])
    }
}
