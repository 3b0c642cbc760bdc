import Testing
import WebProxyCore
import WebProxyTestSupport

/// Seeded randomized decoding: random valid batches must round-trip, and random mutations of
/// them (flipped bytes, tampered lengths, truncations, concatenations, junk) must either
/// decode to frames that re-encode to exactly the input or fail with an error, never trap,
/// and give the same answer however the bytes are split.
@Suite struct FrameDecoderFuzzTests {
    typealias T = FrameTestSupport

    /// Batches per direction. A batch averages 4.5 frames and is thrown at the decoder four
    /// times (whole and split, before and after mutation): about 1.1 million frames in all
    /// in debug builds, where this runs in a few seconds.
    #if DEBUG
        static let batches = 30_000
    #else
        static let batches = 200_000
    #endif

    @Test(arguments: [
        (FrameDirection.clientToRelay, UInt64(0x5EED_0001)), (.relayToClient, 0x5EED_0002),
    ])
    func randomAndMutatedBatchesNeverTrapAndValidOnesRoundTrip(
        _ direction: FrameDirection, seed: UInt64
    ) throws {
        var fuzzer = Fuzzer(direction: direction, seed: seed)
        var framesThrown = 0
        var mutatedAccepted = 0
        var mutatedRejected = 0
        for _ in 0..<Self.batches {
            let frames = fuzzer.validBatch()
            let body = frames.encodedBatch()
            let decoded = try FrameBatch.decode(body[...], direction: direction)
            #expect(decoded == frames)
            let streamed = T.decode(fuzzer.split(body), direction: direction)
            #expect(streamed.frames == frames && streamed.error == nil)
            framesThrown += 2 * frames.count

            let mutated = fuzzer.mutate(body)
            let whole: Result<[Frame], FrameError> = Result { () throws(FrameError) in
                try FrameBatch.decode(mutated[...], direction: direction)
            }
            let split = T.decode(fuzzer.split(mutated), direction: direction)
            framesThrown += 2 * max(1, frames.count)
            switch whole {
            case .success(let accepted):
                mutatedAccepted += 1
                guard accepted.encodedBatch() == mutated, split.frames == accepted, split.error == nil else {
                    Issue.record("accepted mutation does not round-trip: \(T.hex(mutated.prefix(64)))")
                    return
                }
            case .failure(let error):
                mutatedRejected += 1
                // The streaming decoder has no batch rules, so an empty input is fine for it.
                let expected: FrameError? = error == .emptyBatch ? nil : error
                guard split.error == expected, mutated.starts(with: split.frames.encodedBatch()) else {
                    Issue.record("split decoding disagrees (\(error)): \(T.hex(mutated.prefix(64)))")
                    return
                }
            }
        }
        #expect(framesThrown >= 8 * Self.batches)
        // Both outcomes must be exercised in volume for the test to mean anything.
        #expect(mutatedAccepted > Self.batches / 20)
        #expect(mutatedRejected > Self.batches / 2)
    }
}

/// Builds random valid batches for one direction and mutates their encodings.
private struct Fuzzer {
    let direction: FrameDirection
    var rng: SplitMix64
    /// Random bytes that payloads and junk are sliced from, so no payload is built byte by byte.
    let pool: [UInt8]

    init(direction: FrameDirection, seed: UInt64) {
        self.direction = direction
        rng = SplitMix64(seed: seed)
        var pool: [UInt8] = []
        pool.reserveCapacity(8192)
        for _ in 0..<1024 {
            withUnsafeBytes(of: rng.next()) { pool.append(contentsOf: $0) }
        }
        self.pool = pool
    }

    mutating func below(_ bound: Int) -> Int { Int(rng.next(below: UInt64(bound))) }

    mutating func bytes(_ count: Int) -> ArraySlice<UInt8> {
        let start = below(pool.count - count + 1)
        return pool[start..<(start + count)]
    }

    mutating func stream() -> StreamID {
        let raw: UInt32 =
            switch below(4) {
            case 0: 1
            case 1: 0xFF_FFFF
            default: UInt32(below(0xFF_FFFF)) + 1
            }
        return StreamID(rawValue: raw) ?? .first
    }

    mutating func payloadLength() -> Int {
        below(8) == 0 ? below(3000) + 1 : below(40) + 1
    }

    mutating func frame(sentBy direction: FrameDirection) -> Frame {
        switch direction {
        case .clientToRelay:
            switch below(12) {
            case 0, 1: return .open(stream: stream())
            case 2, 3, 4, 5: return .data(stream: stream(), payload: bytes(payloadLength()))
            case 6: return .close(stream: stream())
            case 7, 8: return .window(stream: stream(), delta: UInt32(truncatingIfNeeded: rng.next()) | 1)
            case 9: return .hello(version: 1)
            default: return .pong(token: bytes(below(FrameLimits.maxPingToken + 1)))
            }
        case .relayToClient:
            switch below(12) {
            case 0, 1, 2, 3, 4: return .data(stream: stream(), payload: bytes(payloadLength()))
            case 5: return .close(stream: stream())
            case 6, 7: return .window(stream: stream(), delta: UInt32(truncatingIfNeeded: rng.next()) | 1)
            case 8: return .welcome
            case 9: return .bye(reason: bytes(below(24)))
            default: return .ping(token: bytes(below(FrameLimits.maxPingToken + 1)))
            }
        }
    }

    mutating func validBatch() -> [Frame] {
        validBatch(sentBy: direction)
    }

    mutating func validBatch(sentBy sender: FrameDirection) -> [Frame] {
        (0...below(8)).map { _ in frame(sentBy: sender) }
    }

    mutating func mutate(_ body: [UInt8]) -> [UInt8] {
        var out = body
        switch below(8) {
        case 0:  // flip bytes anywhere
            for _ in 0...below(3) {
                let index = below(out.count)
                out[index] ^= UInt8(below(255) + 1)
            }
        case 1:  // overwrite a byte of the first header
            out[below(Frame.headerLength)] = UInt8(truncatingIfNeeded: rng.next())
        case 2:  // tamper with the first length field: small steps and wild values
            let length = UInt32(truncatingIfNeeded: below(2) == 0 ? rng.next() : UInt64(below(80)))
            out.replaceSubrange(4..<8, with: FrameTestSupport.header(0, 0, length)[4..<8])
        case 3:  // truncate
            out.removeLast(below(out.count) + 1)
        case 4:  // concatenate another batch, possibly cut short or from the other side
            let tail = validBatch(sentBy: below(2) == 0 ? .clientToRelay : .relayToClient).encodedBatch()
            out += tail.prefix(below(2) == 0 ? tail.count : below(tail.count + 1))
        case 5:  // cut a range out of the middle
            let start = below(out.count)
            out.removeSubrange(start..<(start + below(out.count - start) + 1))
        case 6:  // junk with a plausible first byte
            let types: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x10, 0x11, 0x1F, 0x07, 0x00]
            out = [types[below(types.count)]] + bytes(below(40))
        default:  // a valid batch followed by a flipped copy of itself
            var copy = body
            copy[below(copy.count)] ^= 0x80
            out += copy
        }
        return out
    }

    /// `bytes` cut into 1 to 4 pieces at random offsets.
    mutating func split(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        let cuts = (0..<below(4)).map { _ in below(bytes.count + 1) }
        return FrameTestSupport.chunks(bytes, at: cuts)
    }
}
