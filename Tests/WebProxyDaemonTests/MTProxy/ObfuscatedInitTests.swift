import Testing
import WebProxyCore

@testable import WebProxyDaemon

/// The init reader against inits made by Telethon 1.45 (`MTProxyIO.init_header`, which
/// draws fresh random bytes for each), so the vectors come from another implementation.
@Suite struct ObfuscatedInitTests {
    static let plainSecret = "0123456789abcdef0123456789abcdef"
    static let paddedSecret = "dd0123456789abcdef0123456789abcdef"

    static let telethonInits: [(secret: String, dc: Int16, transport: ObfuscatedInit.Transport, opening: String)] = [
        (plainSecret, 2, .intermediate,
         "1b37770c444e019b1d31b01e5bf585685757160789712a313f6f2baebca4ecc9de388346f38b442bd20edf19fc679ad9ff12a0b2344fc0b3a40d937b4ade504d"),
        (plainSecret, -2, .abridged,
         "38e80cfeff44c9b5412f6e7e094ec2c8fa697307c0a45959577570d7eeeeb78b2e886b3409ef69ea63b66943eb96ce6739870543804335223a36210d5edb1773"),
        (paddedSecret, -4, .paddedIntermediate,
         "9820fa868f669845a3c75f7501219df5dc7b1b309041de2836921d031562c76db274c190e14c346ba709376222aa129c07573407f9607d97f939d780fe1151b9"),
        (paddedSecret, 5, .paddedIntermediate,
         "8846ec908cf6fea2ea6804a02b35e597b52a7ade19e9b6499ef3d2582f8bc9df102da352a0c57940eaabbac4fb2e3b26e2d98177a288a57244ca976b40b71f32"),
        (plainSecret, 10002, .intermediate,
         "e46c2778e3b96fa31f8e07840dd9a98cf110b520767c190c2b01400df1649994fd114a660cb315935eb9004d1b2027cd2eb1a9090946004cda0e31f3088c68f5"),
    ]

    static func secret(_ hex: String) -> ProxySecret { try! ProxySecret(parsing: hex) }

    @Test func readsTheDCAndTransportOfTelethonInits() {
        for vector in Self.telethonInits {
            let read = ObfuscatedInit(MTProxyProbeTests.hex(vector.opening), secret: Self.secret(vector.secret))
            #expect(read == ObfuscatedInit(transport: vector.transport, dc: vector.dc))
            #expect(read?.isMediaCluster == (vector.dc < 0))
        }
    }

    @Test func readsOnlyTheFirst64BytesOfAConnection() {
        let vector = Self.telethonInits[1]
        let opening = MTProxyProbeTests.hex(vector.opening) + [UInt8](repeating: 0x5A, count: 100)
        #expect(ObfuscatedInit(opening[...], secret: Self.secret(vector.secret))?.dc == -2)
        #expect(ObfuscatedInit(opening.prefix(63), secret: Self.secret(vector.secret)) == nil)
    }

    @Test func anotherSecretOrNoInitReadsAsNothing() {
        let vector = Self.telethonInits[0]
        #expect(ObfuscatedInit(MTProxyProbeTests.hex(vector.opening), secret: Self.secret("ff" + vector.secret.dropFirst(2))) == nil)
        #expect(ObfuscatedInit(Array("GET / HTTP/1.1\r\nHost: example.org\r\n\r\n".utf8) + [UInt8](repeating: 0, count: 32), secret: Self.secret(vector.secret)) == nil)
    }

    @Test func readsTheDaemonsOwnProbeInit() throws {
        let secret = Self.secret(Self.paddedSecret)
        let probe = try #require(MTProxyProbe(
            secret: secret, dc: -3, initBytes: MTProxyProbeTests.initBytes, nonce: MTProxyProbeTests.nonce,
            padding: [], messageID: MTProxyProbeTests.messageID))
        #expect(ObfuscatedInit(probe.openingBytes, secret: secret) == ObfuscatedInit(transport: .paddedIntermediate, dc: -3))
    }
}
