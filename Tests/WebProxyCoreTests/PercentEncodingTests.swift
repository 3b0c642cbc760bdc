import Testing
import WebProxyCore

@Suite struct PercentEncodingTests {
    @Test func decodesEscapesOfEitherCase() {
        #expect(PercentEncoding.decodedBytes("a%2Fb%2fc%C3%BC+") == Array("a/b/cü+".utf8))
        #expect(PercentEncoding.decodedBytes("") == [])
    }

    @Test(arguments: ["%", "%4", "%4g", "a%zz", "%%41"])
    func refusesMalformedEscapes(text: String) {
        #expect(PercentEncoding.decodedBytes(text) == nil)
    }

    @Test func leavesUTF8CheckingToTheCaller() {
        #expect(PercentEncoding.decodedBytes("%FF%FE") == [0xFF, 0xFE])
    }

    @Test func encodesAllButUnreservedByDefault() {
        #expect(PercentEncoding.encoded("relay.example/tp ü~_-") == "relay.example%2Ftp%20%C3%BC~_-")
    }

    @Test func encodesOnlyWhatTheCallerRefuses() {
        #expect(PercentEncoding.encoded("a:b@c/%ü") { !"%@:/".utf8.contains($0) } == "a%3Ab%40c%2F%25ü")
    }

    @Test func roundTripsASCIIAndMultiByteText() {
        let text = String(decoding: (0...0x7F).map { UInt8($0) }, as: UTF8.self) + "ü€"
        #expect(PercentEncoding.decodedBytes(PercentEncoding.encoded(text)) == Array(text.utf8))
    }

    @Test func hexValueAcceptsHexDigitsOnly() {
        let values = (0...255).compactMap { PercentEncoding.hexValue(UInt8($0)).map { (UInt8($0), $0) } }
        #expect(values.count == 22)
        #expect(PercentEncoding.hexValue(UInt8(ascii: "F")) == 15 && PercentEncoding.hexValue(UInt8(ascii: "a")) == 10)
    }
}
