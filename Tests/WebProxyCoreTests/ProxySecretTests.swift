import Testing
@testable import WebProxyCore

@Suite struct ProxySecretTests {
    static let plainHex = "000102030405060708090a0b0c0d0e0f"
    static let paddedHex = "dd000102030405060708090a0b0c0d0e0f"

    @Test(arguments: [
        ("000102030405060708090a0b0c0d0e0f", plainHex),
        ("000102030405060708090A0B0C0D0E0F", plainHex),
        ("  000102030405060708090a0b0c0d0e0f\n", plainHex),
        ("AAECAwQFBgcICQoLDA0ODw", plainHex),
        ("AAECAwQFBgcICQoLDA0ODw==", plainHex),
        ("-_8AAAAAAAAAAAAAAAAAAA", "fbff0000000000000000000000000000"),
        ("+/8AAAAAAAAAAAAAAAAAAA==", "fbff0000000000000000000000000000"),
        ("+/8AAAAAAAAAAAAAAAAAAA", "fbff0000000000000000000000000000"),
        ("dd000102030405060708090a0b0c0d0e0f", paddedHex),
        ("DD000102030405060708090A0B0C0D0E0F", paddedHex),
        ("3QABAgMEBQYHCAkKCwwNDg8", paddedHex),
        ("3QABAgMEBQYHCAkKCwwNDg8=", paddedHex),
        // A 16-byte secret may start with any byte, dd and ee included: it is plain.
        ("dd0102030405060708090a0b0c0d0e0f", "dd0102030405060708090a0b0c0d0e0f"),
        ("ee0102030405060708090a0b0c0d0e0f", "ee0102030405060708090a0b0c0d0e0f"),
    ])
    func parses(_ input: String, _ hex: String) throws {
        let secret = try ProxySecret(parsing: input)
        #expect(secret.hex == hex)
        #expect(secret.bytes.count == hex.utf8.count / 2)
        #expect(secret.isPadded == (secret.bytes.count == 17))
        #expect(try ProxySecret(parsing: secret.hex) == secret)
    }

    @Test func paddedSecretKeepsItsDDByte() throws {
        let secret = try ProxySecret(parsing: Self.paddedHex)
        #expect(secret.isPadded)
        #expect(secret.bytes == [0xDD] + Array(0...15))
        #expect(secret != (try ProxySecret(parsing: Self.plainHex)))
    }

    @Test(arguments: [
        // ee (FakeTLS) secrets in hex, base64url and base64, with and without a domain.
        ("ee000102030405060708090a0b0c0d0e0f6578616d706c652e636f6d", IdentityError.Code.fakeTLSSecret),
        ("EE000102030405060708090A0B0C0D0E0F6578616D706C652E636F6D", .fakeTLSSecret),
        ("ee000102030405060708090a0b0c0d0e0f", .fakeTLSSecret),
        ("7gABAgMEBQYHCAkKCwwNDg9leGFtcGxlLmNvbQ", .fakeTLSSecret),
        ("7gABAgMEBQYHCAkKCwwNDg9leGFtcGxlLmNvbQ==", .fakeTLSSecret),
        // 17 bytes with another prefix, including the link marker.
        ("ab000102030405060708090a0b0c0d0e0f", .invalidSecret),
        ("708561944064fc730cbfa4473562d8ec59", .invalidSecret),
        ("cIVhlEBk_HMMv6RHNWLY7Fk", .invalidSecret),
        // Wrong lengths.
        ("", .invalidSecret),
        ("   ", .invalidSecret),
        ("000102030405060708090a0b0c0d0e", .invalidSecret),
        ("000102030405060708090a0b0c0d0e0f1", .invalidSecret),
        ("000102030405060708090a0b0c0d0e0f10", .invalidSecret),
        ("dd000102030405060708090a0b0c0d0e0f10", .invalidSecret),
        ("AAECAwQFBgcICQoLDA0O", .invalidSecret),
        ("AAECAwQFBgcICQoLDA0ODxA", .invalidSecret),
        // Not hex, not canonical base64, mixed alphabets, bad padding.
        ("zz0102030405060708090a0b0c0d0e0f", .invalidSecret),
        ("AAECAwQFBgcICQoLDA0ODx", .invalidSecret),
        ("-/8AAAAAAAAAAAAAAAAAAA", .invalidSecret),
        ("AAECAwQFBgcICQoLDA0ODw=", .invalidSecret),
        ("AAECAwQFBgcICQoLDA0ODw===", .invalidSecret),
        ("AAECAwQFBgcI CQoLDA0ODw", .invalidSecret),
        ("AAECAwQFBgcICQoLDA0ODw%3D%3D", .invalidSecret),
    ])
    func rejects(_ input: String, _ code: IdentityError.Code) {
        let error = #expect(throws: IdentityError.self) { try ProxySecret(parsing: input) }
        #expect(error?.code == code)
        let trimmed = input.trimmingWhitespace
        if !trimmed.isEmpty {
            #expect(error?.message.contains(trimmed) == false)
        }
    }

    @Test func fakeTLSMessageTellsTheUserWhatToAskFor() {
        let error = #expect(throws: IdentityError.self) {
            try ProxySecret(parsing: "ee000102030405060708090a0b0c0d0e0f6578616d706c652e636f6d")
        }
        #expect(error?.message.contains("plain or dd secret") == true)
        #expect(error?.message.contains("WEB link") == true)
    }

    @Test(arguments: [[UInt8](repeating: 1, count: 15), [UInt8](repeating: 1, count: 18), []])
    func rawBytesOfWrongLengthAreRejected(_ bytes: [UInt8]) {
        #expect(throws: IdentityError.self) { try ProxySecret(bytes: bytes) }
    }

    /// PROTOCOL.md §2.5 link-marker vector, both directions.
    @Test func basePathLinkMarkerVector() throws {
        let secret = try ProxySecret(basePathLinkValue: "cIVhlEBk_HMMv6RHNWLY7Fk")
        #expect(secret.hex == "8561944064fc730cbfa4473562d8ec59")
        #expect(!secret.isPadded)
        #expect(try ProxySecret(parsing: "8561944064fc730cbfa4473562d8ec59").basePathLinkValue
            == "cIVhlEBk_HMMv6RHNWLY7Fk")
    }

    @Test func basePathLinkMarkerWithDDSecret() throws {
        let secret = try ProxySecret(parsing: Self.paddedHex)
        #expect(secret.basePathLinkValue == "cN0AAQIDBAUGBwgJCgsMDQ4P")
        #expect(try ProxySecret(basePathLinkValue: "cN0AAQIDBAUGBwgJCgsMDQ4P") == secret)
        #expect(try ProxySecret(basePathLinkValue: "cIVhlEBk_HMMv6RHNWLY7Fk=") != secret)
    }

    @Test func markedValueOfAPlainSecretStartingWithZero() throws {
        #expect(try ProxySecret(basePathLinkValue: "cAABAgMEBQYHCAkKCwwNDg8").hex == Self.plainHex)
    }

    @Test(arguments: [
        "AAECAwQFBgcICQoLDA0ODw",           // plain base64url without the marker
        "8561944064fc730cbfa4473562d8ec59", // hex, not a marked value
        "cIVhlEBk+HMMv6RHNWLY7Fk",          // standard alphabet
        "cIVhlEBk_HMMv6RHNWLY7Fl",          // non-canonical trailing bits
        "cO4AAQIDBAUGBwgJCgsMDQ4P",         // marker + ee + 16 bytes (FakeTLS)
        "cA",                               // marker alone
        "",
    ])
    func rejectsMalformedMarkedValues(_ input: String) {
        #expect(throws: IdentityError.self) { try ProxySecret(basePathLinkValue: input) }
    }

    @Test func descriptionAndMirrorHideTheBytes() throws {
        let plain = try ProxySecret(parsing: "8561944064fc730cbfa4473562d8ec59")
        let padded = try ProxySecret(parsing: Self.paddedHex)
        #expect(plain.description == "ProxySecret(plain, 16 bytes)")
        #expect(padded.description == "ProxySecret(dd, 17 bytes)")
        #expect(String(reflecting: padded) == "ProxySecret(dd, 17 bytes)")
        #expect(Mirror(reflecting: plain).children.isEmpty)
        var dumped = ""
        dump(plain, to: &dumped)
        #expect(!dumped.contains("133"))  // 0x85, the first byte
        #expect(!dumped.contains("85619"))
    }
}
