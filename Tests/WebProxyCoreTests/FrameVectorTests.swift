import Foundation
import Testing
import WebProxyCore

/// The encodings listed in `Docs/PROTOCOL.md` §9, checked both ways and against the
/// document itself so the two cannot drift apart.
@Suite struct FrameVectorTests {
    typealias T = FrameTestSupport

    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let direction: FrameDirection
        let hex: String
        let frame: Frame
        var testDescription: String { name }
        var directionName: String { direction == .clientToRelay ? "clientToRelay" : "relayToClient" }
    }

    static let vectors: [Vector] = [
        Vector(name: "HELLO", direction: .clientToRelay, hex: "10 000000 00000001 01", frame: .hello(version: 1)),
        Vector(name: "WELCOME", direction: .relayToClient, hex: "11 000000 00000000", frame: .welcome),
        Vector(name: "OPEN(1)", direction: .clientToRelay, hex: "01 000001 00000000", frame: .open(stream: .first)),
        Vector(
            name: "DATA(1, \"0123456789abcdef\")", direction: .clientToRelay,
            hex: "02 000001 00000010 30313233343536373839616263646566",
            frame: .data(stream: .first, payload: Array("0123456789abcdef".utf8)[...])),
        Vector(
            name: "WINDOW(1, 16)", direction: .relayToClient, hex: "04 000001 00000004 00000010",
            frame: .window(stream: .first, delta: 16)),
        Vector(name: "CLOSE(1)", direction: .clientToRelay, hex: "03 000001 00000000", frame: .close(stream: .first)),
        Vector(name: "PONG(0, \"\")", direction: .clientToRelay, hex: "06 000000 00000000", frame: .pong(token: [][...])),
    ]

    static let firstEchoBatch = "040000010000000400000010 020000010000001030313233343536373839616263646566"

    @Test(arguments: vectors)
    func vectorEncodesAndDecodes(_ vector: Vector) throws {
        let bytes = try #require(T.bytes(hex: vector.hex))
        #expect(vector.frame.encoded == bytes)
        #expect(try FrameBatch.decode(bytes[...], direction: vector.direction) == [vector.frame])
    }

    @Test func firstEchoBatchDecodes() throws {
        let bytes = try #require(T.bytes(hex: Self.firstEchoBatch))
        #expect(try FrameBatch.decode(bytes[...], direction: .relayToClient) == [
            .window(stream: .first, delta: 16),
            .data(stream: .first, payload: Array("0123456789abcdef".utf8)[...]),
        ])
    }

    @Test func protocolDocumentListsExactlyTheseVectors() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/PROTOCOL.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## 9. Test vectors").last)
        let blocks = section.components(separatedBy: "```")
        try #require(blocks.count >= 4, "section 9 needs two code blocks")
        let listed = blocks[1].split(separator: "\n").map { line in
            line.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        #expect(listed == Self.vectors.map { [$0.name, $0.directionName, $0.hex] })
        #expect(blocks[3].trimmingCharacters(in: .whitespacesAndNewlines) == Self.firstEchoBatch)
    }
}
