#if canImport(Glibc)
import Glibc
#endif
import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestSupport
@testable import WebProxyDaemon

let plainSecretHex = "00112233445566778899aabbccddeeff"
let paddedSecretHex = "dd00112233445566778899aabbccddeeff"
let rootLink = "tg://webproxy?server=relay.example.com&secret=" + plainSecretHex
/// A real CA certificate, for `ca-file`: the file is loaded as `run` would load it.
let testCAPEM = try! TestCertificateAuthority().certificatePEM

/// Parses configuration text labelled `test.conf` with no environment.
func parseConfiguration(_ text: String, environment: [String: String] = [:],
                        readableByOthers: Bool = false) throws(ConfigurationError) -> LoadedConfiguration {
    try DaemonConfiguration.parse(text, file: "test.conf", environment: environment,
                                  fileReadableByOthers: readableByOthers)
}

@Suite struct DaemonConfigurationTests {
    @Test func everyRelayKeyBecomesATypedValue() throws {
        let scratch = try OperationsScratchDirectory()
        let caFile = try scratch.write("ca.pem", testCAPEM, mode: 0o644)
        // SHA-256 of "a", "b" and "c".
        let pinA = "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs="
        let pinB = "PiPoFgA5WUoziU9lZOGxNIu9egCI1CxKy3PurtWcAJ0="
        let pinC = "Ln0sA6lQeuJl7PW1NWiFpTOTogKdJBOUmXJloaJa78Y="
        let text = """
            # comment
            ; another comment
            [daemon]
            metrics = 127.0.0.1:9464
            log-level = debug

            [relay home]
              host   =  Relay.Example.COM
            base-path = /tp/
            secret = \(paddedSecretHex)
            listen = [::1]:8443\r
            carrier = websocket-lanes
            ca-file = \(caFile)
            pin-sha256 = \(pinA), \(pinB)
            pin-sha256 = \(pinC)
            connect-to = [2001:db8::1]:8443
            proxy = socks5://alice:p%40ss@127.0.0.1:1080
            max-streams = 16
            user-agent = Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0
            http2 = no

            [relay work]
            link = \(rootLink)
            listen = 127.0.0.1:8444
            """
        let loaded = try parseConfiguration(text)
        #expect(loaded.warnings.isEmpty)
        let configuration = loaded.configuration
        #expect(configuration.metrics == (try ListenAddress(parsing: "127.0.0.1:9464")))
        #expect(configuration.logLevel == .debug)
        #expect(configuration.relays.map(\.name) == ["home", "work"])

        let home = try #require(configuration.relay(named: "home"))
        #expect(home.host.name == "relay.example.com")
        #expect(home.basePath?.value == "tp")
        #expect(home.secret.hex == paddedSecretHex)
        #expect(home.listen.description == "[::1]:8443")
        #expect(home.listen.family == .ipv6)
        #expect(home.allowNonLoopback == false)
        #expect(home.carrier == .websocketLanes)
        #expect(home.caFile == caFile)
        #expect(home.pins.map(\.description) == [pinA, pinB, pinC])
        #expect(home.connectTo == (try HostAndPort(parsing: "[2001:db8::1]:8443")))
        #expect(home.proxy?.kind == .socks5)
        #expect(home.proxy?.address.description == "127.0.0.1:1080")
        #expect(home.proxy?.credentials == UpstreamProxy.Credentials(user: "alice", password: "p@ss"))
        #expect(home.maxStreams == 16)
        #expect(home.browser.userAgent == "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0")
        #expect(home.http2 == false)

        let work = try #require(configuration.relay(named: "work"))
        #expect(work.link == (try ProxyLink(parsing: rootLink)))
        #expect(work.listen.description == "127.0.0.1:8444")
        #expect(work.carrier == .follow)
        #expect(work.maxStreams == 128)
        #expect(work.pins.isEmpty && work.caFile == nil && work.connectTo == nil && work.proxy == nil)
        #expect(work.userAgent == nil && work.browser == .chromium)
        #expect(work.http2)
    }

    @Test func defaultsApplyWithoutADaemonSection() throws {
        let loaded = try parseConfiguration("[relay r]\nlink = \(rootLink)\nlisten = 127.0.0.1:1\n")
        #expect(loaded.configuration.metrics == nil)
        #expect(loaded.configuration.logLevel == .info)
    }

    @Test func secretFromACredentialDirectory() throws {
        let scratch = try OperationsScratchDirectory()
        try scratch.write("home.secret", plainSecretHex + "\n", mode: 0o400)
        let loaded = try parseConfiguration(
            "[relay home]\nhost = relay.example.com\nsecret-credential = home.secret\nlisten = 127.0.0.1:8443\n",
            environment: ["CREDENTIALS_DIRECTORY": scratch.path])
        #expect(loaded.configuration.relays.first?.secret.hex == plainSecretHex)
        #expect(loaded.warnings.isEmpty)
    }

    @Test func secretFileReadableByOthersIsAWarning() throws {
        let scratch = try OperationsScratchDirectory()
        let open = try scratch.write("open.secret", plainSecretHex, mode: 0o644)
        let closed = try scratch.write("closed.secret", paddedSecretHex, mode: 0o600)
        let text = """
            [relay a]
            host = relay.example.com
            secret-file = \(open)
            listen = 127.0.0.1:8443
            [relay b]
            host = relay.example.com
            secret-file = \(closed)
            listen = 127.0.0.1:8444
            """
        let loaded = try parseConfiguration(text)
        #expect(loaded.configuration.relays.map(\.secret.hex) == [plainSecretHex, paddedSecretHex])
        #expect(loaded.warnings == [ConfigurationDiagnostic(
            .warning, file: "test.conf", line: 3, "The secret file can be read by other users",
            hint: "run chmod 600 on it, or load it with LoadCredential= and secret-credential")])
    }

    @Test func secretFileThatIsAFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let scratch = try OperationsScratchDirectory()
        let fifo = scratch.path + "/home.secret"
        #expect(mkfifo(fifo, 0o600) == 0)
        let text = "[relay home]\nhost = relay.example.com\nsecret-file = \(fifo)\nlisten = 127.0.0.1:8443\n"
        #expect(throws: ConfigurationError([ConfigurationDiagnostic(
            .error, file: "test.conf", line: 3, "The secret file \(fifo) is not a regular file")])) {
            try parseConfiguration(text)
        }
    }

    @Test func inlineSecretsInAReadableFileAreWarnings() throws {
        let text = """
            [relay a]
            link = \(rootLink)
            listen = 127.0.0.1:8443
            [relay b]
            host = relay.example.com
            secret = \(plainSecretHex)
            listen = 127.0.0.1:8444
            """
        let loaded = try parseConfiguration(text, readableByOthers: true)
        #expect(loaded.warnings.map(\.line) == [2, 6])
        #expect(loaded.warnings.first?.description == "test.conf:2: warning: 'link' puts the relay secret in a file other users can read (use secret-credential with LoadCredential=, or chmod 600 the file)")
        #expect(try parseConfiguration(text).warnings.isEmpty)
    }

    @Test func nonLoopbackListenerWithOptInIsAWarning() throws {
        let loaded = try parseConfiguration(
            "[relay a]\nlink = \(rootLink)\nlisten = 0.0.0.0:8443\nallow-non-loopback = yes\n")
        #expect(loaded.configuration.relays.first?.allowNonLoopback == true)
        #expect(loaded.warnings.map(\.line) == [3])
        #expect(loaded.warnings.first?.message.contains("0.0.0.0:8443") == true)
    }

    @Test func loadReadsAFileAndReportsItsPath() throws {
        let scratch = try OperationsScratchDirectory()
        let path = try scratch.write("webproxyd.conf", "[relay a]\nlink = \(rootLink)\nlisten = 127.0.0.1:8443\n", mode: 0o644)
        let loaded = try DaemonConfiguration.load(path: path, environment: [:])
        #expect(loaded.configuration.relays.count == 1)
        #expect(loaded.warnings.map(\.description) == [
            "\(path):2: warning: 'link' puts the relay secret in a file other users can read (use secret-credential with LoadCredential=, or chmod 600 the file)",
        ])
        let missing = scratch.path + "/absent.conf"
        #expect(throws: ConfigurationError([ConfigurationDiagnostic(
            .error, file: missing, line: nil,
            "Cannot open the configuration file \(missing): No such file or directory")])) {
            try DaemonConfiguration.load(path: missing, environment: [:])
        }
    }

    @Test func reloadTellsWhichRelaysChanged() throws {
        let before = try parseConfiguration("""
            [relay keep]
            link = \(rootLink)
            listen = 127.0.0.1:1
            [relay edit]
            link = \(rootLink)
            listen = 127.0.0.1:2
            [relay drop]
            link = \(rootLink)
            listen = 127.0.0.1:3
            """).configuration
        let after = try parseConfiguration("""
            [relay keep]
            link = \(rootLink)
            listen = 127.0.0.1:1
            [relay edit]
            host = relay.example.com
            secret = \(paddedSecretHex)
            listen = 127.0.0.1:2
            [relay new]
            link = \(rootLink)
            listen = 127.0.0.1:4
            """).configuration
        #expect(after.changes(from: before) == RelayChanges(
            added: ["new"], removed: ["drop"], changed: ["edit"], unchanged: ["keep"]))
        #expect(before.changes(from: before) == RelayChanges(unchanged: ["keep", "edit", "drop"]))
    }

    @Test func quickFlagsBuildTheDefaultRelay() throws {
        let scratch = try OperationsScratchDirectory()
        let caFile = try scratch.write("ca.pem", testCAPEM, mode: 0o644)
        let pinA = "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs="
        let pinB = "PiPoFgA5WUoziU9lZOGxNIu9egCI1CxKy3PurtWcAJ0="
        let relay = try RelayConfiguration(
            quickLink: rootLink, listen: "127.0.0.1:8443", caFile: caFile, connectTo: "127.0.0.1:9443",
            proxy: "socks5://127.0.0.1:1080", pins: "\(pinA), \(pinB)", carrier: "websocket")
        #expect(relay == RelayConfiguration(
            name: "default", host: try RelayHost("relay.example.com"), basePath: nil,
            secret: try ProxySecret(parsing: plainSecretHex),
            listen: try ListenAddress(parsing: "127.0.0.1:8443"), carrier: .websocket, caFile: caFile,
            pins: [try SPKIPin(parsing: pinA), try SPKIPin(parsing: pinB)],
            connectTo: try HostAndPort(parsing: "127.0.0.1:9443"),
            proxy: try UpstreamProxy(parsing: "socks5://127.0.0.1:1080")))
    }

    /// The optional quick flags are checked as strictly as the file's keys.
    @Test func quickOptionalFlagErrorsNameTheFlag() throws {
        let scratch = try OperationsScratchDirectory()
        let notPEM = try scratch.write("not-a-ca.pem", "just text\n", mode: 0o644)
        do {
            _ = try RelayConfiguration(
                quickLink: rootLink, listen: "127.0.0.1:8443", caFile: notPEM, proxy: "ftp://x:1",
                pins: "tooshort", carrier: "websockets")
            Issue.record("bad quick flags were accepted")
        } catch {
            let flags = error.diagnostics.map { String($0.message.prefix(while: { $0 != ":" })) }
            #expect(flags == ["--ca-file", "--proxy", "--pin-sha256", "--carrier"])
            #expect(error.description.contains("holds no usable PEM CA certificate"))
            #expect(error.description.contains("did you mean 'websocket'?"))
        }
    }

    /// `ca-file` is loaded as `run` loads it: readable is not enough.
    @Test func aCAFileThatIsNotPEMIsAnErrorOnItsLine() throws {
        let scratch = try OperationsScratchDirectory()
        let notPEM = try scratch.write("ca.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n", mode: 0o644)
        let text = "[relay home]\nlink = \(rootLink)\nlisten = 127.0.0.1:8443\nca-file = \(notPEM)\n"
        #expect(throws: ConfigurationError.self) { try parseConfiguration(text) }
        do {
            _ = try parseConfiguration(text)
        } catch {
            #expect(error.diagnostics.count == 1)
            #expect(error.description.hasPrefix("test.conf:4: error: \(notPEM) holds no usable PEM CA certificate"))
        }
    }

    @Test func quickFlagErrorsNameTheFlag() {
        #expect(throws: ConfigurationError([
            ConfigurationDiagnostic(.error, file: "command line", line: nil,
                                    "--link: The link has no secret= parameter."),
            ConfigurationDiagnostic(.error, file: "command line", line: nil,
                                    "--listen: 192.0.2.1:8443 is not a loopback address; anyone who can reach it could use the relay",
                                    hint: "listen on 127.0.0.1 or [::1]"),
            ConfigurationDiagnostic(.error, file: "command line", line: nil,
                                    "--ca-file: The path must be absolute",
                                    hint: "the working directory under systemd is /; start the path with /"),
        ])) {
            try RelayConfiguration(quickLink: "tg://webproxy?server=relay.example.com",
                                   listen: "192.0.2.1:8443", caFile: "ca.pem")
        }
    }

    @Test func descriptionsHideSecretsAndPasswords() throws {
        let relay = try parseConfiguration("""
            [relay home]
            host = relay.example.com
            secret = \(plainSecretHex)
            listen = 127.0.0.1:8443
            proxy = http://bob:hunter2@proxy.example.net:3128
            """).configuration.relays[0]
        let texts = [relay.description, String(describing: relay), String(reflecting: relay),
                     String(describing: relay.proxy), String(reflecting: relay.proxy)]
        for text in texts {
            #expect(!text.contains(plainSecretHex))
            #expect(!text.contains("hunter2"))
        }
        #expect(relay.description == "relay 'home' relay.example.com on 127.0.0.1:8443, carrier follow, via http://bob:<redacted>@proxy.example.net:3128")
    }
}
