import Testing
import WebProxyTestSupport
@testable import WebProxyCore

@Suite struct Base64URLTests {
    /// RFC 4648 section 10 vectors, unpadded, plus the two url-alphabet characters.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"),
        ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func urlAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    /// Only one spelling per byte string: no padding, no standard alphabet, zero trailing bits.
    @Test(arguments: ["Zh", "Zm9=", "Zg==", "Z", "Zm9vY", "+/8", "Zm 9v", "Zm9v\n", "Zm9v%"])
    func strictDecodingRejects(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func relaxedDecodingAcceptsEitherAlphabetAndExactPadding() {
        let decode = { (text: String) in
            Base64URL.decode(Array(text.utf8), alphabets: [.standard, .url], allowPadding: true)
        }
        #expect(decode("+/8=") == [0xFB, 0xFF])
        #expect(decode("-_8") == [0xFB, 0xFF])
        #expect(decode("Zg==") == Array("f".utf8))
        #expect(decode("Zg=") == nil)
        #expect(decode("Zm8==") == nil)
        #expect(decode("-/8") == nil)
        #expect(decode("=") == nil)
    }

    @Test func roundTripsEveryLengthUpTo64() {
        var random = SplitMix64(seed: 7)
        for length in 0...64 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let encoded = Base64URL.encode(bytes)
            #expect(encoded.utf8.count == (length * 4 + 2) / 3)
            #expect(Base64URL.decode(encoded) == bytes)
        }
    }
}
