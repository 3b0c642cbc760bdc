#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

extension EndToEndFaultTests {
    /// Cases 9–11: the relay cannot be reached safely (untrusted certificate, dead upstream
    /// proxy, a name that does not resolve). Every one must fail closed, with no fallback.
    @Suite struct RelayReachability {
        /// Case 9 — expected: the relay comes back (same port) with a leaf from a CA the daemon
        /// does not trust: the running session's locals are closed, every rebuild fails the
        /// TLS handshake, new locals are closed after the admission wait, the log says the
        /// issuer is not trusted, and nothing is sent in the clear or elsewhere.
        @Test(arguments: [CarrierMode.https, .websocket])
        func aRelayWithAnUntrustedCertificateIsNeverUsed(mode: CarrierMode) async throws {
            let trusted = try await RelayServerHarness(mode: mode)
            let rig = try await EndToEndRig(mode: mode, settings: EndToEndFaultTests.failFastSettings, harness: trusted)
            #expect(rig.waitForSessionsUp())
            let client = try #require(rig.connect(timeoutSeconds: 10))
            defer { client.close() }
            let hello = Array("hello".utf8)
            #expect(client.send(hello) && client.receive(count: hello.count) == hello)
            let port = trusted.port
            await trusted.shutdown()
            let impostor = try await RelayServerHarness(mode: mode, port: port)
            #expect(client.receiveUntilClosed().closed, "over \(mode) the local connection survived the relay's loss")
            let newcomer = try #require(rig.connect(timeoutSeconds: 10))
            defer { newcomer.close() }
            _ = newcomer.send(hello)
            #expect(newcomer.receiveUntilClosed() == ([], true), "over \(mode) a new local connection was not closed")
            let saidSo = waitUntil(within: .seconds(5)) { rig.lines.contains { $0.contains("issuer not trusted") } }
            #expect(saidSo, "over \(mode) the log does not say the issuer is not trusted")
            let (handshakes, sessions) = try await impostor.withRelay { ($0.failedHandshakeCount, $0.sessionCount) }
            #expect(handshakes > 0 && sessions == 0, "over \(mode): \(handshakes) failed handshakes, \(sessions) sessions")
            print("[e2e] case 9 \(mode): \(handshakes) handshakes with the impostor failed, 0 sessions; locals closed")
            _ = rig.stopDaemon()
            await impostor.shutdown()
            rig.expectNoCredentials()
        }

        /// Sends a few bytes on a new local connection; checks that it is closed without an
        /// answer and that a session-down record with the class `unreachable` is logged.
        static func expectClosedAsUnreachable(_ rig: EndToEndRig, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let client = try #require(rig.connect(timeoutSeconds: 10), sourceLocation: sourceLocation)
            defer { client.close() }
            _ = client.send(Array("hello".utf8))
            let outcome = client.receiveUntilClosed()
            #expect(outcome.closed && outcome.bytes.isEmpty, sourceLocation: sourceLocation)
            let classified = waitUntil(within: .seconds(5)) {
                rig.log.records.contains { $0.fields.event == .relayUnreachable && $0.fields.error == "unreachable" }
            }
            #expect(classified, "no session-down record with the class unreachable", sourceLocation: sourceLocation)
        }

        /// Case 10 — expected: with `proxy = socks5://127.0.0.1:<closed port>` every session
        /// attempt fails, locals are closed after the admission wait, the error class is
        /// `unreachable`, and the relay address sees no connection at all (never direct).
        @Test func aDeadUpstreamProxyIsNeverBypassed() async throws {
            let relayAddress = try #require(ListeningSocket())
            let deadProxy = unusedLoopbackPort()
            let rig = try await EndToEndRig(mode: .https, settings: EndToEndFaultTests.failFastSettings) { relay in
                relay.proxy = try UpstreamProxy(parsing: "socks5://127.0.0.1:\(deadProxy)")
                relay.connectTo = try HostAndPort(parsing: "127.0.0.1:\(relayAddress.port)", what: "connect-to address")
            }
            try Self.expectClosedAsUnreachable(rig)
            _ = rig.stopDaemon()
            #expect(relayAddress.pendingConnections() == 0, "the daemon dialled the relay directly")
            let (sessions, handshakes) = try await rig.harness.withRelay { ($0.sessionCount, $0.failedHandshakeCount) }
            #expect(sessions == 0 && handshakes == 0)
            print("[e2e] case 10: proxy refused; local closed; relay address saw \(relayAddress.pendingConnections()) connections")
            await rig.harness.shutdown()
            rig.expectNoCredentials()
        }

        /// Case 11 — expected: a relay name that does not resolve (`relay.invalid`, no
        /// connect-to): locals are closed after the admission wait, the error class is
        /// `unreachable` and the log says why (the connect failure).
        @Test func anUnresolvableRelayFailsClosed() async throws {
            let rig = try await EndToEndRig(mode: .https, settings: EndToEndFaultTests.failFastSettings) { relay in
                relay.host = try RelayHost("relay.invalid")
                relay.connectTo = nil
            }
            try Self.expectClosedAsUnreachable(rig)
            let cause = rig.lines.first { $0.contains("failed after") && $0.contains("connectFailed") }
            #expect(cause != nil, "the log does not say the connection could not be opened")
            print("[e2e] case 11: \(cause ?? "no cause logged")")
            _ = rig.stopDaemon()
            let sessions = try await rig.harness.withRelay { $0.sessionCount }
            #expect(sessions == 0)
            await rig.harness.shutdown()
            rig.expectNoCredentials()
        }
    }
}

/// A loopback listener that never accepts: `pendingConnections` counts what reached it.
final class ListeningSocket: @unchecked Sendable {
    let fd: Int32
    let port: UInt16

    init?() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard let port = bindLoopback(fd, listeningWith: 16) else {
            Glibc.close(fd)
            return nil
        }
        self.fd = fd
        self.port = port
    }

    /// Accepts (and closes) everything queued; returns how many connections there were.
    func pendingConnections() -> Int {
        var count = 0
        while true {
            let accepted = accept(fd, nil, nil)
            guard accepted >= 0 else { return count }
            Glibc.close(accepted)
            count += 1
        }
    }

    deinit { Glibc.close(fd) }
}
