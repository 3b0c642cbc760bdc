import Testing
@testable import WebProxyNet

@Suite struct WebSocketFrameCodecTests {
    // RFC 6455 section 5.7 examples.
    static let unmaskedHello = hexBytes("810548656c6c6f")
    static let maskedHello = hexBytes("818537fa213d7f9f4d5158")
    static let fragmentedHello = hexBytes("010348656c 80026c6f")
    static let unmaskedPing = hexBytes("890548656c6c6f")
    static let maskedPong = hexBytes("8a8537fa213d7f9f4d5158")
    static let hello = Array("Hello".utf8)

    @Test func encodesTheRFCExamples() {
        #expect(frameBytes(.text, Self.hello) == Self.unmaskedHello)
        #expect(frameBytes(.text, Self.hello, maskingKey: 0x37FA_213D) == Self.maskedHello)
        #expect(
            frameBytes(.text, Array("Hel".utf8), fin: false) + frameBytes(.continuation, Array("lo".utf8))
                == Self.fragmentedHello)
        #expect(frameBytes(.ping, Self.hello) == Self.unmaskedPing)
        #expect(frameBytes(.pong, Self.hello, maskingKey: 0x37FA_213D) == Self.maskedPong)
        let medium = [UInt8](repeating: 0xAB, count: 256)
        #expect(frameBytes(.binary, medium) == hexBytes("827e0100") + medium)
        let large = [UInt8](repeating: 0xCD, count: 65536)
        #expect(frameBytes(.binary, large) == hexBytes("827f0000000000010000") + large)
        #expect(frameBytes(.binary, [UInt8](repeating: 0, count: 125)).prefix(2) == [0x82, 0x7D])
        #expect(frameBytes(.binary, [UInt8](repeating: 0, count: 126)).prefix(4) == [0x82, 0x7E, 0x00, 0x7E])
        #expect(frameBytes(.binary, [UInt8](repeating: 0, count: 65535)).prefix(4) == [0x82, 0x7E, 0xFF, 0xFF])
    }

    @Test func parsesTheRFCExamplesAtEverySplit() throws {
        let medium = [UInt8](repeating: 0xAB, count: 256)
        let large = [UInt8](repeating: 0xCD, count: 65536)
        let clientInput =
            Self.unmaskedHello + Self.fragmentedHello + Self.unmaskedPing + hexBytes("827e0100") + medium
            + hexBytes("827f0000000000010000") + large
        let expected = [
            WebSocketFrame(opcode: .text, payload: Self.hello),
            WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8)),
            WebSocketFrame(opcode: .continuation, payload: Array("lo".utf8)),
            WebSocketFrame(opcode: .ping, payload: Self.hello),
            WebSocketFrame(opcode: .binary, payload: medium),
            WebSocketFrame(opcode: .binary, payload: large),
        ]
        let splitPoints = Array(0..<300) + Array((clientInput.count - 300)..<clientInput.count)
        for point in splitPoints {
            var parser = WebSocketFrameParser(role: .client, maxDataPayload: 1 << 20)
            var frames: [WebSocketFrame] = []
            for piece in [clientInput[..<point], clientInput[point...]] {
                parser.receive(piece)
                while let frame = try parser.next() { frames.append(frame) }
            }
            #expect(frames == expected, "split at \(point)")
        }
        var server = WebSocketFrameParser(role: .server, maxDataPayload: 125)
        var frames: [WebSocketFrame] = []
        for byte in Self.maskedHello + Self.maskedPong {
            server.receive([byte])
            while let frame = try server.next() { frames.append(frame) }
        }
        #expect(frames == [WebSocketFrame(opcode: .text, payload: Self.hello), WebSocketFrame(opcode: .pong, payload: Self.hello)])
    }

    /// A payload whose header came in earlier is filled straight from later reads; every
    /// chunk size, through both the raw-buffer and the array entry points.
    @Test(arguments: [1, 3, 7, 64, 1000, 70_000])
    func assemblesPayloadsSpanningManyReads(chunk: Int) throws {
        let payloads = [[UInt8](repeating: 0x11, count: 300), Self.hello, (0..<70_000).map { UInt8(truncatingIfNeeded: $0) }]
        let wire = payloads.enumerated().flatMap { index, payload in
            frameBytes(.binary, payload, maskingKey: 0x37FA_213D &+ UInt32(index))
        }
        var parser = WebSocketFrameParser(role: .server, maxDataPayload: 1 << 20)
        var frames: [WebSocketFrame] = []
        var offset = 0
        while offset < wire.count {
            let piece = wire[offset..<min(wire.count, offset + chunk)]
            if (offset / chunk).isMultiple(of: 2) {
                piece.withUnsafeBytes { parser.receive($0) }
            } else {
                parser.receive(Array(piece))
            }
            offset += piece.count
            while let frame = try parser.next() { frames.append(frame) }
        }
        #expect(frames == payloads.map { WebSocketFrame(opcode: .binary, payload: $0) })
        #expect(!parser.hasPartialFrame)
    }

    @Test(arguments: WebSocketFixture.recorded.map(\.step))
    func reproducesEveryRecordedFrameHeader(step: Int) throws {
        let frame = try #require(WebSocketFixture.recorded.first { $0.step == step })
        let opcode = try #require(WebSocketOpcode(rawValue: frame.opcode))
        let payload = frame.payloadBytes
        let key: UInt32? = frame.direction == .clientToRelay ? fixtureMaskingKey : nil
        let wire = frameBytes(opcode, payload, maskingKey: key)
        let header = hexBytes(frame.header)
        #expect(Array(wire.prefix(header.count)) == header)
        #expect(wire.count == header.count + payload.count)
        if key != nil {
            let masked = Array(wire.dropFirst(header.count))
            let keyBytes = hexBytes("37fa213d")
            #expect(masked == payload.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] })
        } else {
            #expect(Array(wire.dropFirst(header.count)) == payload)
        }
    }

    @Test func clientEncoderReproducesRecordedClientFrames() {
        var encoder = WebSocketFrameEncoder(clientMasks: fixedMasks())
        for frame in WebSocketFixture.recorded where frame.direction == .clientToRelay {
            guard case .bytes(let payload) = frame.payload else { continue }
            var wire: [UInt8] = []
            encoder.encode(WebSocketOpcode(rawValue: frame.opcode)!, payload: payload, into: &wire)
            #expect(Array(wire.prefix(frame.header.count / 2)) == hexBytes(frame.header), "step \(frame.step)")
        }
    }

    @Test func parsesRecordedRelayFramesOnBothSides() throws {
        let relayFrames = WebSocketFixture.recorded.filter { $0.direction == .relayToClient }
        let wire = relayFrames.flatMap { hexBytes($0.header) + $0.payloadBytes }
        let expected = relayFrames.map { WebSocketFrame(opcode: WebSocketOpcode(rawValue: $0.opcode)!, payload: $0.payloadBytes) }
        for pieces in everySplit(of: wire) {
            var parser = WebSocketFrameParser(role: .client, maxDataPayload: 2 << 20)
            var frames: [WebSocketFrame] = []
            for piece in pieces {
                parser.receive(piece)
                while let frame = try parser.next() { frames.append(frame) }
            }
            #expect(frames == expected)
            if frames != expected { return }
        }

        let clientFrames = WebSocketFixture.recorded.filter {
            if case .bytes = $0.payload { $0.direction == .clientToRelay } else { false }
        }
        let clientWire = clientFrames.flatMap {
            frameBytes(WebSocketOpcode(rawValue: $0.opcode)!, $0.payloadBytes, maskingKey: fixtureMaskingKey)
        }
        var server = WebSocketFrameParser(role: .server, maxDataPayload: 2 << 20)
        server.receive(clientWire)
        var frames: [WebSocketFrame] = []
        while let frame = try server.next() { frames.append(frame) }
        #expect(frames.map(\.payload) == clientFrames.map(\.payloadBytes))
    }

    static let malformed: [(WebSocketRole, String, WebSocketError)] = [
        (.client, "9200", .reservedBits),
        (.client, "a200", .reservedBits),
        (.client, "c200", .reservedBits),
        (.client, "8300", .unknownOpcode),
        (.client, "8700", .unknownOpcode),
        (.client, "8b00", .unknownOpcode),
        (.client, "8f00", .unknownOpcode),
        (.client, "0900", .fragmentedControlFrame),
        (.client, "0800", .fragmentedControlFrame),
        (.client, "897e007e", .controlPayloadTooLong),
        (.client, "887f0000000000010000", .controlPayloadTooLong),
        (.client, "827e0005", .nonMinimalLength),
        (.client, "827e007d", .nonMinimalLength),
        (.client, "827f000000000000ffff", .nonMinimalLength),
        (.client, "827f8000000000000000", .lengthHighBit),
        (.client, "827fffffffffffffffff", .lengthHighBit),
        (.client, "827f0000000100000000", .messageTooBig),
        (.client, "82850102030401", .maskedFrame),
        (.server, "8205", .unmaskedFrame),
        (.server, "82ff000000000020000137fa213d", .messageTooBig),
    ]

    @Test(arguments: malformed.indices)
    func malformedFrameIsRejected(index: Int) {
        let (role, hex, error) = Self.malformed[index]
        let input = hexBytes(hex)
        // Byte by byte: the error comes from the header alone, before any payload arrives.
        var parser = WebSocketFrameParser(role: role, maxDataPayload: 2 << 20)
        var caught: WebSocketError?
        for byte in input where caught == nil {
            parser.receive([byte])
            do { _ = try parser.next() } catch { caught = error }
        }
        #expect(caught == error)
        #expect(throws: error) { try parser.next() }
    }

    @Test func hugeDeclaredLengthWithoutCapWaitsInsteadOfOverflowing() throws {
        var parser = WebSocketFrameParser(role: .client, maxDataPayload: .max)
        parser.receive(hexBytes("827f7fffffffffffffff0102"))
        #expect(try parser.next() == nil)
        #expect(parser.hasPartialFrame)
    }

    @Test func closeCodesOfErrors() {
        #expect(WebSocketError.messageTooBig.closeCode.rawValue == 1009)
        #expect(WebSocketError.textMessage.closeCode.rawValue == 1003)
        #expect(WebSocketError.invalidCloseReason.closeCode.rawValue == 1007)
        #expect(WebSocketError.reservedBits.closeCode.rawValue == 1002)
    }
}
