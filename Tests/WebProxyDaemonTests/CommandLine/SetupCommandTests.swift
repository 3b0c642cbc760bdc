#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyTestSupport

@testable import WebProxyDaemon

/// `webproxyd setup` against our test relay over real TLS: it checks first and writes nothing
/// on a failed stage; it writes the secret root-only and never into the configuration; what
/// it writes loads as the service will load it; and it replaces only what it may.
@Suite(.serialized) struct SetupCommandTests {
    /// A scratch /etc: the configuration, the credential store and the drop-in.
    final class ScratchSystem {
        let root: String
        let paths: SetupCommand.Paths
        var config: String { root + "/webproxyd.conf" }

        init() throws {
            var template = Array("/tmp/webproxyd-setup-XXXXXX".utf8CString)
            root = try #require(template.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
            })
            var paths = SetupCommand.Paths()
            paths.credentialStore = root + "/credstore"
            paths.dropIn = root + "/webproxyd.service.d/50-webproxyd-setup.conf"
            paths.examples = [root + "/example.conf"]
            paths.systemdRuntime = root + "/no-systemd"
            self.paths = paths
        }

        deinit {
            _ = ExternalProgram("rm", environment: [:])?.run(["-rf", root], environment: [:], patience: .seconds(10))
        }

        func mode(_ path: String) -> mode_t? {
            var status = stat()
            return stat(path, &status) == 0 ? status.st_mode & 0o7777 : nil
        }
    }

    private func setup(
        _ arguments: [String], _ system: ScratchSystem, stdin: String? = nil
    ) -> (status: Int32, output: String, errors: String) {
        let output = CapturedText(), errors = CapturedText()
        let status = SetupCommand.run(
            arguments + ["--config", system.config, "--no-start"], output: output.sink, errors: errors.sink,
            environment: [:], paths: system.paths, readLink: { _ in stdin })
        return (status, output.value, errors.value)
    }

    private func relayFlags(_ harness: CheckRelayHarness) -> [String] {
        ["--ca-file", temporaryFile(named: "setup-ca.pem", harness.caPEM), "--connect-to", "127.0.0.1:\(harness.port)"]
    }

    @Test func aCheckedRelayIsWrittenAsTheServiceWillReadIt() async throws {
        let harness = try await CheckRelayHarness(mode: .websocket, backend: .echo)
        let system = try ScratchSystem()
        // The link comes from standard input, so it never reaches the shell's history.
        let result = setup(relayFlags(harness) + ["--listen", "127.0.0.1:18443"], system, stdin: harness.link())
        await harness.shutdown()
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(result.output.contains("ok   tls") || result.output.contains("ok tls"), "\(result.output)")

        let credential = system.paths.credentialStore + "/webproxyd.home"
        #expect(SetupCommand.readText(credential) == RelayServerHarness.secret + "\n")
        #expect(system.mode(credential) == 0o600)
        #expect(system.mode(system.paths.credentialStore) == 0o700)
        #expect(system.mode(system.config) == 0o644)
        let config = try #require(SetupCommand.readText(system.config))
        #expect(config.hasPrefix(SetupCommand.marker))
        #expect(!config.contains(RelayServerHarness.secret))
        #expect(config.contains("secret-credential = webproxyd.home\nlisten = 127.0.0.1:18443\n"))
        #expect(SetupCommand.readText(system.paths.dropIn)?.contains("\nLoadCredential=webproxyd.home\n") == true)

        let loaded = try DaemonConfiguration.load(
            path: system.config, environment: ["CREDENTIALS_DIRECTORY": system.paths.credentialStore])
        let relay = try #require(loaded.configuration.relays.first)
        #expect(relay.name == "home" && relay.host.name == RelayServerHarness.host)
        #expect(relay.secret == (try ProxySecret(parsing: RelayServerHarness.secret)))
        #expect(result.output.contains("tg://proxy?server=127.0.0.1&port=18443&secret=\(RelayServerHarness.secret)\n"))
        // The capability and bridge URL derive from the secret; they never show.
        #expect(!result.output.contains(harness.capability.urlSafeValue) && !result.output.contains("bridge="))

        // Running setup again keeps the listen address, so Telegram's link stays valid.
        let again = try await CheckRelayHarness(mode: .websocket, backend: .echo)
        let rerun = setup(relayFlags(again), system, stdin: again.link())
        await again.shutdown()
        #expect(rerun.status == 0, "\(rerun.errors)")
        #expect(SetupCommand.readText(system.config)?.contains("listen = 127.0.0.1:18443\n") == true)
    }

    @Test func aFailedStageChangesNothing() async throws {
        let harness = try await CheckRelayHarness(mode: .https, backend: .echo)
        let system = try ScratchSystem()
        let wrong = "0f0e0d0c0b0a09080706050403020100"
        let result = setup([harness.link(secret: wrong)] + relayFlags(harness), system)
        await harness.shutdown()
        #expect(result.status == 13, "\(result.output)\(result.errors)")
        #expect(result.errors.contains("nothing was changed"))
        #expect(SetupCommand.readText(system.config) == nil)
        #expect(system.mode(system.paths.credentialStore) == nil && system.mode(system.paths.dropIn) == nil)
        #expect(!(result.output + result.errors).contains(wrong))
    }

    @Test func aConfigurationSetupDidNotWriteIsReplacedOnlyOnRequestAndKept() async throws {
        let system = try ScratchSystem()
        let own = "[relay mine]\nhost = relay.example.org\nsecret-file = /etc/webproxyd/mine.secret\nlisten = 127.0.0.1:9000\n"
        try SetupCommand.writeFile(system.config, own, mode: 0o644)
        let harness = try await CheckRelayHarness(mode: .https, backend: .echo)
        let refused = setup([harness.link()] + relayFlags(harness), system)
        #expect(refused.status == 78)
        #expect(refused.errors.contains("was not written by setup; nothing was changed"))
        #expect(SetupCommand.readText(system.config) == own)

        let replaced = setup([harness.link(), "--replace"] + relayFlags(harness), system)
        await harness.shutdown()
        #expect(replaced.status == 0, "\(replaced.errors)")
        #expect(SetupCommand.readText(system.config + ".before-setup") == own)
        #expect(SetupCommand.readText(system.config)?.hasPrefix(SetupCommand.marker) == true)
    }

    @Test func theShippedExampleIsReplacedWithoutAsking() async throws {
        let system = try ScratchSystem()
        let example = try #require(readRepositoryFile("systemd/webproxyd.conf.example"))
        try SetupCommand.writeFile(system.root + "/example.conf", example, mode: 0o644)
        try SetupCommand.writeFile(system.config, example, mode: 0o644)
        let harness = try await CheckRelayHarness(mode: .https, backend: .echo)
        let result = setup([harness.link(), "--name", "office"] + relayFlags(harness), system)
        await harness.shutdown()
        #expect(result.status == 0, "\(result.errors)")
        #expect(SetupCommand.readText(system.config)?.contains("[relay office]\n") == true)
        #expect(SetupCommand.readText(system.config + ".before-setup") == nil)
        #expect(SetupCommand.readText(system.paths.credentialStore + "/webproxyd.office") != nil)
    }

    @Test func usageErrorsNeverEchoTheLink() throws {
        let system = try ScratchSystem()
        let noLink = setup([], system, stdin: "")
        #expect(noLink.status == 64 && noLink.errors.contains("no link was given"))
        let badName = setup(["tg://webproxy?server=relay.example.com&secret=00112233445566778899aabbccddeeff",
                             "--name", "bad name"], system)
        #expect(badName.status == 78)
        #expect(!badName.errors.contains("00112233445566778899aabbccddeeff"))
        #expect(SetupCommand.readText(system.config) == nil)
    }

    @Test func outsideTheServiceACredentialIsReadFromTheCredentialStore() throws {
        let store = try OperationsScratchDirectory()
        try store.write("webproxyd.home", RelayServerHarness.secret + "\n")
        let loaded = try SecretSource.credential(name: "webproxyd.home")
            .load(environment: [:], credentialStores: ["/nonexistent", store.path])
        #expect(loaded.secret == (try ProxySecret(parsing: RelayServerHarness.secret)))
        // Inside the service, CREDENTIALS_DIRECTORY alone counts.
        #expect(throws: ConfigurationValueError.self) {
            try SecretSource.credential(name: "webproxyd.home")
                .load(environment: ["CREDENTIALS_DIRECTORY": "/nonexistent"], credentialStores: [store.path])
        }
    }
}
