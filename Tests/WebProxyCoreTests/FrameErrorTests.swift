import Testing
import WebProxyCore

@Suite struct FrameErrorTests {
    static let one = FrameTestSupport.stream(1)

    @Test func descriptionsNameTheProblemTypeAndStream() {
        let expected: [(FrameError, String)] = [
            (.unknownType(7), "unknown frame type 0x07"),
            (.unknownType(0xAB), "unknown frame type 0xab"),
            (.wrongDirection(.ping), "PING frame sent in a direction that does not allow it"),
            (.wrongStream(.pong, stream: Self.one), "PONG frame on stream 1: PONG belongs on stream 0"),
            (.wrongStream(.data, stream: .session), "DATA frame on stream 0: DATA needs a nonzero stream"),
            (.badPayload(.window, length: 3),
             "WINDOW frame with a malformed 3-byte payload: the payload must be a 4-byte delta"),
            (.badPayload(.hello, length: 1),
             "HELLO frame with a malformed 1-byte payload: the payload must be the single version byte 01"),
            (.badPayload(.pong, length: 65),
             "PONG frame with a malformed 65-byte payload: the token must be at most 64 bytes"),
            (.badPayload(.data, length: 0),
             "DATA frame with a malformed 0-byte payload: the payload must not be empty"),
            (.badPayload(.open, length: 1),
             "OPEN frame with a malformed 1-byte payload: the payload must be empty"),
            (.zeroWindow(stream: .max), "WINDOW frame on stream 16777215 returns zero credit"),
            (.payloadTooLarge(length: 1_048_577), "frame announces a 1048577-byte payload, over the payload limit"),
            (.truncated(bufferedBytes: 8), "incomplete frame at the end of the batch (8 bytes left over)"),
            (.tooManyFrames, "batch has more frames than the batch limit allows"),
            (.emptyBatch, "batch has no frames"),
        ]
        for (error, description) in expected {
            #expect(error.description == description)
        }
    }

    @Test func codeIsPublicForSwitching() {
        let error = FrameError.zeroWindow(stream: Self.one)
        switch error.code {
        case .zeroWindow(let stream): #expect(stream == Self.one)
        default: Issue.record("unexpected code \(error.code)")
        }
        #expect(FrameError.badPayload(.data, length: 0).code == .badPayload(.data, length: 0))
        #expect(FrameError.badPayload(.data, length: 0) != .badPayload(.data, length: 1))
        #expect(FrameError.tooManyFrames != .emptyBatch)
    }

    @Test func descriptionNeverShowsPayloadBytes() {
        // A rejected PONG token full of a recognisable marker must not leak into the message.
        let token = Array(repeating: UInt8(ascii: "Z"), count: 65)
        var decoder = FrameDecoder(direction: .clientToRelay)
        decoder.append(FrameTestSupport.header(0x06, 0, 65) + token)
        do {
            _ = try decoder.nextFrame()
            Issue.record("65-byte PONG accepted")
        } catch {
            #expect(!error.description.contains("ZZ"))
            #expect(!error.description.contains("5a5a"))
        }
    }
}
