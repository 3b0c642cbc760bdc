import Testing
import WebProxyCore
@testable import WebProxyDaemon

@Suite struct LogRedactionTests {
    @Test func loggerScrubsEverySpellingOfAKnownSecret() throws {
        let secret = try ProxySecret(parsing: paddedSecretHex)
        let memory = MemoryLogBackend()
        let log = Logger(backend: memory).redacting([secret])
        let spellings = [secret.hex, secret.hex.uppercased(), secret.basePathLinkValue,
                         Base64URL.encode(secret.bytes), "3QARIjNEVWZ3iJmqu8zd7v8"]
        for spelling in spellings {
            log.warning("peer said \(spelling)!", LogFields(stage: spelling, error: "bad " + spelling))
        }
        #expect(memory.records.count == 5)
        for record in memory.records {
            #expect(record.message == "peer said <redacted>!")
            #expect(record.fields.stage == "<redacted>")
            #expect(record.fields.error == "bad <redacted>")
        }
    }

    @Test func redactedLinkKeepsTheServerOnly() throws {
        let root = try ProxyLink(parsing: rootLink)
        #expect(root.redacted == "tg://webproxy?server=relay.example.com&secret=<redacted>")
        let pathLink = ProxyLink(host: root.host, basePath: try BasePath("tp/x"), secret: root.secret)
        #expect(pathLink.redacted == "tg://webproxy?server=relay.example.com%2Ftp%2Fx&secret=<redacted>")
        #expect(!pathLink.redacted.contains(pathLink.secret.basePathLinkValue))
    }

    @Test func redactedURLsHidePasswordsQueryValuesAndFragments() {
        #expect(LogRedaction.url("https://relay.example.com/tp/?bridge=abcDEF123&v=2")
            == "https://relay.example.com/tp/?bridge=<redacted>&v=<redacted>")
        #expect(LogRedaction.url("socks5://user:hunter2@127.0.0.1:1080")
            == "socks5://user:<redacted>@127.0.0.1:1080")
        #expect(LogRedaction.url("https://h.example/p?flag#token") == "https://h.example/p?flag#<redacted>")
        #expect(LogRedaction.url("https://h.example/api/v1/up") == "https://h.example/api/v1/up")
    }

    @Test func secretBearingValuesDescribeThemselvesSafely() throws {
        let link = try ProxyLink(parsing: rootLink)
        let relay = RelayConfiguration(name: "home", host: link.host, basePath: nil, secret: link.secret,
                                       listen: try ListenAddress(parsing: "127.0.0.1:8443"))
        let memory = MemoryLogBackend()
        let log = Logger(backend: memory)
        log.info("\(relay) \(link) \(link.secret) \(String(reflecting: relay))")
        let message = try #require(memory.records.first?.message)
        #expect(!message.contains(plainSecretHex))
        #expect(!message.contains(link.secret.basePathLinkValue))
        #expect(message.contains("relay 'home' relay.example.com on 127.0.0.1:8443"))
    }
}
