#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyTestSupport

@testable import WebProxyDaemon

/// Socket activation without touching the process environment: a listening socket made
/// here is handed to the daemon as systemd's would be (`activatedSockets`).
@Suite(.serialized) struct SocketAdoptionTests {
    /// A listening TCP socket on 127.0.0.1 and its port.
    static func listeningSocket(listen: Bool = true) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        if listen { try #require(Glibc.listen(fd, 16) == 0) }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    @Test func aPassedSocketIsAdoptedAndStaysOpenForTheDaemon() throws {
        let (fd, port) = try Self.listeningSocket()
        defer { close(fd) }
        let fixture = try DaemonFixture(name: "adopt", listenPort: port, activatedSockets: ["default": fd])
        #expect(fixture.daemon.listenAddresses()["default"]?.description == "127.0.0.1:\(port)")
        let client = try #require(BlockingClient(port: port))
        #expect(client.send(Array("through systemd".utf8)))
        #expect(client.receive(count: 15) == Array("through systemd".utf8))
        client.close()
        #expect(fixture.stop() == 0)
        #expect(fixture.backend.records.contains { $0.message.contains("(socket passed by systemd)") })
        // The daemon listened on a copy: the passed socket is still ours and still listening.
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 && listening == 1)
    }

    @Test func aSocketBoundElsewhereIsAnErrorNamingBothAddresses() throws {
        let (fd, port) = try Self.listeningSocket()
        defer { close(fd) }
        let configured = unusedLoopbackPort()
        do {
            let fixture = try DaemonFixture(name: "mismatch", listenPort: configured, activatedSockets: ["default": fd])
            _ = fixture.stop()
            Issue.record("the daemon started with a socket bound elsewhere")
        } catch {
            #expect(
                "\(error)"
                    == "relay 'default': the socket systemd passed as 'default' is bound to 127.0.0.1:\(port), but listen = 127.0.0.1:\(configured); make ListenStream= in the socket unit and listen agree"
            )
        }
    }

    @Test func aSocketThatDoesNotListenIsRefused() throws {
        let (fd, port) = try Self.listeningSocket(listen: false)
        defer { close(fd) }
        do {
            let fixture = try DaemonFixture(name: "notlistening", listenPort: port, activatedSockets: ["default": fd])
            _ = fixture.stop()
            Issue.record("the daemon started with a socket that does not listen")
        } catch {
            #expect("\(error)".hasPrefix("relay 'default': cannot use the socket systemd passed: "))
        }
    }
}
