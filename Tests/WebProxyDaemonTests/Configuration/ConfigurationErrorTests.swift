import Testing
@testable import WebProxyDaemon

/// A configuration that must be refused, and the exact diagnostics expected.
struct RefusedConfiguration: CustomTestStringConvertible, Sendable {
    let label: String
    let text: String
    let expected: [String]

    var testDescription: String { label }
}

/// A valid relay body to build broken files around.
private let relayBody = "link = \(rootLink)\nlisten = 127.0.0.1:8443\n"

@Suite struct ConfigurationErrorTests {
    static let cases: [RefusedConfiguration] = [
        .init(label: "misspelt key", text: "[relay home]\n" + relayBody + "cafile = /etc/ca.pem\n", expected: [
            "test.conf:4: error: Unknown key 'cafile' in [relay home] (did you mean 'ca-file'?)",
        ]),
        .init(label: "unknown key without a near match", text: "[relay home]\n" + relayBody + "colour = blue\n", expected: [
            "test.conf:4: error: Unknown key 'colour' in [relay home] (known keys: link, host, base-path, secret, secret-file, secret-credential, listen, allow-non-loopback, carrier, ca-file, pin-sha256, connect-to, proxy, max-streams, user-agent, http2, media-session, pace-uploads)",
        ]),
        .init(label: "user-agent with a control character", text: "[relay home]\n" + relayBody + "user-agent = Mozilla/5.0\u{7}\n", expected: [
            "test.conf:4: error: user-agent must be 1 to 512 printable ASCII characters (e.g. the User-Agent of your own browser, from its about:version page)",
        ]),
        .init(label: "key of the other section", text: "[relay home]\n" + relayBody + "metrics = 127.0.0.1:9464\n", expected: [
            "test.conf:4: error: 'metrics' belongs in the [daemon] section",
        ]),
        .init(label: "duplicate key", text: "[relay home]\n" + relayBody + "listen = 127.0.0.1:9000\n", expected: [
            "test.conf:4: error: 'listen' is set twice in [relay home] (first on line 3) (keep one)",
        ]),
        .init(label: "duplicate relay", text: "[relay home]\n" + relayBody + "[relay home]\n" + relayBody, expected: [
            "test.conf:4: error: [relay home] appears twice (first on line 1) (give every relay its own name)",
        ]),
        .init(label: "errors in file order", text: "[relay a]\n[relay a]\n" + relayBody, expected: [
            "test.conf:1: error: Relay 'a' has neither 'link' nor 'host' (add link = tg://webproxy?... or host = relay.example.com with a secret)",
            "test.conf:1: error: Relay 'a' has no secret (add exactly one of secret, secret-file or secret-credential)",
            "test.conf:1: error: Relay 'a' has no 'listen' address (add e.g. listen = 127.0.0.1:8443)",
            "test.conf:2: error: [relay a] appears twice (first on line 1) (give every relay its own name)",
        ]),
        .init(label: "duplicate daemon section", text: "[daemon]\n[relay a]\n" + relayBody + "[daemon]\n", expected: [
            "test.conf:5: error: [daemon] appears twice (first on line 1) (merge the two [daemon] sections)",
        ]),
        .init(label: "key outside a section", text: "listen = 127.0.0.1:1\n[relay home]\n" + relayBody, expected: [
            "test.conf:1: error: 'listen' is outside any section (put it under [relay NAME] or [daemon])",
        ]),
        .init(label: "unknown section", text: "[relays home]\nlisten = x\n", expected: [
            "test.conf:1: error: Unknown section '[relays home]' (did you mean '[relay NAME]'?)",
        ]),
        .init(label: "relay without a name", text: "[relay]\n" + relayBody, expected: [
            "test.conf:1: error: A relay section needs a name (write [relay NAME], e.g. [relay home])",
        ]),
        .init(label: "bad relay name", text: "[relay -x]\n" + relayBody, expected: [
            "test.conf:1: error: The relay name must be 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit (it is also the socket unit's FileDescriptorName=)",
        ]),
        .init(label: "unclosed header", text: "[relay home\n" + relayBody, expected: [
            "test.conf:1: error: A section header must end with ']' (write [relay NAME] or [daemon])",
        ]),
        .init(label: "line without equals", text: "[relay home]\n" + relayBody + "listen 127.0.0.1:1\n", expected: [
            "test.conf:4: error: Expected 'key = value', a [section] header or a comment (comments start with # or ; at the beginning of a line)",
        ]),
        .init(label: "empty value", text: "[relay home]\n" + relayBody + "carrier =\n", expected: [
            "test.conf:4: error: 'carrier' has no value (remove the line or give a value)",
        ]),
        .init(label: "no relay at all", text: "# nothing\n[daemon]\nlog-level = info\n", expected: [
            "test.conf: error: The configuration has no [relay NAME] section (add one per relay; see webproxyd.conf.example)",
        ]),
        .init(label: "missing listen", text: "[relay home]\nlink = \(rootLink)\n", expected: [
            "test.conf:1: error: Relay 'home' has no 'listen' address (add e.g. listen = 127.0.0.1:8443)",
        ]),
        .init(label: "missing host and link", text: "[relay home]\nsecret = \(plainSecretHex)\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:1: error: Relay 'home' has neither 'link' nor 'host' (add link = tg://webproxy?... or host = relay.example.com with a secret)",
        ]),
        .init(label: "missing secret", text: "[relay home]\nhost = relay.example.com\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:1: error: Relay 'home' has no secret (add exactly one of secret, secret-file or secret-credential)",
        ]),
        .init(label: "two secret sources", text: "[relay home]\nhost = relay.example.com\nsecret = \(plainSecretHex)\nsecret-credential = home\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:4: error: 'secret-credential' conflicts with 'secret' (line 3) (give exactly one of secret, secret-file or secret-credential)",
        ]),
        .init(label: "link with host", text: "[relay home]\n" + relayBody + "host = relay.example.com\n", expected: [
            "test.conf:4: error: 'host' cannot be combined with 'link' (line 2) (the link already names the host, base path and secret; keep one form)",
        ]),
        .init(label: "FakeTLS secret", text: "[relay home]\nhost = relay.example.com\nsecret = ee\(plainSecretHex)6578616d706c652e636f6d\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:3: error: This is an ee (FakeTLS) secret, which WEB relays do not accept: a WEB relay needs a plain or dd secret. Ask the relay operator for the relay's WEB link or its plain secret.",
        ]),
        .init(label: "IP address as relay host", text: "[relay home]\nhost = 192.0.2.7\nsecret = \(plainSecretHex)\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:2: error: The relay must be given by its hostname, not an IP address: the hostname is part of the relay's identity and of its TLS certificate.",
        ]),
        .init(label: "host name as listen address", text: "[relay home]\nlink = \(rootLink)\nlisten = localhost:8443\n", expected: [
            "test.conf:3: error: A listen address must be an IP address, not a host name (use 127.0.0.1:PORT or [::1]:PORT; IPv6 goes in brackets)",
        ]),
        .init(label: "IPv6 without brackets", text: "[relay home]\nlink = \(rootLink)\nlisten = ::1:8443\n", expected: [
            "test.conf:3: error: An IPv6 address must be written in brackets (e.g. [::1]:8443)",
        ]),
        .init(label: "port out of range", text: "[relay home]\nlink = \(rootLink)\nlisten = 127.0.0.1:65536\n", expected: [
            "test.conf:3: error: The port of the listen address must be a number from 1 to 65535",
        ]),
        .init(label: "non-loopback listener", text: "[relay home]\nlink = \(rootLink)\nlisten = 192.0.2.1:8443\n", expected: [
            "test.conf:3: error: 192.0.2.1:8443 is not a loopback address; anyone who can reach it could use the relay (listen on 127.0.0.1 or [::1], or set allow-non-loopback = yes)",
        ]),
        .init(label: "bad boolean", text: "[relay home]\n" + relayBody + "allow-non-loopback = maybe\n", expected: [
            "test.conf:4: error: Expected yes or no (write yes or no)",
        ]),
        .init(label: "misspelt carrier", text: "[relay home]\n" + relayBody + "carrier = websockets\n", expected: [
            "test.conf:4: error: Unknown carrier (did you mean 'websocket'?)",
        ]),
        .init(label: "max-streams too high", text: "[relay home]\n" + relayBody + "max-streams = 129\n", expected: [
            "test.conf:4: error: max-streams must be a whole number from 1 to 128",
        ]),
        .init(label: "short pin", text: "[relay home]\n" + relayBody + "pin-sha256 = \(String(repeating: "A", count: 42))==\n", expected: [
            "test.conf:4: error: A pin-sha256 value decodes to 31 bytes; a SHA-256 hash is 32 (give the base64 of the SHA-256 of the certificate's public key, 44 characters)",
        ]),
        .init(label: "unsupported proxy", text: "[relay home]\n" + relayBody + "proxy = socks4://127.0.0.1:1080\n", expected: [
            "test.conf:4: error: The proxy scheme is not supported (use socks5:// or http://)",
        ]),
        .init(label: "proxy user without password", text: "[relay home]\n" + relayBody + "proxy = http://bob@127.0.0.1:3128\n", expected: [
            "test.conf:4: error: The proxy user has no password (write user:password@host:port)",
        ]),
        .init(label: "bad connect-to", text: "[relay home]\n" + relayBody + "connect-to = relay_1.example:443\n", expected: [
            "test.conf:4: error: The host of the connect-to address is not a valid host name or IP address (use an ASCII name such as relay.example.net, an IPv4 address, or [IPv6])",
        ]),
        .init(label: "relative secret file", text: "[relay home]\nhost = relay.example.com\nsecret-file = home.secret\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:3: error: The path must be absolute (the working directory under systemd is /; start the path with /)",
        ]),
        .init(label: "credential without CREDENTIALS_DIRECTORY", text: "[relay home]\nhost = relay.example.com\nsecret-credential = home.secret\nlisten = 127.0.0.1:1\n", expected: [
            "test.conf:3: error: secret-credential needs systemd credentials, but CREDENTIALS_DIRECTORY is not set and no /etc/credstore/home.secret or /run/credstore/home.secret or /usr/lib/credstore/home.secret exists (add LoadCredential=home.secret:/path/to/secret to the service, or use secret-file)",
        ]),
        .init(label: "abbreviated log level", text: "[daemon]\nlog-level = warn\n[relay home]\n" + relayBody, expected: [
            "test.conf:2: error: Unknown log level (did you mean 'warning'?)",
        ]),
        .init(label: "two relays on one address", text: "[relay a]\n" + relayBody + "[relay b]\nlink = \(rootLink)\nlisten = 0.0.0.0:8443\nallow-non-loopback = yes\n", expected: [
            "test.conf:6: error: Relay 'b' listens on 0.0.0.0:8443, which relay 'a' (line 3) already uses (give every relay its own port)",
        ]),
        .init(label: "metrics on a relay's port", text: "[daemon]\nmetrics = 127.0.0.1:8443\n[relay a]\n" + relayBody, expected: [
            "test.conf:2: error: metrics listens on 127.0.0.1:8443, which relay 'a' (line 5) already uses (use another port, e.g. 9464)",
        ]),
        .init(label: "every error is reported", text: "[relay a]\nlink = \(rootLink)\nlisten = 127.0.0.1:x\ncarrier = fast\n[relay b]\nhost = relay.example.com\n", expected: [
            "test.conf:3: error: The port of the listen address must be a number from 1 to 65535",
            "test.conf:4: error: Unknown carrier (use one of follow, https, https-lanes, websocket, websocket-lanes)",
            "test.conf:5: error: Relay 'b' has no secret (add exactly one of secret, secret-file or secret-credential)",
            "test.conf:5: error: Relay 'b' has no 'listen' address (add e.g. listen = 127.0.0.1:8443)",
        ]),
    ]

    @Test(arguments: cases)
    func refused(_ refused: RefusedConfiguration) {
        do {
            let loaded = try parseConfiguration(refused.text)
            Issue.record("accepted: \(loaded.configuration.relays)")
        } catch {
            #expect(error.diagnostics.map(\.description) == refused.expected)
            #expect(error.diagnostics.allSatisfy { $0.severity == .error })
        }
    }

    @Test func errorsNeverRepeatASecret() {
        let secret = "ee" + plainSecretHex + "6578616d706c652e636f6d"
        let texts = [
            "[relay a]\nhost = relay.example.com\nsecret = \(secret)\nlisten = 127.0.0.1:1\n",
            "[relay a]\nlink = tg://webproxy?server=relay.example.com&secret=\(secret)\nlisten = 127.0.0.1:1\n",
            "[relay a]\n" + relayBody + "proxy = http://bob:\(secret)@proxy.example.net:x\n",
        ]
        for text in texts {
            #expect(throws: ConfigurationError.self) { try parseConfiguration(text) }
            do {
                _ = try parseConfiguration(text)
            } catch {
                #expect(!error.description.contains(plainSecretHex))
            }
        }
    }

    @Test(arguments: [
        ("cafile", "ca-file"), ("secret_file", "secret-file"), ("pin-sha-256", "pin-sha256"),
        ("lisen", "listen"), ("hsot", "host"), ("max-stream", "max-streams"),
    ])
    func suggestions(typo: String, key: String) {
        #expect(KeySuggestion.closest(to: typo, among: ConfigurationParser.relayKeys) == key)
    }

    @Test func noSuggestionForUnrelatedWords() {
        #expect(KeySuggestion.closest(to: "colour", among: ConfigurationParser.relayKeys) == nil)
        #expect(KeySuggestion.editDistance("ab", "ba") == 1)
        #expect(KeySuggestion.editDistance("", "abc") == 3)
    }
}
