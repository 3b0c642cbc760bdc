import Synchronization
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon

/// Our test relay over real TLS (test CA) in front of an echo backend or a fake DC.
final class CheckRelayHarness: @unchecked Sendable {
    enum Backend { case echo, fakeDC }

    let loop: EventLoop
    let caPEM: String
    let capability: Capability
    private(set) var port: UInt16 = 0
    private var relay: TestRelayServer?
    private var stopBackend: (() -> Void)?

    init(mode: CarrierMode, backend: Backend) async throws {
        loop = try EventLoop(name: "check-relay-test")
        let authority = try TestCertificateAuthority()
        let leaf = try authority.issueLeaf(dnsNames: [RelayServerHarness.host])
        let serverContext = try TLSContext(server: leaf.serverConfiguration)
        caPEM = authority.certificatePEM
        let host = try RelayHost(RelayServerHarness.host)
        let secret = try ProxySecret(parsing: RelayServerHarness.secret)
        let configuration = TestRelayConfiguration(
            host: host, profiles: [RelayProfile(secret: secret, carrierMode: mode)], limits: RelayLimits())
        capability = Capability.derive(secret: secret, host: host, basePath: nil)
        let _: Bool = try await onRelayLoop(loop) { [self] done in
            do {
                let address: SocketAddress
                switch backend {
                case .echo:
                    let echo = try EchoBackend.start(on: loop)
                    address = echo.localAddress
                    stopBackend = echo.stop
                case .fakeDC:
                    let dc = try FakeDCBackend.start(on: loop, secret: secret)
                    address = dc.localAddress
                    stopBackend = dc.stop
                }
                let relay = try TestRelayServer.start(
                    on: loop, listen: .loopbackIPv4(port: 0), configuration: configuration,
                    backends: [address], tls: serverContext)
                self.relay = relay
                port = relay.port
                done(.success(true))
            } catch {
                done(.failure(error))
            }
        }
    }

    func shutdown() async {
        let _: Bool? = try? await onRelayLoop(loop) { [self] done in
            relay?.stop()
            stopBackend?()
            done(.success(true))
        }
        loop.stop()
        loop.waitUntilStopped()
    }

    func link(secret: String = RelayServerHarness.secret) -> String {
        "tg://webproxy?server=\(RelayServerHarness.host)&secret=\(secret)"
    }
}

/// Collects what a command writes.
final class CapturedText: Sendable {
    private let text = Mutex("")
    var sink: TextSink { TextSink { [self] line in text.withLock { $0 += line } } }
    var value: String { text.withLock { $0 } }
}

/// `webproxyd check` end to end against our test relay: exit codes per failed stage,
/// the stage lines, and nothing secret in the output.
@Suite(.serialized) struct CheckCommandTests {
    static func check(_ arguments: [String]) -> (status: Int32, output: String, errors: String) {
        let output = CapturedText()
        let errors = CapturedText()
        let status = CommandLineTool.run(
            arguments: ["check"] + arguments, output: output.sink, errors: errors.sink, environment: [:])
        return (status, output.value, errors.value)
    }

    static func expectNoSecrets(_ text: String, _ harness: CheckRelayHarness) {
        #expect(!text.contains(RelayServerHarness.secret))
        #expect(!text.contains(harness.capability.urlSafeValue))
        #expect(!text.contains("bridge="))
        #expect(!text.contains("Bearer"))
    }

    static func stageLine(_ output: String, _ stage: CheckStage) -> String? {
        output.split(separator: "\n").map(String.init).first { $0.dropFirst(5).hasPrefix(stage.rawValue + " ") }
    }

    @Test(arguments: [CarrierMode.https, .websocket])
    func everyStagePassesAgainstTheEchoRelay(mode: CarrierMode) async throws {
        let harness = try await CheckRelayHarness(mode: mode, backend: .echo)
        let ca = temporaryFile(named: "check-ca-\(mode.rawValue).pem", harness.caPEM)
        let result = Self.check(["--link", harness.link(), "--ca-file", ca, "--connect-to", "127.0.0.1:\(harness.port)"])
        await harness.shutdown()
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        for stage in CheckStage.allCases where stage != .stream {
            #expect(Self.stageLine(result.output, stage)?.hasPrefix("ok ") == true, "\(stage): \(result.output)")
        }
        #expect(Self.stageLine(result.output, .resolve)?.contains("127.0.0.1") == true)
        let tls = Self.stageLine(result.output, .tls) ?? ""
        #expect(tls.contains("TLSv1.3") && tls.contains("certificate \(RelayServerHarness.host)"), "\(tls)")
        #expect(tls.contains("expires ") && tls.contains(" days)") && tls.contains("ALPN \(TestCertificateAuthority.testServerALPN[0])"), "\(tls)")
        #expect(Self.stageLine(result.output, .bridge)?.contains("HTTP 200, carrierMode \(mode), batchLimit ") == true)
        #expect(Self.stageLine(result.output, .session)?.contains("HTTP 200, carrier \(mode)") == true)
        let stream = Self.stageLine(result.output, .stream) ?? ""
        #expect(stream.hasPrefix("warn stream") && stream.contains("backend echoed the request (not an MTProxy)"), "\(stream)")
        Self.expectNoSecrets(result.output + result.errors, harness)
    }

    @Test func aFakeDCAnswersResPQ() async throws {
        let harness = try await CheckRelayHarness(mode: .websocket, backend: .fakeDC)
        let ca = temporaryFile(named: "check-ca-dc.pem", harness.caPEM)
        let result = Self.check(
            ["--link", harness.link(), "--ca-file", ca, "--connect-to", "127.0.0.1:\(harness.port)", "--dc", "4"])
        await harness.shutdown()
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        let stream = Self.stageLine(result.output, .stream) ?? ""
        #expect(stream.hasPrefix("ok   stream"), "\(result.output)")
        #expect(stream.contains("DC 4 answered req_pq_multi with resPQ (nonce matches, 1 key fingerprint)"), "\(stream)")
        Self.expectNoSecrets(result.output + result.errors, harness)
    }

    @Test func aWrongSecretFailsTheBridgeStage() async throws {
        let harness = try await CheckRelayHarness(mode: .https, backend: .echo)
        let ca = temporaryFile(named: "check-ca-wrong.pem", harness.caPEM)
        let wrong = "0f0e0d0c0b0a09080706050403020100"
        let result = Self.check(
            ["--link", harness.link(secret: wrong), "--ca-file", ca, "--connect-to", "127.0.0.1:\(harness.port)"])
        await harness.shutdown()
        #expect(result.status == 13, "\(result.output)")
        let bridge = Self.stageLine(result.output, .bridge) ?? ""
        #expect(bridge.hasPrefix("FAIL bridge") && bridge.contains("wrong secret or host, or not a WEB relay"), "\(bridge)")
        #expect(Self.stageLine(result.output, .session) == nil)
        #expect(!result.output.contains(wrong))
        Self.expectNoSecrets(result.output + result.errors, harness)
    }

    @Test func anUntrustedCertificateFailsTheTLSStage() async throws {
        let harness = try await CheckRelayHarness(mode: .https, backend: .echo)
        let other = try TestCertificateAuthority()
        let ca = temporaryFile(named: "check-ca-other.pem", other.certificatePEM)
        let result = Self.check(["--link", harness.link(), "--ca-file", ca, "--connect-to", "127.0.0.1:\(harness.port)"])
        await harness.shutdown()
        #expect(result.status == 12, "\(result.output)")
        let tls = Self.stageLine(result.output, .tls) ?? ""
        #expect(tls.hasPrefix("FAIL tls"), "\(result.output)")
        #expect(Self.stageLine(result.output, .tcp)?.hasPrefix("ok ") == true)
        Self.expectNoSecrets(result.output + result.errors, harness)
    }

    /// `check --link` takes the file's keys as flags: a pin the relay's chain does not match
    /// fails the TLS stage.
    @Test func aPinFlagThatDoesNotMatchFailsTheTLSStage() async throws {
        let harness = try await CheckRelayHarness(mode: .https, backend: .echo)
        let ca = temporaryFile(named: "check-ca-pin.pem", harness.caPEM)
        let wrongPin = "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs="
        let result = Self.check([
            "--link", harness.link(), "--ca-file", ca, "--connect-to", "127.0.0.1:\(harness.port)",
            "--pin-sha256", wrongPin, "--carrier", "https",
        ])
        await harness.shutdown()
        #expect(result.status == 12, "\(result.output)")
        #expect(Self.stageLine(result.output, .tls)?.hasPrefix("FAIL tls") == true, "\(result.output)")
        Self.expectNoSecrets(result.output + result.errors, harness)
    }

    @Test func nothingListeningFailsTheTCPStage() throws {
        let link = "tg://webproxy?server=\(RelayServerHarness.host)&secret=\(RelayServerHarness.secret)"
        let result = Self.check(["--link", link, "--connect-to", "127.0.0.1:\(unusedLoopbackPort())"])
        #expect(result.status == 11, "\(result.output)")
        #expect(Self.stageLine(result.output, .resolve)?.hasPrefix("ok ") == true)
        #expect(Self.stageLine(result.output, .tcp)?.hasPrefix("FAIL tcp") == true, "\(result.output)")
        #expect(!result.output.contains(RelayServerHarness.secret))
    }

    @Test func usageAndConfigurationErrors() {
        #expect(Self.check(["--bogus", "x"]).status == 64)
        #expect(Self.check(["--dc", "zero", "--link", "x"]).status == 64)
        #expect(Self.check(["--ca-file", "/nonexistent"]).status == 64)
        #expect(Self.check(["--proxy", "socks5://127.0.0.1:1080"]).status == 64)
        #expect(Self.check(["--link", "tg://webproxy?server=a.example&secret=000102030405060708090a0b0c0d0e0f", "--carrier", "smoke"]).status == 78)
        #expect(Self.check(["--config", "/nonexistent/webproxyd.conf"]).status == 78)
        #expect(Self.check(["--link", "tg://webproxy?server=a.example&secret=zz"]).status == 78)
        let help = Self.check(["--help"])
        #expect(help.status == 0 && help.output.contains("13  bridge"))
    }
}
