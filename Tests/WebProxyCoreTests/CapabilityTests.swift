import Testing
@testable import WebProxyCore

@Suite struct CapabilityTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let secret: String
        let basePath: String?
        let capability: String
        var testDescription: String { "\(secret.prefix(2)) \(basePath ?? "(root)")" }
    }

    /// PROTOCOL.md §2.2: all four checked against the reference relay.
    static let contractVectors = [
        Vector(secret: "000102030405060708090a0b0c0d0e0f", basePath: nil,
               capability: "MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk"),
        Vector(secret: "dd000102030405060708090a0b0c0d0e0f", basePath: nil,
               capability: "IpJrt3e7sKtzPyoXy6w-Zj6GGEvsvclN66JzQEfPYLA"),
        Vector(secret: "000102030405060708090a0b0c0d0e0f", basePath: "dobry-cola-super-app",
               capability: "hHz99Xs93EN1j91G9gpNepXwGNNt5YdAFkEVk_LlqdQ"),
        Vector(secret: "dd000102030405060708090a0b0c0d0e0f", basePath: "dobry-cola-super-app",
               capability: "TGUkZaevsavLbHvlNWipnRoYxgzZ51ioWvbxgGT3wHo"),
    ]

    static func derive(_ secret: String, path: String?, host: String = "proxy.example.com") throws
        -> Capability
    {
        try Capability.derive(
            secret: ProxySecret(parsing: secret), host: RelayHost(host),
            basePath: path.map { try BasePath($0) })
    }

    @Test(arguments: contractVectors)
    func contractVector(_ vector: Vector) throws {
        let capability = try Self.derive(vector.secret, path: vector.basePath)
        #expect(capability.urlSafeValue == vector.capability)
        #expect(capability.urlSafeValue.utf8.count == Capability.encodedLength)
        #expect(capability.matches(vector.capability))
    }

    @Test func hexAndBase64SpellingsOfOneSecretGiveOneCapability() throws {
        let expected = "MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk"
        for spelling in ["000102030405060708090A0B0C0D0E0F", "AAECAwQFBgcICQoLDA0ODw",
                         "AAECAwQFBgcICQoLDA0ODw=="] {
            #expect(try Self.derive(spelling, path: nil).urlSafeValue == expected)
        }
    }

    @Test func unnormalizedHostAndPathGiveTheCanonicalCapability() throws {
        let capability = try Self.derive(
            "dd000102030405060708090a0b0c0d0e0f", path: " /dobry-cola-super-app/ ",
            host: " HTTPS://Proxy.Example.COM ")
        #expect(capability.urlSafeValue == "TGUkZaevsavLbHvlNWipnRoYxgzZ51ioWvbxgGT3wHo")
    }

    @Test func bridgePathAndAPIPrefixAtTheRoot() throws {
        let capability = try Self.derive("000102030405060708090a0b0c0d0e0f", path: nil)
        #expect(capability.bridgePath == "/?bridge=MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk")
        #expect(capability.apiPathPrefix == "/api/v1")
        #expect(capability.basePath == nil)
    }

    @Test func bridgePathAndAPIPrefixUnderABasePath() throws {
        let capability = try Self.derive("000102030405060708090a0b0c0d0e0f", path: "two/segments")
        #expect(capability.bridgePath == "/two/segments/?bridge=xKFU5idv-EcXTZ6Kd-5fEi5EVuVuIUADuBrVngIKbSI")
        #expect(capability.apiPathPrefix == "/two/segments/api/v1")
    }

    @Test func matchesIsExact() throws {
        let capability = try Self.derive("000102030405060708090a0b0c0d0e0f", path: nil)
        let value = "MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk"
        #expect(capability.matches(value))
        #expect(capability.matches(value[...]))
        #expect(!capability.matches("NHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPk"))
        #expect(!capability.matches("MHLEY5PmW1GWqJkSrlmJpvJUiLhBH_QKy6yKg8a0JPl"))
        #expect(!capability.matches(value.dropLast()))
        #expect(!capability.matches(value + "A"))
        #expect(!capability.matches(""))
    }

    @Test func equalityNeedsSameValueAndBasePath() throws {
        let root = try Self.derive("000102030405060708090a0b0c0d0e0f", path: nil)
        #expect(root == (try Self.derive("AAECAwQFBgcICQoLDA0ODw", path: nil)))
        #expect(root != (try Self.derive("dd000102030405060708090a0b0c0d0e0f", path: nil)))
        #expect(root != (try Self.derive("000102030405060708090a0b0c0d0e0f", path: "p")))
        #expect(root != (try Self.derive(
            "000102030405060708090a0b0c0d0e0f", path: nil, host: "other.example.com")))
    }

    @Test func descriptionAndMirrorHideTheValue() throws {
        let root = try Self.derive("000102030405060708090a0b0c0d0e0f", path: nil)
        let pathed = try Self.derive("000102030405060708090a0b0c0d0e0f", path: "p")
        #expect(root.description == "Capability(root)")
        #expect(pathed.description == "Capability(base path)")
        #expect(String(reflecting: root) == "Capability(root)")
        #expect(Mirror(reflecting: root).children.isEmpty)
        var dumped = ""
        dump(pathed, to: &dumped)
        #expect(!dumped.contains(pathed.urlSafeValue))
    }

    struct HMACCase: Sendable, CustomTestStringConvertible {
        let name: String
        let key: [UInt8]
        let message: [UInt8]
        let mac: String
        var testDescription: String { name }
    }

    /// RFC 4231 HMAC-SHA256 test cases 1, 2, 6 and 7 (6 and 7 use a key longer than a block).
    static let rfc4231 = [
        HMACCase(name: "case 1", key: [UInt8](repeating: 0x0B, count: 20), message: Array("Hi There".utf8),
                 mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        HMACCase(name: "case 2", key: Array("Jefe".utf8),
                 message: Array("what do ya want for nothing?".utf8),
                 mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        HMACCase(name: "case 6", key: [UInt8](repeating: 0xAA, count: 131),
                 message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                 mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        HMACCase(name: "case 7", key: [UInt8](repeating: 0xAA, count: 131),
                 message: Array(("This is a test using a larger than block-size key and a larger than "
                     + "block-size data. The key needs to be hashed before being used by the HMAC "
                     + "algorithm.").utf8),
                 mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test(arguments: rfc4231)
    func hmacSHA256MatchesRFC4231(_ vector: HMACCase) {
        let mac = Capability.withHMACSHA256(key: vector.key, message: vector.message) { mac in
            mac.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
                .joined()
        }
        #expect(mac == vector.mac)
    }
}
