import Testing
@testable import WebProxyCore

@Suite struct FrameEncodingTests {
    @Test func helloMatchesTheContract() {
        #expect(Frame.hello(version: 1).encoded == [0x10, 0, 0, 0, 0, 0, 0, 1, 1])
    }

    @Test func welcomeMatchesTheContract() {
        #expect(Frame.welcome.encoded == [0x11, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func windowAndDataCarryStreamAndLengthBigEndian() throws {
        let stream = try #require(StreamID(rawValue: 0x01_0203))
        #expect(Frame.window(stream: stream, delta: 0x0A0B_0C0D).encoded
            == [0x04, 0x01, 0x02, 0x03, 0, 0, 0, 4, 0x0A, 0x0B, 0x0C, 0x0D])
        #expect(Frame.data(stream: stream, payload: [0xAA, 0xBB][...]).encoded
            == [0x02, 0x01, 0x02, 0x03, 0, 0, 0, 2, 0xAA, 0xBB])
    }

    @Test func streamIDsAreTwentyFourBits() {
        #expect(StreamID(rawValue: 0xFF_FFFF) == .max)
        #expect(StreamID(rawValue: 0x100_0000) == nil)
    }
}
