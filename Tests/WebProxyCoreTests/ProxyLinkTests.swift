import Testing
import WebProxyTestSupport
@testable import WebProxyCore

@Suite struct ProxyLinkTests {
    static let plainHex = "8561944064fc730cbfa4473562d8ec59"
    static let marked = "cIVhlEBk_HMMv6RHNWLY7Fk"

    struct Valid: Sendable, CustomTestStringConvertible {
        let link: String
        let host: String
        let basePath: String?
        let secretHex: String
        var testDescription: String { link }
    }

    static let valid = [
        Valid(link: "tg://webproxy?server=proxy.example.com&secret=\(plainHex)",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
        Valid(link: "https://t.me/webproxy?server=proxy.example.com&secret=\(plainHex)",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
        Valid(link: "TG://WebProxy?host=Proxy.Example.COM&secret=\(plainHex.uppercased())",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
        Valid(link: "HTTPS://T.ME/webproxy?secret=\(plainHex)&server=proxy.example.com",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
        Valid(link: "tg://webproxy?server=proxy.example.com%2Fdobry-cola-super-app&secret=\(marked)",
              host: "proxy.example.com", basePath: "dobry-cola-super-app", secretHex: plainHex),
        Valid(link: "tg://webproxy?server=proxy.example.com%2ftwo%2Fsegments&secret=\(marked)",
              host: "proxy.example.com", basePath: "two/segments", secretHex: plainHex),
        Valid(link: "tg://webproxy?server=proxy.example.com/raw-slash&secret=\(marked)",
              host: "proxy.example.com", basePath: "raw-slash", secretHex: plainHex),
        Valid(link: "tg://webproxy?server=proxy.example.com%2FP&secret=cN0AAQIDBAUGBwgJCgsMDQ4P",
              host: "proxy.example.com", basePath: "P",
              secretHex: "dd000102030405060708090a0b0c0d0e0f"),
        Valid(link: "tg://webproxy?server=b%C3%BCcher.example&secret=dd000102030405060708090a0b0c0d0e0f",
              host: "xn--bcher-kva.example", basePath: nil,
              secretHex: "dd000102030405060708090a0b0c0d0e0f"),
        Valid(link: "tg://webproxy?server=proxy.example.com:443&secret=\(plainHex)",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
        Valid(link: "tg://webproxy?server=proxy.example.com&port=443&secret=\(plainHex)",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
        Valid(link: "tg://webproxy?server=proxy.example.com&secret=AAECAwQFBgcICQoLDA0ODw",
              host: "proxy.example.com", basePath: nil, secretHex: "000102030405060708090a0b0c0d0e0f"),
        Valid(link: "tg://webproxy?server=proxy.example.com&secret=AAECAwQFBgcICQoLDA0ODw%3D%3D",
              host: "proxy.example.com", basePath: nil, secretHex: "000102030405060708090a0b0c0d0e0f"),
        Valid(link: "tg://webproxy?server=proxy.example.com&secret=+/8AAAAAAAAAAAAAAAAAAA",
              host: "proxy.example.com", basePath: nil, secretHex: "fbff0000000000000000000000000000"),
        Valid(link: " tg://webproxy?server=proxy.example.com&secret=\(plainHex)&unknown=1&flag&&x= \n",
              host: "proxy.example.com", basePath: nil, secretHex: plainHex),
    ]

    @Test(arguments: valid)
    func parses(_ vector: Valid) throws {
        let link = try ProxyLink(parsing: vector.link)
        #expect(link.host.name == vector.host)
        #expect(link.basePath?.value == vector.basePath)
        #expect(link.secret.hex == vector.secretHex)
    }

    @Test func rendersRootLinksWithHexSecret() throws {
        let link = try ProxyLink(
            host: RelayHost("proxy.example.com"), basePath: nil,
            secret: ProxySecret(parsing: "DD000102030405060708090A0B0C0D0E0F"))
        #expect(link.rendered(.deepLink)
            == "tg://webproxy?server=proxy.example.com&secret=dd000102030405060708090a0b0c0d0e0f")
        #expect(link.rendered(.shareLink)
            == "https://t.me/webproxy?server=proxy.example.com&secret=dd000102030405060708090a0b0c0d0e0f")
    }

    @Test func rendersBasePathLinksWithEncodedSlashAndMarkedSecret() throws {
        let link = try ProxyLink(
            host: RelayHost("proxy.example.com"), basePath: BasePath("two/segments"),
            secret: ProxySecret(parsing: Self.plainHex))
        #expect(link.rendered(.deepLink)
            == "tg://webproxy?server=proxy.example.com%2Ftwo%2Fsegments&secret=\(Self.marked)")
        #expect(link.rendered(.shareLink)
            == "https://t.me/webproxy?server=proxy.example.com%2Ftwo%2Fsegments&secret=\(Self.marked)")
    }

    @Test(arguments: [
        // Ports: WEB is HTTPS on 443 only.
        ("tg://webproxy?server=proxy.example.com:8443&secret=\(plainHex)",
         IdentityError.Code.unsupportedPort),
        ("tg://webproxy?server=proxy.example.com&port=8443&secret=\(plainHex)", .unsupportedPort),
        ("tg://webproxy?server=proxy.example.com&port=&secret=\(plainHex)", .unsupportedPort),
        ("tg://webproxy?server=proxy.example.com:&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=proxy.example.com:44x&secret=\(plainHex)", .invalidLink),
        // Duplicates, including the host= alias.
        ("tg://webproxy?server=a.example&server=a.example&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example&host=a.example&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example&secret=\(plainHex)&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example&port=443&port=443&secret=\(plainHex)", .invalidLink),
        // Fragments and user names.
        ("tg://webproxy?server=a.example&secret=\(plainHex)#frag", .invalidLink),
        ("https://t.me/webproxy?server=a.example&secret=\(plainHex)#", .invalidLink),
        ("https://user@t.me/webproxy?server=a.example&secret=\(plainHex)", .invalidLink),
        ("https://t.me@evil.example/webproxy?server=a.example&secret=\(plainHex)", .invalidLink),
        // Wrong scheme or target.
        ("tg://proxy?server=a.example&port=443&secret=\(plainHex)", .invalidLink),
        ("http://t.me/webproxy?server=a.example&secret=\(plainHex)", .invalidLink),
        ("https://t.me/proxy?server=a.example&secret=\(plainHex)", .invalidLink),
        ("https://t.me:443/webproxy?server=a.example&secret=\(plainHex)", .invalidLink),
        ("https://t.me/webproxy/?server=a.example&secret=\(plainHex)", .invalidLink),
        ("https://telegram.me/webproxy?server=a.example&secret=\(plainHex)", .invalidLink),
        ("webproxy?server=a.example&secret=\(plainHex)", .invalidLink),
        ("", .invalidLink),
        // Missing parameters.
        ("tg://webproxy", .invalidLink),
        ("tg://webproxy?", .invalidLink),
        ("tg://webproxy?secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example", .invalidLink),
        // Strict percent-decoding.
        ("tg://webproxy?server=a.example%2&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example%zz&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example%&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=b%C3cher.example&secret=\(plainHex)", .invalidLink),
        ("tg://webproxy?server=a.example&secret=\(plainHex)%FF", .invalidLink),
        // Bad host, path or secret inside an otherwise well-formed link.
        ("tg://webproxy?server=127.0.0.1&secret=\(plainHex)", .ipAddressHost),
        ("tg://webproxy?server=localhost&secret=\(plainHex)", .invalidHost),
        ("tg://webproxy?server=a.example%2Fdot.ted&secret=\(marked)", .invalidBasePath),
        ("tg://webproxy?server=a.example%2F%2Fx&secret=\(marked)", .invalidBasePath),
        ("tg://webproxy?server=a.example%2Fx%2F&secret=\(marked)", .invalidBasePath),
        ("tg://webproxy?server=a.example%2F&secret=\(marked)", .invalidBasePath),
        ("tg://webproxy?server=a.example%2F%20x&secret=\(marked)", .invalidBasePath),
        ("tg://webproxy?server=a.example%2Fp&secret=\(plainHex)", .invalidSecret),
        ("tg://webproxy?server=a.example&secret=\(marked)", .invalidSecret),
        ("tg://webproxy?server=a.example&secret=", .invalidSecret),
        ("tg://webproxy?server=a.example&secret=ee000102030405060708090a0b0c0d0e0f6578616d706c652e636f6d",
         .fakeTLSSecret),
    ])
    func rejects(_ input: String, _ code: IdentityError.Code) {
        let error = #expect(throws: IdentityError.self) { try ProxyLink(parsing: input) }
        #expect(error?.code == code)
        #expect(error?.message.contains(Self.plainHex) == false)
        #expect(error?.message.contains(Self.marked) == false)
    }

    @Test func descriptionShowsHostAndPathButNotTheSecret() throws {
        let link = try ProxyLink(
            parsing: "tg://webproxy?server=proxy.example.com%2FP&secret=\(Self.marked)")
        #expect(link.description == "ProxyLink(proxy.example.com/P, ProxySecret(plain, 16 bytes))")
        #expect(String(reflecting: link) == link.description)
        #expect(Mirror(reflecting: link).children.isEmpty)
    }

    @Test func localProxyLinkUsesTheSameSecretInLowercaseHex() throws {
        let padded = try ProxySecret(parsing: "3QABAgMEBQYHCAkKCwwNDg8")
        #expect(ProxyLink.localProxyLink(server: "127.0.0.1", port: 1443, secret: padded)
            == "tg://proxy?server=127.0.0.1&port=1443&secret=dd000102030405060708090a0b0c0d0e0f")
        let plain = try ProxySecret(parsing: Self.plainHex.uppercased())
        #expect(ProxyLink.localProxyLink(server: "::1", port: 65535, secret: plain)
            == "tg://proxy?server=%3A%3A1&port=65535&secret=\(Self.plainHex)")
    }

    /// parse(render(x)) == x over deterministic pseudo-random hosts, paths, secrets and forms.
    @Test func parseOfRenderIsIdentity() throws {
        var random = SplitMix64(seed: 0x5EED_1DE7)
        for _ in 0..<500 {
            let link = try ProxyLink(
                host: RelayHost(Self.randomHost(&random)),
                basePath: random.next() % 3 == 0 ? nil : BasePath(Self.randomPath(&random)),
                secret: ProxySecret(bytes: Self.randomSecretBytes(&random)))
            for form in ProxyLink.Form.allCases {
                let rendered = link.rendered(form)
                let parsed = try ProxyLink(parsing: rendered)
                #expect(parsed == link)
                #expect(parsed.rendered(form) == rendered)
            }
        }
    }

    /// Random mutations of valid links never trap: they parse or throw an IdentityError.
    @Test func mutatedLinksNeverTrap() throws {
        var random = SplitMix64(seed: 42)
        let base = Array("tg://webproxy?server=b%C3%BCcher.example%2Fp&secret=\(Self.marked)".utf8)
        let alphabet = Array("%/?#&=:@.-_0x7fFzZ \u{7F}".utf8) + [0xC3, 0xBC]
        var parsed = 0
        for _ in 0..<2000 {
            var bytes = base
            for _ in 0...(random.next() % 4) {
                let index = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[index] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: index)
                }
            }
            if (try? ProxyLink(parsing: String(decoding: bytes, as: UTF8.self))) != nil { parsed += 1 }
        }
        #expect(parsed > 0 && parsed < 2000)
    }

    static func randomHost(_ random: inout SplitMix64) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let inner = Array("abcdefghijklmnopqrstuvwxyz0123456789-")
        let labelCount = 2 + Int(random.next() % 3)
        return (0..<labelCount).map { _ in
            let length = 1 + Int(random.next() % 12)
            return String((0..<length).map { position in
                position == 0 || position == length - 1
                    ? letters[Int(random.next() % UInt64(letters.count))]
                    : inner[Int(random.next() % UInt64(inner.count))]
            })
        }.joined(separator: ".")
    }

    static func randomPath(_ random: inout SplitMix64) -> String {
        let first = Array("ABCxyz0129")
        let rest = Array("ABCxyz0129_-")
        return (0..<(1 + Int(random.next() % 3))).map { _ in
            let tail = (0..<Int(random.next() % 10)).map { _ in
                rest[Int(random.next() % UInt64(rest.count))]
            }
            return String(first[Int(random.next() % UInt64(first.count))]) + String(tail)
        }.joined(separator: "/")
    }

    static func randomSecretBytes(_ random: inout SplitMix64) -> [UInt8] {
        let body = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        return random.next() % 2 == 0 ? body : [0xDD] + body
    }
}
