import Testing
@testable import WebProxyNet

@Suite struct WebSocketConnectionTests {
    static func client(maxMessageBytes: Int = 2 << 20) -> WebSocketConnection {
        WebSocketConnection(clientWithMasks: fixedMasks(), maxMessageBytes: maxMessageBytes)
    }

    static func masked(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
        frameBytes(opcode, payload, fin: fin, maskingKey: fixtureMaskingKey)
    }

    /// 07-websocket.json socket A, relay side: batches, two Pings, a Pong, more batches.
    @Test func recordedSocketAAtEverySplit() {
        let relayFrames = WebSocketFixture.frames(socket: "A", .relayToClient)
        let wire = relayFrames.flatMap { hexBytes($0.header) + $0.payloadBytes }
        let recordedPong = WebSocketFixture.recorded.first { $0.step == 14 }!
        var expected: [WebSocketAction] = []
        for frame in relayFrames {
            switch frame.opcode {
            case 2: expected.append(.message(frame.payloadBytes))
            case 9:
                expected.append(.write(hexBytes(recordedPong.header)))  // the recorded empty Pong, byte for byte
                expected.append(.ping(frame.payloadBytes))
            case 10: expected.append(.pong(frame.payloadBytes))
            default: Issue.record("unexpected opcode in fixture")
            }
        }
        for pieces in everySplit(of: wire) {
            var connection = Self.client()
            let actions = mergingWrites(run(&connection, pieces))
            #expect(actions == mergingWrites(expected))
            #expect(connection.state == .open)
            if actions != mergingWrites(expected) { return }
        }
    }

    /// Socket C: the client never answers, the relay pings twice then drops TCP.
    @Test func recordedSocketCEndsWithAbruptEndOfStream() {
        let wire = WebSocketFixture.frames(socket: "C", .relayToClient).flatMap { hexBytes($0.header) + $0.payloadBytes }
        var connection = Self.client()
        let actions = run(&connection, [wire[...]], endOfStream: true)
        #expect(actions.last == .closed(.endOfStream))
        #expect(actions.filter { if case .message = $0 { true } else { false } }.count == 2)
        #expect(connection.state == .closed)
        #expect(connection.sendBinary([1]) == nil)
        #expect(connection.receive([0x89, 0x00]) == [])
    }

    /// Socket D: the client closes with 1000 "bye"; the relay echoes 1000 and drops TCP.
    @Test func recordedSocketDCloseHandshake() {
        var connection = Self.client()
        let data = WebSocketFixture.recorded.first { $0.step == 50 }!
        #expect(connection.sendBinary(data.payloadBytes) == Self.masked(.binary, data.payloadBytes))
        let close = connection.close(code: .normalClosure, reason: "bye")
        let recordedClose = WebSocketFixture.recorded.first { $0.step == 53 }!
        #expect(close == hexBytes(recordedClose.header) + Self.masked(.close, recordedClose.payloadBytes).dropFirst(6))
        #expect(connection.state == .closing)
        #expect(connection.sendBinary([1]) == nil)
        #expect(connection.close() == nil)

        // The relay's data that crossed our Close is still delivered; its Close ends the handshake.
        let relay = WebSocketFixture.frames(socket: "D", .relayToClient)
        let wire = relay.flatMap { hexBytes($0.header) + $0.payloadBytes }
        var actions = connection.receive(wire)
        actions += connection.receiveEndOfStream()
        #expect(
            actions == [
                .message(relay[0].payloadBytes), .message(relay[1].payloadBytes),
                .closed(.clean(code: .normalClosure, reason: "")),
            ])
        #expect(connection.state == .closed)
    }

    /// Socket E: the relay refuses a 2 MiB + 1 message with Close 1009; the client echoes it.
    @Test func recordedSocketERelayClose1009() {
        var connection = Self.client()
        let wire = WebSocketFixture.frames(socket: "E", .relayToClient).flatMap { hexBytes($0.header) + $0.payloadBytes }
        let actions = connection.receive(wire)
        #expect(actions.count == 4)
        #expect(actions.suffix(2) == [
            .write(closeFrameBytes(.messageTooBig, from: .client)),
            .closed(.clean(code: .messageTooBig, reason: "")),
        ])
    }

    /// The server side of socket E: 2 MiB is accepted, 2 MiB + 1 gets Close 1009 from the header alone.
    @Test func serverEnforcesTheMessageCapLikeTheRelay() {
        var server = WebSocketConnection(serverWithMaxMessageBytes: 2 << 20)
        let full = [UInt8](repeating: 0x5A, count: 2 << 20)
        #expect(server.receive(Self.masked(.binary, full)) == [.message(full)])
        let header = hexBytes(WebSocketFixture.recorded.first { $0.step == 62 }!.header)
        #expect(server.receive(header) == [
            .write(hexBytes("880203f1")),  // the relay's step 64 bytes exactly
            .closed(.failed(.messageTooBig)),
        ])
    }

    @Test func serverAnswersRecordedClientPingAndClose() {
        var server = WebSocketConnection(serverWithMaxMessageBytes: 2 << 20)
        let ping = WebSocketFixture.recorded.first { $0.step == 17 }!
        let pong = WebSocketFixture.recorded.first { $0.step == 18 }!
        #expect(server.receive(Self.masked(.ping, ping.payloadBytes)) == [
            .write(hexBytes(pong.header) + pong.payloadBytes), .ping(ping.payloadBytes),
        ])
        let close = WebSocketFixture.recorded.first { $0.step == 53 }!
        let reply = WebSocketFixture.recorded.first { $0.step == 54 }!
        #expect(server.receive(Self.masked(.close, close.payloadBytes)) == [
            .write(hexBytes(reply.header) + reply.payloadBytes),
            .closed(.clean(code: .normalClosure, reason: "bye")),
        ])
        #expect(server.sendBinary([1]) == nil)
    }

    @Test func serverSendsUnmaskedAndClientMasked() {
        var server = WebSocketConnection(serverWithMaxMessageBytes: 100)
        #expect(server.sendBinary(hexBytes("040000010000000400000010")) == hexBytes("820c040000010000000400000010"))
        #expect(server.sendPing() == hexBytes("8900"))
        var client = Self.client()
        #expect(client.sendPing(Array("client-ping".utf8)) == hexBytes("898b37fa213d") + Self.masked(.ping, Array("client-ping".utf8)).dropFirst(6))
    }

    @Test func reassemblesFragmentsAroundControlFrames() {
        var connection = Self.client(maxMessageBytes: 6)
        let input =
            frameBytes(.binary, Array("ab".utf8), fin: false) + frameBytes(.ping, Array("x".utf8))
            + frameBytes(.continuation, Array("cd".utf8), fin: false) + frameBytes(.pong, Array("y".utf8))
            + frameBytes(.continuation, Array("ef".utf8)) + frameBytes(.binary, [])
        let expected: [WebSocketAction] = [
            .write(Self.masked(.pong, Array("x".utf8))), .ping(Array("x".utf8)), .pong(Array("y".utf8)),
            .message(Array("abcdef".utf8)),
            .message([]),
        ]
        for pieces in everySplit(of: input) {
            var fresh = connection
            #expect(run(&fresh, pieces) == expected)
        }
        let tooBig = frameBytes(.binary, Array("abcd".utf8), fin: false) + frameBytes(.continuation, Array("efg".utf8))
        #expect(connection.receive(tooBig) == [
            .write(closeFrameBytes(.messageTooBig, from: .client)), .closed(.failed(.messageTooBig)),
        ])
    }

    static let violations: [(String, [UInt8], WebSocketError)] = [
        ("text", frameBytes(.text, Array("hello".utf8)), .textMessage),
        ("fragmented text", frameBytes(.text, Array("he".utf8), fin: false), .textMessage),
        ("continuation first", frameBytes(.continuation, [1]), .unexpectedContinuation),
        ("binary inside fragments", frameBytes(.binary, [1], fin: false) + frameBytes(.binary, [2]), .expectedContinuation),
        ("one-byte close", frameBytes(.close, [0x03]), .invalidClosePayload),
        ("close 1005", frameBytes(.close, [0x03, 0xED]), .invalidCloseCode),
        ("close 1006", frameBytes(.close, [0x03, 0xEE]), .invalidCloseCode),
        ("close 999", frameBytes(.close, [0x03, 0xE7]), .invalidCloseCode),
        ("close 5000", frameBytes(.close, [0x13, 0x88]), .invalidCloseCode),
        ("close bad UTF-8", frameBytes(.close, [0x03, 0xE8, 0xC3, 0x28]), .invalidCloseReason),
        ("reserved bits", [0xC2, 0x00], .reservedBits),
        ("masked from server", frameBytes(.binary, [1], maskingKey: 1), .maskedFrame),
    ]

    @Test(arguments: violations.indices)
    func protocolViolationFailsWithItsCloseCode(index: Int) {
        let (name, input, error) = Self.violations[index]
        for pieces in [[input[...]], input.indices.map { input[$0...$0] }] {
            var connection = Self.client()
            let actions = run(&connection, pieces, endOfStream: true)
            #expect(
                actions == [.write(closeFrameBytes(error.closeCode, from: .client)), .closed(.failed(error))], "\(name)")
            #expect(connection.state == .closed)
        }
    }

    @Test func peerCloseIsEchoedWithItsCode() {
        var connection = Self.client()
        #expect(connection.receive(frameBytes(.close, [0x0F, 0xA0] + Array("app".utf8))) == [
            .write(closeFrameBytes(WebSocketCloseCode(rawValue: 4000), from: .client)),
            .closed(.clean(code: WebSocketCloseCode(rawValue: 4000), reason: "app")),
        ])
        var empty = Self.client()
        #expect(empty.receive(frameBytes(.close, [])) == [
            .write(closeFrameBytes(nil, from: .client)), .closed(.clean(code: nil, reason: "")),
        ])
    }

    @Test func closingStateTimesOutAndIgnoresPings() {
        var connection = Self.client()
        #expect(connection.closeDeadlinePassed() == [])
        _ = connection.close(code: .goingAway)
        #expect(connection.receive(frameBytes(.ping, [1])) == [])
        #expect(connection.closeDeadlinePassed() == [.closed(.timedOut)])
        #expect(connection.state == .closed)
        #expect(connection.receiveEndOfStream() == [])
    }

    @Test func violationWhileClosingSendsNoSecondClose() {
        var connection = Self.client()
        _ = connection.close()
        #expect(connection.receive(frameBytes(.text, [1])) == [.closed(.failed(.textMessage))])
    }

    @Test func endOfStreamWhileClosingIsAbrupt() {
        var connection = Self.client()
        _ = connection.close()
        #expect(connection.receive(frameBytes(.binary, [1, 2])) == [.message([1, 2])])
        #expect(connection.receiveEndOfStream() == [.closed(.endOfStream)])
    }
}
