import Testing
import WebProxyCore
import WebProxyTestSupport

/// One frame that a side may send, for the table-driven tests.
struct ValidFrameCase: Sendable, CustomTestStringConvertible {
    let frame: Frame
    let direction: FrameDirection
    var testDescription: String { "\(frame.type.name)(\(frame.stream)) \(direction)" }
}

/// Bytes that must fail with exactly `expected`.
struct InvalidFrameCase: Sendable, CustomTestStringConvertible {
    let name: String
    let direction: FrameDirection
    let bytes: [UInt8]
    let expected: FrameError
    var testDescription: String { "\(name) \(direction)" }
}

/// Where a frame sits among valid filler frames.
enum BatchPosition: CaseIterable, Sendable {
    case first, middle, last
}

@Suite struct FrameDecoderTests {
    typealias T = FrameTestSupport

    static let validFrames: [ValidFrameCase] = {
        let client: [Frame] = [
            .open(stream: .first), .open(stream: .max),
            .data(stream: .first, payload: [0x78][...]),
            .data(stream: T.stream(7), payload: T.pattern(1000)[...]),
            .data(stream: .max, payload: T.pattern(FrameLimits.clientDataChunk)[...]),
            .close(stream: .first), .close(stream: .max),
            .window(stream: .first, delta: 1), .window(stream: .max, delta: .max),
            .pong(token: [][...]), .pong(token: T.pattern(64)[...]),
            .hello(version: 1),
        ]
        let relay: [Frame] = [
            .data(stream: .first, payload: [0x78][...]),
            .data(stream: T.stream(3), payload: T.pattern(70_000)[...]),
            .close(stream: T.stream(2)), .close(stream: .max),
            .window(stream: T.stream(3), delta: 16), .window(stream: .max, delta: .max),
            .ping(token: [][...]), .ping(token: T.pattern(64)[...]),
            .bye(reason: [][...]), .bye(reason: Array("relay going away".utf8)[...]),
            .welcome,
        ]
        return client.map { ValidFrameCase(frame: $0, direction: .clientToRelay) }
            + relay.map { ValidFrameCase(frame: $0, direction: .relayToClient) }
    }()

    static let invalidFrames: [InvalidFrameCase] = {
        let one = T.stream(1)
        func c(_ name: String, _ bytes: [UInt8], _ expected: FrameError) -> InvalidFrameCase {
            InvalidFrameCase(name: name, direction: .clientToRelay, bytes: bytes, expected: expected)
        }
        func r(_ name: String, _ bytes: [UInt8], _ expected: FrameError) -> InvalidFrameCase {
            InvalidFrameCase(name: name, direction: .relayToClient, bytes: bytes, expected: expected)
        }
        let h = T.header
        var cases: [InvalidFrameCase] = []
        for direction in [FrameDirection.clientToRelay, .relayToClient] {
            for type: UInt8 in [0x00, 0x07, 0x0F, 0x12, 0x1E, 0x20, 0xFF] {
                cases.append(InvalidFrameCase(
                    name: "type \(type)", direction: direction,
                    bytes: h(type, 1, 0), expected: .unknownType(type)))
            }
        }
        cases += [
            c("PING from client", h(0x05, 0, 3) + [1, 2, 3], .wrongDirection(.ping)),
            c("PING from client on stream 1", h(0x05, 1, 0), .wrongDirection(.ping)),
            c("WELCOME from client", h(0x11, 0, 0), .wrongDirection(.welcome)),
            c("BYE from client", h(0x1F, 0, 0), .wrongDirection(.bye)),
            c("OPEN on stream 0", h(0x01, 0, 0), .wrongStream(.open, stream: .session)),
            c("OPEN with payload", h(0x01, 2, 1) + [0x78], .badPayload(.open, length: 1)),
            c("DATA on stream 0", h(0x02, 0, 1) + [0x78], .wrongStream(.data, stream: .session)),
            c("empty DATA", h(0x02, 1, 0), .badPayload(.data, length: 0)),
            c("CLOSE on stream 0", h(0x03, 0, 0), .wrongStream(.close, stream: .session)),
            c("CLOSE with payload", h(0x03, 1, 2) + [0, 0], .badPayload(.close, length: 2)),
            c("WINDOW on stream 0", h(0x04, 0, 4) + [0, 0, 0, 1], .wrongStream(.window, stream: .session)),
            c("WINDOW of 3 bytes", h(0x04, 2, 3) + [0, 0, 1], .badPayload(.window, length: 3)),
            c("WINDOW of 5 bytes", h(0x04, 2, 5) + [0, 0, 0, 0, 1], .badPayload(.window, length: 5)),
            c("empty WINDOW", h(0x04, 2, 0), .badPayload(.window, length: 0)),
            c("zero WINDOW", h(0x04, 1, 4) + [0, 0, 0, 0], .zeroWindow(stream: one)),
            c("PONG on stream 1", h(0x06, 1, 1) + [0x78], .wrongStream(.pong, stream: one)),
            c("PONG of 65 bytes", h(0x06, 0, 65) + T.pattern(65), .badPayload(.pong, length: 65)),
            c("HELLO 02", h(0x10, 0, 1) + [0x02], .badPayload(.hello, length: 1)),
            c("HELLO 00", h(0x10, 0, 1) + [0x00], .badPayload(.hello, length: 1)),
            c("empty HELLO", h(0x10, 0, 0), .badPayload(.hello, length: 0)),
            c("HELLO of 2 bytes", h(0x10, 0, 2) + [1, 1], .badPayload(.hello, length: 2)),
            c("HELLO on stream 1", h(0x10, 1, 1) + [1], .wrongStream(.hello, stream: one)),
            c("DATA over 1 MiB", h(0x02, 1, 0x10_0001), .payloadTooLarge(length: 0x10_0001)),
            c("PONG announcing 4 GiB", h(0x06, 0, .max), .payloadTooLarge(length: 0xFFFF_FFFF)),
            r("OPEN from relay", h(0x01, 1, 0), .wrongDirection(.open)),
            r("PONG from relay", h(0x06, 0, 0), .wrongDirection(.pong)),
            r("HELLO from relay", h(0x10, 0, 1) + [1], .wrongDirection(.hello)),
            r("DATA on stream 0", h(0x02, 0, 1) + [0x78], .wrongStream(.data, stream: .session)),
            r("empty DATA", h(0x02, 3, 0), .badPayload(.data, length: 0)),
            r("CLOSE on stream 0", h(0x03, 0, 0), .wrongStream(.close, stream: .session)),
            r("CLOSE with payload", h(0x03, 1, 1) + [0], .badPayload(.close, length: 1)),
            r("WINDOW on stream 0", h(0x04, 0, 4) + [0, 0, 0, 1], .wrongStream(.window, stream: .session)),
            r("WINDOW of 2 bytes", h(0x04, 1, 2) + [0, 1], .badPayload(.window, length: 2)),
            r("zero WINDOW", h(0x04, 0xFF_FFFF, 4) + [0, 0, 0, 0], .zeroWindow(stream: .max)),
            r("PING on stream 1", h(0x05, 1, 0), .wrongStream(.ping, stream: one)),
            r("PING of 65 bytes", h(0x05, 0, 65) + T.pattern(65), .badPayload(.ping, length: 65)),
            r("WELCOME with payload", h(0x11, 0, 1) + [0], .badPayload(.welcome, length: 1)),
            r("WELCOME on stream 1", h(0x11, 1, 0), .wrongStream(.welcome, stream: one)),
            r("BYE on stream 2", h(0x1F, 2, 0), .wrongStream(.bye, stream: T.stream(2))),
            r("DATA over 1 MiB", h(0x02, 1, 0x10_0001), .payloadTooLarge(length: 0x10_0001)),
            r("BYE announcing 4 GiB", h(0x1F, 0, .max), .payloadTooLarge(length: 0xFFFF_FFFF)),
        ]
        return cases
    }()

    /// Valid frames a side may send, used around the frame under test.
    static func filler(_ direction: FrameDirection) -> [Frame] {
        switch direction {
        case .clientToRelay:
            [.open(stream: T.stream(5)), .data(stream: T.stream(5), payload: [0x61, 0x62][...])]
        case .relayToClient:
            [.window(stream: T.stream(5), delta: 2), .data(stream: T.stream(5), payload: [0x61, 0x62][...])]
        }
    }

    static func place<E>(_ item: [E], among filler: [E], at position: BatchPosition) -> [E] {
        switch position {
        case .first: item + filler
        case .middle: [filler[0]] + item + filler.dropFirst()
        case .last: filler + item
        }
    }

    @Test(arguments: validFrames, BatchPosition.allCases)
    func validFrameDecodesInEveryPosition(_ valid: ValidFrameCase, position: BatchPosition) throws {
        let frames = Self.place([valid.frame], among: Self.filler(valid.direction), at: position)
        let body = frames.encodedBatch()
        #expect(try FrameBatch.decode(body[...], direction: valid.direction) == frames)
        let streamed = T.decode(T.chunks(body, at: [3, body.count / 2]), direction: valid.direction)
        #expect(streamed.frames == frames)
        #expect(streamed.error == nil)
    }

    @Test(arguments: invalidFrames, BatchPosition.allCases)
    func invalidFrameFailsInEveryPosition(_ invalid: InvalidFrameCase, position: BatchPosition) {
        let filler = Self.filler(invalid.direction)
        let before: [Frame] =
            switch position {
            case .first: []
            case .middle: [filler[0]]
            case .last: filler
            }
        let after = Array(filler.dropFirst(before.count))
        let body = before.encodedBatch() + invalid.bytes + after.encodedBatch()
        #expect(throws: invalid.expected) {
            try FrameBatch.decode(body[...], direction: invalid.direction)
        }
        // The decoder hands out every frame before the bad one, then fails exactly.
        let streamed = T.decode([body[...]], direction: invalid.direction)
        #expect(streamed.frames == before)
        #expect(streamed.error == invalid.expected)
    }

    @Test func eachDirectionRejectsTheOthersSessionFrames() {
        #expect(throws: FrameError.wrongDirection(.welcome)) {
            try FrameBatch.decode(Frame.welcome.encoded[...], direction: .clientToRelay)
        }
        #expect(throws: FrameError.wrongDirection(.hello)) {
            try FrameBatch.decode(Frame.hello(version: 1).encoded[...], direction: .relayToClient)
        }
    }

    // MARK: split points

    static func mixedBatch(_ direction: FrameDirection) -> [Frame] {
        let s = T.stream
        switch direction {
        case .clientToRelay:
            return [
                .hello(version: 1), .open(stream: s(1)), .data(stream: s(1), payload: T.pattern(37)[...]),
                .pong(token: [][...]), .window(stream: s(1), delta: 65536), .open(stream: .max),
                .data(stream: .max, payload: [0x00][...]), .pong(token: T.pattern(64)[...]),
                .close(stream: s(1)), .close(stream: .max),
            ]
        case .relayToClient:
            return [
                .welcome, .window(stream: s(1), delta: 16), .data(stream: s(1), payload: T.pattern(16)[...]),
                .ping(token: T.pattern(8)[...]), .ping(token: [][...]), .data(stream: s(2), payload: T.pattern(90)[...]),
                .close(stream: s(2)), .window(stream: s(1), delta: .max), .bye(reason: Array("bye".utf8)[...]),
            ]
        }
    }

    @Test(arguments: [FrameDirection.clientToRelay, .relayToClient])
    func everySplitPointGivesTheSameFrames(_ direction: FrameDirection) throws {
        let frames = Self.mixedBatch(direction)
        let body = frames.encodedBatch()
        #expect(try FrameBatch.decode(body[...], direction: direction) == frames)
        for split in 0...body.count {
            let result = T.decode(T.chunks(body, at: [split]), direction: direction)
            #expect(result.frames == frames, "split at \(split)")
            #expect(result.error == nil, "split at \(split)")
        }
        for first in stride(from: 0, through: body.count, by: 7) {
            for second in first...body.count {
                let result = T.decode(T.chunks(body, at: [first, second]), direction: direction)
                #expect(result.frames == frames, "splits at \(first), \(second)")
            }
        }
        let byteByByte = T.decode(body.indices.map { body[$0...$0] }, direction: direction)
        #expect(byteByByte.frames == frames)
        #expect(byteByByte.error == nil)
    }

    @Test(arguments: [FrameDirection.clientToRelay, .relayToClient])
    func everySplitPointGivesTheSameError(_ direction: FrameDirection) {
        let frames = Self.mixedBatch(direction)
        let bad = T.header(0x04, 9, 4) + [0, 0, 0, 0]
        let body = frames.encodedBatch() + bad + Self.filler(direction).encodedBatch()
        for split in 0...body.count {
            let result = T.decode(T.chunks(body, at: [split]), direction: direction)
            #expect(result.frames == frames, "split at \(split)")
            #expect(result.error == .zeroWindow(stream: T.stream(9)), "split at \(split)")
        }
    }

    // MARK: limits

    @Test func fourThousandNinetySixFramesAreAcceptedAndOneMoreIsNot() throws {
        let frame = Frame.data(stream: .first, payload: [0x53][...])
        let limit = Array(repeating: frame, count: FrameLimits.maxFramesPerBatch)
        let decoded = try FrameBatch.decode(limit.encodedBatch()[...], direction: .clientToRelay)
        #expect(decoded.count == 4096)
        #expect(decoded.allSatisfy { $0 == frame })
        let over = (limit + [frame]).encodedBatch()
        #expect(throws: FrameError.tooManyFrames) {
            try FrameBatch.decode(over[...], direction: .clientToRelay)
        }
        // Bytes after the last allowed frame are not decoded: a partial frame counts too.
        let overByAByte = limit.encodedBatch() + [0x02]
        #expect(throws: FrameError.tooManyFrames) {
            try FrameBatch.decode(overByAByte[...], direction: .clientToRelay)
        }
    }

    @Test func callerChosenFrameLimit() throws {
        let frames = Self.filler(.relayToClient)
        let body = frames.encodedBatch()
        #expect(try FrameBatch.decode(body[...], direction: .relayToClient, maxFrames: 2) == frames)
        #expect(throws: FrameError.tooManyFrames) {
            try FrameBatch.decode(body[...], direction: .relayToClient, maxFrames: 1)
        }
        #expect(throws: FrameError.tooManyFrames) {
            try FrameBatch.decode(body[...], direction: .relayToClient, maxFrames: 0)
        }
    }

    @Test(arguments: [FrameDirection.clientToRelay, .relayToClient])
    func oneMebibytePayloadIsAccepted(_ direction: FrameDirection) throws {
        let frame = Frame.data(stream: .max, payload: T.pattern(FrameLimits.maxPayload)[...])
        let body = frame.encoded
        #expect(try FrameBatch.decode(body[...], direction: direction) == [frame])
        var decoder = FrameDecoder(direction: direction)
        decoder.append(body[..<(body.count - 1)])
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == body.count - 1)
        decoder.append(body[(body.count - 1)...])
        #expect(try decoder.nextFrame() == frame)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test(arguments: [UInt32(0x10_0001), 0x7FFF_FFFF, 0xFFFF_FFFF])
    func oversizedPayloadFailsFromTheHeaderAlone(_ length: UInt32) throws {
        var decoder = FrameDecoder(direction: .clientToRelay)
        let header = T.header(0x02, 1, length)
        decoder.append(header[..<7])
        #expect(try decoder.nextFrame() == nil)
        decoder.append(header[7...])
        #expect(throws: FrameError.payloadTooLarge(length: Int(length))) { try decoder.nextFrame() }
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func callerChosenPayloadLimit() throws {
        let small = Frame.data(stream: .first, payload: T.pattern(16)[...])
        var decoder = FrameDecoder(direction: .relayToClient, maxPayload: 16)
        decoder.append(small.encoded)
        #expect(try decoder.nextFrame() == small)
        decoder.append(T.header(0x02, 1, 17))
        #expect(throws: FrameError.payloadTooLarge(length: 17)) { try decoder.nextFrame() }

        var nothingAllowed = FrameDecoder(direction: .clientToRelay, maxPayload: -5)
        nothingAllowed.append(Frame.open(stream: .first).encoded)
        #expect(try nothingAllowed.nextFrame() == .open(stream: .first))
        nothingAllowed.append(T.header(0x02, 1, 1) + [0])
        #expect(throws: FrameError.payloadTooLarge(length: 1)) { try nothingAllowed.nextFrame() }
    }

    // MARK: end of body, errors, storage

    @Test func emptyBatchIsRejected() {
        #expect(throws: FrameError.emptyBatch) { try FrameBatch.decode([], direction: .clientToRelay) }
        let body = Frame.welcome.encoded
        #expect(throws: FrameError.emptyBatch) {
            try FrameBatch.decode(body[8...], direction: .relayToClient)
        }
    }

    @Test(arguments: [1, 3, 7, 8, 9, 16, 31])
    func truncatedLastFrameIsRejected(_ kept: Int) throws {
        let frames = Self.mixedBatch(.clientToRelay)
        let last = Frame.data(stream: .first, payload: T.pattern(24)[...]).encoded
        let body = frames.encodedBatch() + last[..<kept]
        #expect(throws: FrameError.truncated(bufferedBytes: kept)) {
            try FrameBatch.decode(body[...], direction: .clientToRelay)
        }
        var decoder = FrameDecoder(direction: .clientToRelay)
        decoder.append(body)
        for frame in frames {
            #expect(try decoder.nextFrame() == frame)
        }
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == kept)
        #expect(throws: FrameError.truncated(bufferedBytes: kept)) { try decoder.finish() }
    }

    @Test func decoderCarriesOnAcrossBodiesAfterAGoodFinish() throws {
        var decoder = FrameDecoder(direction: .relayToClient)
        try decoder.finish()
        for frame in Self.mixedBatch(.relayToClient) {
            decoder.append(frame.encoded)
            #expect(try decoder.nextFrame() == frame)
            #expect(try decoder.nextFrame() == nil)
            try decoder.finish()
        }
    }

    @Test func firstErrorIsFinal() {
        var decoder = FrameDecoder(direction: .clientToRelay)
        decoder.append(T.header(0x07, 1, 0) + Frame.open(stream: .first).encoded)
        #expect(throws: FrameError.unknownType(7)) { try decoder.nextFrame() }
        #expect(decoder.bufferedByteCount == 0)
        decoder.append(Frame.open(stream: .first).encoded)
        #expect(decoder.bufferedByteCount == 0)
        #expect(throws: FrameError.unknownType(7)) { try decoder.nextFrame() }
        #expect(throws: FrameError.unknownType(7)) { try decoder.finish() }

        var truncated = FrameDecoder(direction: .clientToRelay)
        truncated.append([0x01, 0x00])
        #expect(throws: FrameError.truncated(bufferedBytes: 2)) { try truncated.finish() }
        truncated.append(Frame.open(stream: .first).encoded)
        #expect(throws: FrameError.truncated(bufferedBytes: 2)) { try truncated.nextFrame() }
    }

    @Test func headerIsCheckedBeforeItsPayloadArrives() {
        var decoder = FrameDecoder(direction: .clientToRelay)
        decoder.append(T.header(0x06, 0, 65))
        #expect(throws: FrameError.badPayload(.pong, length: 65)) { try decoder.nextFrame() }
        var relay = FrameDecoder(direction: .relayToClient)
        relay.append(T.header(0x01, 1, 0))
        #expect(throws: FrameError.wrongDirection(.open)) { try relay.nextFrame() }
    }

    @Test func batchPayloadsShareTheBodyStorage() throws {
        let body = Self.mixedBatch(.relayToClient).encodedBatch()
        let frames = try FrameBatch.decode(body[...], direction: .relayToClient)
        var offset = 0
        for frame in frames {
            offset += Frame.headerLength
            if case .data(_, let payload) = frame {
                #expect(T.address(of: payload) == T.address(of: body[...]).map { $0 + offset })
                #expect(payload.startIndex == offset)
            }
            offset += frame.payloadLength
        }
        #expect(offset == body.count)
    }

    @Test func largeFrameFedByteByByteStaysLinear() throws {
        // A decoder that copied its buffer on every append would need ~2^35 byte copies here.
        let frame = Frame.data(stream: .first, payload: T.pattern(256 << 10)[...])
        let held = Frame.data(stream: T.stream(2), payload: [1][...])
        let body = held.encoded + frame.encoded
        var decoder = FrameDecoder(direction: .clientToRelay)
        var decoded: [Frame] = []
        for index in body.indices {
            decoder.append(body[index...index])
            if let next = try decoder.nextFrame() { decoded.append(next) }
        }
        #expect(decoded == [held, frame])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func longStreamWithRetainedPayloadsDecodesEveryFrame() throws {
        var rng = SplitMix64(seed: 0xF4A3_E5D1)
        var frames: [Frame] = []
        for index in 0..<20_000 {
            let size = Int(rng.next(below: 300)) + 1
            frames.append(.data(stream: T.stream(UInt32(index % 128 + 1)), payload: T.pattern(size)[...]))
        }
        let body = frames.encodedBatch()
        var decoder = FrameDecoder(direction: .relayToClient)
        var decoded: [Frame] = []
        decoded.reserveCapacity(frames.count)
        var position = 0
        while position < body.count {
            let end = min(body.count, position + Int(rng.next(below: 700)) + 1)
            decoder.append(body[position..<end])
            position = end
            while let frame = try decoder.nextFrame() { decoded.append(frame) }
        }
        try decoder.finish()
        #expect(decoded == frames)
    }
}

/// Helpers shared by the frame tests.
enum FrameTestSupport {
    static func stream(_ raw: UInt32) -> StreamID {
        guard let id = StreamID(rawValue: raw) else { preconditionFailure("test stream id over 24 bits") }
        return id
    }

    /// A raw header, for frames the encoder refuses to produce.
    static func header(_ type: UInt8, _ stream: UInt32, _ length: UInt32) -> [UInt8] {
        [
            type, UInt8(truncatingIfNeeded: stream >> 16), UInt8(truncatingIfNeeded: stream >> 8),
            UInt8(truncatingIfNeeded: stream), UInt8(truncatingIfNeeded: length >> 24),
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length),
        ]
    }

    /// `count` bytes `0, 1, 2, ...` modulo 256.
    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0) }
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.filter { !$0.isWhitespace }.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `bytes` cut at the given offsets, as slices of the original array.
    static func chunks(_ bytes: [UInt8], at cuts: [Int]) -> [ArraySlice<UInt8>] {
        var out: [ArraySlice<UInt8>] = []
        var start = 0
        for cut in cuts.sorted() + [bytes.count] {
            out.append(bytes[start..<max(start, cut)])
            start = max(start, cut)
        }
        return out
    }

    /// Feeds `chunks` to one decoder, draining after each, then finishes: the frames it
    /// produced and the error that stopped it, if any.
    static func decode(
        _ chunks: [ArraySlice<UInt8>], direction: FrameDirection
    ) -> (frames: [Frame], error: FrameError?) {
        var decoder = FrameDecoder(direction: direction)
        var frames: [Frame] = []
        do throws(FrameError) {
            for chunk in chunks {
                decoder.append(chunk)
                while let frame = try decoder.nextFrame() { frames.append(frame) }
            }
            try decoder.finish()
            return (frames, nil)
        } catch {
            return (frames, error)
        }
    }

    static func address(of bytes: ArraySlice<UInt8>) -> UnsafePointer<UInt8>? {
        bytes.withUnsafeBufferPointer { $0.baseAddress }
    }
}

extension SplitMix64 {
    /// A value in `0..<bound`; `bound` must be positive.
    mutating func next(below bound: UInt64) -> UInt64 {
        bound.multipliedFullWidth(by: next()).high
    }
}
