import Testing
import WebProxyTestSupport
@testable import WebProxyNet

/// Seeded random mutations of valid inputs, fed in random pieces: the codecs must never
/// trap, must keep their output within the configured bounds, and must end cleanly.
@Suite struct CodecMutationTests {
    static let interestingBytes: [UInt8] = Array("\r\n\0: 0f;-,\t\u{7F}".utf8) + [0x80, 0xFF, 0x7E, 0x7F, 0x88, 0x89]

    static func mutate(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !bytes.isEmpty else { break }
            let position = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes[position] = interestingBytes.randomElement(using: &generator)!
            case 2: bytes.insert(interestingBytes.randomElement(using: &generator)!, at: position)
            case 3: bytes.remove(at: position)
            case 4:
                let end = min(bytes.count, position + Int.random(in: 1...64, using: &generator))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            default: bytes.removeSubrange(position...)
            }
        }
        return bytes
    }

    static func randomPieces(_ input: [UInt8], using generator: inout SplitMix64) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < input.count {
            let length = Int.random(in: 1...max(1, input.count / 3), using: &generator)
            let end = min(input.count, start + length)
            pieces.append(input[start..<end])
            start = end
        }
        return pieces
    }

    @Test func responseParserSurvivesMutations() {
        var generator = SplitMix64(seed: 0x0048_5454_5031)
        let (base, methods, _) = HTTPResponseParserTests.conversation
        var limits = HTTPParserLimits()
        limits.maxBodyBytes = 64
        limits.maxHeadBytes = 1024
        var outcomes: [String: Int] = [:]
        for _ in 0..<4000 {
            let input = Self.mutate(base, using: &generator)
            let events = parseResponses(Self.randomPieces(input, using: &generator), methods: methods, limits: limits)
            var bodyBytes = 0
            var finals = 0
            for (index, event) in events.enumerated() {
                switch event {
                case .responseHead, .switchedProtocols:
                    finals += 1
                    bodyBytes = 0
                case .body(let bytes):
                    bodyBytes += bytes.count
                    #expect(bodyBytes <= limits.maxBodyBytes)
                case .failed(let error):
                    #expect(index == events.count - 1)
                    outcomes[error.description, default: 0] += 1
                default: break
                }
            }
            #expect(finals <= methods.count)
        }
        // The mutations reach many distinct rejections, not just one early exit.
        #expect(outcomes.count >= 10)
    }

    @Test func requestParserSurvivesMutations() {
        var generator = SplitMix64(seed: 0x0048_5454_5032)
        let (base, _) = HTTPRequestParserTests.conversation
        var limits = HTTPParserLimits()
        limits.maxBodyBytes = 16
        limits.maxHeadBytes = 512
        var outcomes: Set<String> = []
        for _ in 0..<4000 {
            let input = Self.mutate(base, using: &generator)
            let events = parseRequests(Self.randomPieces(input, using: &generator), limits: limits)
            var bodyBytes = 0
            for (index, event) in events.enumerated() {
                switch event {
                case .requestHead: bodyBytes = 0
                case .body(let bytes):
                    bodyBytes += bytes.count
                    #expect(bodyBytes <= limits.maxBodyBytes)
                case .failed(let error):
                    #expect(index == events.count - 1)
                    outcomes.insert(error.description)
                default: break
                }
            }
        }
        #expect(outcomes.count >= 8)
    }

    static func checkWellFormed(_ actions: [WebSocketAction], cap: Int) {
        for (index, action) in actions.enumerated() {
            switch action {
            case .message(let bytes): #expect(bytes.count <= cap)
            case .ping(let bytes), .pong(let bytes): #expect(bytes.count <= WebSocketFrame.maxControlPayload)
            case .closed: #expect(index == actions.count - 1)
            case .write: break
            }
        }
    }

    @Test func webSocketSurvivesMutations() {
        var generator = SplitMix64(seed: 0x0057_5336_3435)
        // Recorded frames minus their Close frames (which would end the stream early), a
        // fragmented message, and one Close at the very end.
        let relayWire = WebSocketFixture.recorded.filter { $0.direction == .relayToClient && $0.opcode != 8 }
            .flatMap { hexBytes($0.header) + $0.payloadBytes }
        let fragmented =
            frameBytes(.binary, [1, 2, 3], fin: false) + frameBytes(.ping, [9]) + frameBytes(.continuation, [4])
        let clientBase = fragmented + relayWire + frameBytes(.close, [0x03, 0xE8])
        let serverBase =
            WebSocketFixture.recorded.filter {
                if case .bytes = $0.payload { $0.direction == .clientToRelay && $0.opcode != 1 && $0.opcode != 8 } else { false }
            }.flatMap { frameBytes(WebSocketOpcode(rawValue: $0.opcode)!, $0.payloadBytes, maskingKey: fixtureMaskingKey) }
            + frameBytes(.close, [0x03, 0xE8], maskingKey: fixtureMaskingKey)
        let cap = 48
        var outcomes: Set<WebSocketCloseOutcome> = []
        for iteration in 0..<6000 {
            let isClient = iteration % 2 == 0
            let input = Self.mutate(isClient ? clientBase : serverBase, using: &generator)
            var connection =
                isClient
                ? WebSocketConnection(clientWithMasks: fixedMasks(), maxMessageBytes: cap)
                : WebSocketConnection(serverWithMaxMessageBytes: cap)
            let actions = run(&connection, Self.randomPieces(input, using: &generator), endOfStream: true)
            Self.checkWellFormed(actions, cap: cap)
            #expect(connection.state == .closed)
            if case .closed(let outcome)? = actions.last { outcomes.insert(outcome) }
        }
        #expect(outcomes.count >= 8)
    }
}
