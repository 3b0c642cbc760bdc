import Testing
import WebProxyCore

@testable import WebProxyDaemon

/// The probe against vectors computed once with `Tests/MTProxyClient/mtproxy_backend.py`
/// (its `derive_ciphers`, python `cryptography`), and its answer parser.
@Suite struct MTProxyProbeTests {
    static let plainSecret = "000102030405060708090a0b0c0d0e0f"
    static let paddedSecret = "dd00112233445566778899aabbccddeeff"
    /// Init bytes (i*7+3) & 0xff; the probe writes the tag and DC 2 over 56..<62.
    static let initBytes = (0..<64).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
    static let nonce = (0..<16).map { UInt8(0xA0 + $0) }
    static let messageID: UInt64 = 0x6500_0000_0000_0004

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// init (python `wire`) and 40 bytes 0..<40 encrypted after it (`up`), plus 24 bytes
    /// 100..<124 from the server's encryptor (`down`).
    static let vectors: [(secret: String, wire: String, up: String, down: String)] = [
        (plainSecret,
         "030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d141b222930373e454c535a61686f767d84da3a9233566c510a",
         "1205d3de00c8a50bd813e7120e32bc23ab2cbbd5701eb4862f166ee57b8631ea0379630b94e0632c",
         "4927dca08ad73adfb1957c9df5efc60043e05fff3dee22d0"),
        (paddedSecret,
         "030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d141b222930373e454c535a61686f767d848246bbf8b3fc398f",
         "1e504be535004ac652deafbbdb3ecbd457c6fbf3b47cd1e3866f2cb29cd602817eb41e111def9bf5",
         "8d42098bd3dd4c8b08adc89bde2277f8c465c78afbdbed3a"),
    ]

    @Test(arguments: 0..<2)
    func keyDerivationMatchesTheBackend(index: Int) throws {
        let vector = Self.vectors[index]
        let secret = try ProxySecret(parsing: vector.secret)
        let wire = Self.hex(vector.wire)
        let key = Array(secret.bytes.suffix(16))
        var plainInit = Self.initBytes
        plainInit.replaceSubrange(56..<62, with: Array(repeating: secret.isPadded ? 0xDD : 0xEE, count: 4) + [2, 0])
        let up = ObfuscatedInit.directionKeys(Array(plainInit[8..<56]), secretKey: key)
        let encryptor = try #require(AESCounterCipher(key: up.key, iv: up.iv))
        let encrypted = encryptor.apply(plainInit)
        #expect(Array(plainInit[0..<56]) + encrypted[56..<64] == wire)
        #expect(encryptor.apply(Array(0..<40)) == Self.hex(vector.up))
        // The server's direction, as the backend derives it from the wire init.
        let server = try #require(MTProxyServerSide(wireInit: wire, secret: secret))
        #expect(server.tag == Array(repeating: secret.isPadded ? 0xDD : 0xEE, count: 4))
        #expect(server.dc == 2)
        #expect(server.encryptor.apply(Array(100..<124)) == Self.hex(vector.down))
    }

    /// The whole opening (init + encrypted req_pq_multi packet), from the python backend's
    /// derivation; the dd vector carries 3 padding bytes 01 02 03.
    @Test func openingBytesMatchTheBackend() throws {
        let plain = try #require(MTProxyProbe(
            secret: try ProxySecret(parsing: Self.plainSecret), dc: 2, initBytes: Self.initBytes, nonce: Self.nonce,
            padding: [1, 2, 3], messageID: Self.messageID))
        #expect(plain.openingBytes == Self.hex(
            "030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d141b222930373e454c535a61686f767d84da3a9233566c510a3a04d1dd04cda30cd01aed19063fb22cbb3da9a3700ba291c6810a40c73a8d5687fde78f186cefa05713c18d"))
        let padded = try #require(MTProxyProbe(
            secret: try ProxySecret(parsing: Self.paddedSecret), dc: 2, initBytes: Self.initBytes, nonce: Self.nonce,
            padding: [1, 2, 3], messageID: Self.messageID))
        #expect(padded.openingBytes == Self.hex(
            "030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d141b222930373e454c535a61686f767d848246bbf8b3fc398f355149e631054cc15ad7a5b0d333c5db47d7e985b469c7f46ff84817206abe3dfa309a95916317794f8871702fa5a7"))
    }

    @Test func reqPQMultiLayout() {
        let message = MTProxyProbe.reqPQMulti(nonce: Self.nonce, messageID: Self.messageID)
        #expect(message.count == 40)
        #expect(message[0..<8].allSatisfy { $0 == 0 })
        #expect(Array(message[8..<16]) == [4, 0, 0, 0, 0, 0, 0, 0x65])
        #expect(Array(message[16..<20]) == [20, 0, 0, 0])
        #expect(Array(message[20..<24]) == [0xF1, 0x8E, 0x7E, 0xBE])
        #expect(Array(message[24..<40]) == Self.nonce)
        #expect(MTProxyProbe.messageID(unixSeconds: 0x6500_0000, fraction: 7) == 0x6500_0000_0000_0004)
    }

    /// A resPQ and an echo from the server side, fed at every split point.
    @Test(arguments: [plainSecret, paddedSecret])
    func answersAreRecognisedAtEverySplit(secretText: String) throws {
        let secret = try ProxySecret(parsing: secretText)
        for (reply, expected) in [(true, MTProxyProbe.Answer.resPQ(keyFingerprints: 1)), (false, .echoed)] {
            let template = try #require(MTProxyProbe(
                secret: secret, dc: -2, initBytes: Self.initBytes, nonce: Self.nonce, padding: [9, 9],
                messageID: Self.messageID))
            let server = try #require(MTProxyServerSide(wireInit: Array(template.openingBytes.prefix(64)), secret: secret))
            #expect(server.dc == -2)
            let request = server.decryptor.apply(Array(template.openingBytes.dropFirst(64)))
            let body = Array(request.dropFirst(4))
            let answer = server.packet(reply ? MTProxyServerSide.resPQ(nonce: Self.nonce) : body)
            for split in 0...answer.count {
                var probe = try #require(MTProxyProbe(
                    secret: secret, dc: -2, initBytes: Self.initBytes, nonce: Self.nonce, padding: [9, 9],
                    messageID: Self.messageID))
                let first = probe.receive(Array(answer[..<split]))
                let result = split == answer.count ? first : probe.receive(Array(answer[split...]))
                #expect(result == expected, "split \(split)")
            }
        }
    }

    /// A plain TCP echo backend (our test relay's) sends the opening back unchanged.
    @Test func aRawEchoIsRecognisedAtEverySplit() throws {
        let secret = try ProxySecret(parsing: Self.plainSecret)
        let opening = try #require(MTProxyProbe(
            secret: secret, dc: 2, initBytes: Self.initBytes, nonce: Self.nonce, padding: [],
            messageID: Self.messageID)).openingBytes
        for split in 0...opening.count {
            var probe = try #require(MTProxyProbe(
                secret: secret, dc: 2, initBytes: Self.initBytes, nonce: Self.nonce, padding: [],
                messageID: Self.messageID))
            let first = probe.receive(Array(opening[..<split]))
            let result = split == opening.count ? first : probe.receive(Array(opening[split...]))
            #expect(result == .echoed, "split \(split)")
        }
    }

    @Test func otherAnswersAreNamed() {
        let nonce = Self.nonce
        #expect(MTProxyProbe.parseAnswer([0x6C, 0xFE, 0xFF, 0xFF], nonce: nonce) == .transportError(-404))
        #expect(MTProxyProbe.parseAnswer(Array(repeating: 0, count: 10), nonce: nonce)
            == .unexpected("a 10-byte answer is too short for an MTProto message"))
        var encrypted = MTProxyServerSide.resPQ(nonce: nonce)
        encrypted[0] = 1
        #expect(MTProxyProbe.parseAnswer(encrypted, nonce: nonce)
            == .unexpected("the answer is not an unencrypted MTProto message (auth_key_id is not 0)"))
        #expect(MTProxyProbe.parseAnswer(MTProxyServerSide.resPQ(nonce: Array(repeating: 1, count: 16)), nonce: nonce)
            == .unexpected("the resPQ answers another nonce"))
        var truncated = MTProxyServerSide.resPQ(nonce: nonce)
        truncated.removeLast(8)
        truncated.replaceSubrange(16..<20, with: MTProxyProbe.littleEndian(UInt32(truncated.count - 20)))
        #expect(MTProxyProbe.parseAnswer(truncated, nonce: nonce)
            == .unexpected("the resPQ's pq or key fingerprints are malformed"))
        var overlong = MTProxyServerSide.resPQ(nonce: nonce)
        overlong.replaceSubrange(16..<20, with: [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(MTProxyProbe.parseAnswer(overlong, nonce: nonce)
            == .unexpected("the answer's message length 2147483647 does not fit its 84-byte packet"))
    }

    @Test func initsThatLookLikeOtherProtocolsAreRefused() {
        var bytes = Self.initBytes
        #expect(MTProxyProbe.isUsableInit(bytes))
        bytes[0] = 0xEF
        #expect(!MTProxyProbe.isUsableInit(bytes))
        bytes = Self.initBytes
        bytes.replaceSubrange(0..<4, with: Array("GET ".utf8))
        #expect(!MTProxyProbe.isUsableInit(bytes))
        bytes = Self.initBytes
        bytes.replaceSubrange(4..<8, with: [0, 0, 0, 0])
        #expect(!MTProxyProbe.isUsableInit(bytes))
        var generator = SystemRandomNumberGenerator()
        #expect(MTProxyProbe.isUsableInit(MTProxyProbe.randomInit(using: &generator)))
    }
}
