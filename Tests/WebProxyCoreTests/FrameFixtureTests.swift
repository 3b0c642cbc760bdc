import Foundation
import Testing
import WebProxyCore

/// Decodes every frame batch recorded from the reference relay and compares it with the
/// recording's own decode. Bodies the relay refused must be refused here too when the reason
/// is the shape of a frame; the table below says why each other refusal is not ours to see.
@Suite struct FrameFixtureTests {
    typealias T = FrameTestSupport

    enum Expectation {
        /// The decoder must fail exactly so.
        case rejected(FrameError)
        /// Well-formed frames; the relay refused them for a reason beyond frame shape.
        case wellFormed(because: String)
    }

    /// Every request body the relay answered with 404, and every WebSocket message after
    /// which it dropped the socket, keyed by scenario number and step.
    static let refusals: [String: Expectation] = [
        "02#4": .rejected(.badPayload(.hello, length: 1)),
        "02#5": .wellFormed(because: "a create body must be one HELLO and nothing else"),
        "02#14": .wellFormed(because: "no Authorization header"),
        "02#15": .wellFormed(because: "lower-case bearer scheme"),
        "02#16": .wellFormed(because: "two spaces after Bearer"),
        "02#17": .wellFormed(because: "duplicate Authorization header"),
        "02#18": .wellFormed(because: "query string on an API path"),
        "02#19": .wellFormed(because: "Cookie header"),
        "02#20": .wellFormed(because: "two addresses in X-Forwarded-For"),
        "02#21": .rejected(.badPayload(.hello, length: 1)),
        "02#22": .rejected(.wrongStream(.hello, stream: T.stream(1))),
        "02#23": .rejected(.truncated(bufferedBytes: 8)),
        "02#24": .rejected(.emptyBatch),
        "02#26": .wellFormed(because: "unknown bearer"),
        "02#27": .wellFormed(because: "a session token used as a bootstrap"),
        "03#10": .wellFormed(because: "non-canonical X-Up-Seq"),
        "03#15": .wellFormed(because: "sequence gap"),
        "03#16": .wellFormed(because: "the session was already closed"),
        "04#16": .wellFormed(because: "the session was deleted"),
        "06#21": .wellFormed(because: "no X-Lane-ID on a lanes session"),
        "06#23": .wellFormed(because: "non-canonical X-Lane-ID"),
        "06#27": .wellFormed(because: "a frame for another lane"),
        "06#32": .wellFormed(because: "X-Lane-ID on an https session"),
        "07#34": .rejected(.emptyBatch),
        "08#12": .wellFormed(because: "CLOSE ends the lane socket"),
        "08#16": .wellFormed(because: "a lane must start with OPEN"),
        "08#33": .wellFormed(because: "a frame for another lane"),
        "08#49": .wellFormed(because: "PONG on a lane socket"),
        "09#21": .wellFormed(because: "stream id reuse"),
        "09#25": .wellFormed(because: "duplicate OPEN"),
        "09#29": .wellFormed(because: "DATA on a never-opened stream"),
        "09#33": .wellFormed(because: "WINDOW on a never-opened stream"),
        "09#37": .rejected(.zeroWindow(stream: T.stream(1))),
        "09#42": .rejected(.badPayload(.window, length: 3)),
        "09#49": .rejected(.badPayload(.pong, length: 65)),
        "09#53": .rejected(.wrongDirection(.ping)),
        "09#57": .rejected(.wrongStream(.pong, stream: T.stream(1))),
        "09#61": .rejected(.emptyBatch),
        "09#63": .rejected(.truncated(bufferedBytes: 8)),
        "09#67": .rejected(.badPayload(.data, length: 0)),
        "09#71": .rejected(.unknownType(7)),
        "09#75": .wellFormed(because: "HELLO belongs only in the session-create body"),
        "09#80": .rejected(.badPayload(.open, length: 1)),
    ]

    /// `Tests/Fixtures/relay-transcripts`.
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/relay-transcripts")

    /// One recorded batch.
    struct Batch {
        let key: String
        let direction: FrameDirection
        let bytes: [UInt8]
        /// The recording's decode, absent when the recorder could not decode it.
        let frames: [[String: Any]]?
        /// The relay refused the body or dropped the socket after the message.
        let refused: Bool
    }

    @Test func recordedBatchesDecodeAsTheRelayRecordedThem() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        try #require(files.count == 9, "expected the nine relay transcripts in \(Self.directory.path)")
        var batches: [Batch] = []
        for file in files {
            let data = try Data(contentsOf: Self.directory.appendingPathComponent(file))
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            batches += try Self.batches(in: json, scenario: String(file.prefix(2)))
        }
        var seenRefusals: Set<String> = []
        var comparedFrames = 0
        for batch in batches {
            let outcome = Result { () throws(FrameError) in
                try FrameBatch.decode(batch.bytes[...], direction: batch.direction)
            }
            let expectation = Self.refusals[batch.key]
            if batch.refused {
                #expect(expectation != nil, "\(batch.key): refusal missing from the table")
                seenRefusals.insert(batch.key)
            }
            switch (outcome, expectation) {
            case (.failure(let error), .rejected(let expected)?):
                #expect(error == expected, "\(batch.key)")
            case (.failure(let error), _):
                Issue.record("\(batch.key): decoder rejected a batch the table calls well-formed: \(error)")
            case (.success, .rejected(let expected)?):
                Issue.record("\(batch.key): decoder accepted a batch that should fail with \(expected)")
            case (.success(let frames), _):
                let recorded = try #require(batch.frames, "\(batch.key): no recorded decode")
                comparedFrames += try Self.compare(frames, with: recorded, key: batch.key)
            }
        }
        #expect(seenRefusals == Set(Self.refusals.keys))
        #expect(batches.count >= 150)
        #expect(comparedFrames >= 350)
    }

    // MARK: reading the transcripts

    static func batches(in json: [String: Any], scenario: String) throws -> [Batch] {
        var out: [Batch] = []
        for exchange in json["exchanges"] as? [[String: Any]] ?? [] {
            let step = try #require(exchange["step"] as? Int)
            let request = try #require(exchange["request"] as? [String: Any])
            let response = try #require(exchange["response"] as? [String: Any])
            let status = try #require(response["status"] as? Int)
            let method = request["method"] as? String
            // The query is kept out so that a refused `?` still counts as a frame body.
            let path = (request["path"] as? String ?? "").split(separator: "?", omittingEmptySubsequences: false)[0]
            let carriesFrames =
                (method == "POST" && (path.hasSuffix("/api/v1/session") || path.hasSuffix("/api/v1/up")))
            if carriesFrames, isFrameBody(request), let bytes = try hexBody(request) {
                out.append(Batch(
                    key: "\(scenario)#\(step)", direction: .clientToRelay, bytes: bytes,
                    frames: request["frames"] as? [[String: Any]], refused: status == 404))
            }
            if isFrameBody(response), let bytes = try hexBody(response) {
                out.append(Batch(
                    key: "\(scenario)#\(step)r", direction: .relayToClient, bytes: bytes,
                    frames: response["frames"] as? [[String: Any]], refused: false))
            }
        }
        let messages = json["websocket_messages"] as? [[String: Any]] ?? []
        for (index, message) in messages.enumerated() {
            guard message["opcode_name"] as? String == "binary", let hex = message["payload_hex"] as? String
            else { continue }
            let step = try #require(message["step"] as? Int)
            let fromClient = message["dir"] as? String == "client->relay"
            out.append(Batch(
                key: "\(scenario)#\(step)", direction: fromClient ? .clientToRelay : .relayToClient,
                bytes: try #require(T.bytes(hex: hex)), frames: message["frames"] as? [[String: Any]],
                refused: fromClient && relayEndsSocket(after: index, in: messages)))
        }
        return out
    }

    static func isFrameBody(_ part: [String: Any]) -> Bool {
        let headers = part["headers"] as? [[String]] ?? []
        return headers.contains { $0.count == 2 && $0[0].lowercased() == "content-type" && $0[1] == "application/octet-stream" }
    }

    static func hexBody(_ part: [String: Any]) throws -> [UInt8]? {
        guard let hex = part["body_hex"] as? String else { return nil }
        let bytes = try #require(T.bytes(hex: hex))
        return bytes
    }

    /// Whether the relay's next event on the same socket, ignoring pings, ends it.
    static func relayEndsSocket(after index: Int, in messages: [[String: Any]]) -> Bool {
        let socket = messages[index]["socket"] as? String
        for later in messages[(index + 1)...] where later["socket"] as? String == socket {
            guard later["dir"] as? String == "relay->client" else { return false }
            switch later["opcode_name"] as? String {
            case "ping", "pong": continue
            case "binary", "text": return false
            default: return true
            }
        }
        return false
    }

    /// Checks `frames` against the recorded decode (which may elide a middle run); returns
    /// how many frames were compared field by field.
    static func compare(_ frames: [Frame], with recorded: [[String: Any]], key: String) throws -> Int {
        var expected: [[String: Any]?] = []
        for entry in recorded {
            if let elided = entry["elided_frames"] as? Int {
                expected += Array(repeating: nil, count: elided)
            } else {
                expected.append(entry)
            }
        }
        try #require(frames.count == expected.count, "\(key): frame count")
        var compared = 0
        for (frame, entry) in zip(frames, expected) {
            guard let entry else { continue }
            compared += 1
            let encoded = frame.encoded
            #expect(entry["type_code"] as? Int == Int(frame.type.rawValue), "\(key)")
            #expect(entry["stream"] as? Int == Int(frame.stream.rawValue), "\(key)")
            #expect(entry["payload_len"] as? Int == frame.payloadLength, "\(key)")
            if let hex = entry["payload_hex"] as? String {
                #expect(hex == T.hex(encoded.dropFirst(Frame.headerLength)), "\(key)")
            }
            if let delta = entry["window_delta"] as? Int {
                #expect(frame == .window(stream: frame.stream, delta: UInt32(delta)), "\(key)")
            }
        }
        return compared
    }
}
