import Testing
@testable import WebProxyNet

/// One frame from 07-websocket.json (`websocket_messages`, by step); payloads unmasked.
struct RecordedFrame: Sendable {
    enum Direction: Sendable { case clientToRelay, relayToClient }
    enum Payload: Sendable {
        case bytes([UInt8])
        /// Large payloads are recorded by length only.
        case length(Int)
    }

    let step: Int
    let socket: String
    let direction: Direction
    let opcode: UInt8
    let header: String
    let payload: Payload

    var payloadBytes: [UInt8] {
        switch payload {
        case .bytes(let bytes): bytes
        case .length(let count): (0..<count).map { UInt8(truncatingIfNeeded: $0) }
        }
    }
}

/// Generated from Tests/Fixtures/relay-transcripts/07-websocket.json (frames only).
enum WebSocketFixture {
    static let recorded: [RecordedFrame] = [
        RecordedFrame(step: 4, socket: "A", direction: .clientToRelay, opcode: 2, header: "82a037fa213d", payload: .bytes(hexBytes("0100000100000000020000010000001030313233343536373839616263646566"))),
        RecordedFrame(step: 5, socket: "A", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("040000010000000400000010"))),
        RecordedFrame(step: 6, socket: "A", direction: .relayToClient, opcode: 2, header: "8218", payload: .bytes(hexBytes("020000010000001030313233343536373839616263646566"))),
        RecordedFrame(step: 7, socket: "A", direction: .clientToRelay, opcode: 2, header: "82b037fa213d", payload: .bytes(hexBytes("0100000200000000020000020000000d7365636f6e642073747265616d020000010000000b6d6f7265206f6e206f6e65"))),
        RecordedFrame(step: 8, socket: "A", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("04000001000000040000000b"))),
        RecordedFrame(step: 9, socket: "A", direction: .relayToClient, opcode: 2, header: "8213", payload: .bytes(hexBytes("020000010000000b6d6f7265206f6e206f6e65"))),
        RecordedFrame(step: 10, socket: "A", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("04000002000000040000000d"))),
        RecordedFrame(step: 11, socket: "A", direction: .relayToClient, opcode: 2, header: "8215", payload: .bytes(hexBytes("020000020000000d7365636f6e642073747265616d"))),
        RecordedFrame(step: 13, socket: "A", direction: .relayToClient, opcode: 9, header: "8900", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 14, socket: "A", direction: .clientToRelay, opcode: 10, header: "8a8037fa213d", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 15, socket: "A", direction: .relayToClient, opcode: 9, header: "8900", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 16, socket: "A", direction: .clientToRelay, opcode: 10, header: "8a8037fa213d", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 17, socket: "A", direction: .clientToRelay, opcode: 9, header: "898b37fa213d", payload: .bytes(hexBytes("636c69656e742d70696e67"))),
        RecordedFrame(step: 18, socket: "A", direction: .relayToClient, opcode: 10, header: "8a0b", payload: .bytes(hexBytes("636c69656e742d70696e67"))),
        RecordedFrame(step: 19, socket: "A", direction: .clientToRelay, opcode: 2, header: "829237fa213d", payload: .bytes(hexBytes("020000010000000a61667465722069646c65"))),
        RecordedFrame(step: 20, socket: "A", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("04000001000000040000000a"))),
        RecordedFrame(step: 21, socket: "A", direction: .relayToClient, opcode: 2, header: "8212", payload: .bytes(hexBytes("020000010000000a61667465722069646c65"))),
        RecordedFrame(step: 22, socket: "A", direction: .clientToRelay, opcode: 1, header: "818537fa213d", payload: .bytes(hexBytes("68656c6c6f"))),
        RecordedFrame(step: 34, socket: "B", direction: .clientToRelay, opcode: 2, header: "828037fa213d", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 40, socket: "C", direction: .clientToRelay, opcode: 2, header: "829c37fa213d", payload: .bytes(hexBytes("0100000100000000020000010000000c7468656e2073696c656e6365"))),
        RecordedFrame(step: 41, socket: "C", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("04000001000000040000000c"))),
        RecordedFrame(step: 42, socket: "C", direction: .relayToClient, opcode: 2, header: "8214", payload: .bytes(hexBytes("020000010000000c7468656e2073696c656e6365"))),
        RecordedFrame(step: 43, socket: "C", direction: .relayToClient, opcode: 9, header: "8900", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 44, socket: "C", direction: .relayToClient, opcode: 9, header: "8900", payload: .bytes(hexBytes(""))),
        RecordedFrame(step: 50, socket: "D", direction: .clientToRelay, opcode: 2, header: "829c37fa213d", payload: .bytes(hexBytes("0100000100000000020000010000000c6265666f726520636c6f7365"))),
        RecordedFrame(step: 51, socket: "D", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("04000001000000040000000c"))),
        RecordedFrame(step: 52, socket: "D", direction: .relayToClient, opcode: 2, header: "8214", payload: .bytes(hexBytes("020000010000000c6265666f726520636c6f7365"))),
        RecordedFrame(step: 53, socket: "D", direction: .clientToRelay, opcode: 8, header: "888537fa213d", payload: .bytes(hexBytes("03e8627965"))),
        RecordedFrame(step: 54, socket: "D", direction: .relayToClient, opcode: 8, header: "8802", payload: .bytes(hexBytes("03e8"))),
        RecordedFrame(step: 60, socket: "E", direction: .clientToRelay, opcode: 2, header: "82ff000000000020000037fa213d", payload: .length(2097152)),
        RecordedFrame(step: 61, socket: "E", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("0400000100000004000ffff8"))),
        RecordedFrame(step: 62, socket: "E", direction: .clientToRelay, opcode: 2, header: "82ff000000000020000137fa213d", payload: .length(2097153)),
        RecordedFrame(step: 63, socket: "E", direction: .relayToClient, opcode: 2, header: "820c", payload: .bytes(hexBytes("0400000100000004000ffff0"))),
        RecordedFrame(step: 64, socket: "E", direction: .relayToClient, opcode: 8, header: "8802", payload: .bytes(hexBytes("03f1"))),
    ]

    static func frames(socket: String, _ direction: RecordedFrame.Direction) -> [RecordedFrame] {
        recorded.filter { $0.socket == socket && $0.direction == direction }
    }
}
