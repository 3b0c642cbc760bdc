import Foundation
import WebProxyCore

/// One recorded scenario of the reference relay (`Tests/Fixtures/relay-transcripts/*.json`),
/// parsed into what the replay needs.
struct RelayTranscript {
    let name: String
    let longPollMilliseconds: UInt64
    /// Recorded value of each run-specific token → its role (`bootstrap#1`, `session#2`, …).
    let roleOfRecordedValue: [String: String]
    /// Exchanges and WebSocket messages merged in `step` order.
    let events: [Event]

    enum Event {
        case exchange(Exchange)
        case message(SocketMessage)
    }

    struct Exchange {
        let step: Int
        let label: String
        let start: UInt64
        let elapsed: UInt64
        let method: String
        let path: String
        let headers: [(name: String, value: String)]
        let body: [UInt8]
        let status: Int
        let responseHeaders: [(name: String, value: String)]
        let responseFrames: [ExpectedFrame]?
        let constStatement: String?
        let batchStatement: String?
        /// (where, role) pairs of the response that carry run-specific tokens.
        let responseVariables: [(location: String, role: String)]
        let socket: String?
    }

    struct SocketMessage {
        let step: Int
        let socket: String
        let fromClient: Bool
        let time: UInt64
        /// `binary`, `text`, `ping`, `pong`, `close`, or nil for a TCP end.
        let opcode: String?
        let payload: [UInt8]
        let frames: [ExpectedFrame]?
        let closeCode: Int?
    }

    /// One decoded frame as the recorder described it.
    struct ExpectedFrame: CustomStringConvertible {
        let typeCode: UInt8
        let stream: UInt32
        let payloadLength: Int
        /// The whole payload (short frames) or its first 16 bytes (long ones).
        let payloadPrefix: [UInt8]
        let isWholePayload: Bool
        let windowDelta: UInt32?

        private static let cycle = (0...255).map { UInt8($0) }

        var description: String {
            let name = FrameType(rawValue: typeCode)?.name ?? "0x" + String(typeCode, radix: 16)
            return "\(name)(\(stream), \(payloadLength) B)"
        }

        /// The payload: recorded bytes, or the recorder's `pattern(prefix, n)` rebuilt from the
        /// first 16 bytes (ASCII prefix, then byte k mod 256 at offset k).
        var payload: [UInt8] {
            if isWholePayload { return payloadPrefix }
            var prefixLength = payloadPrefix.count
            while prefixLength > 0,
                payloadPrefix[prefixLength - 1] == UInt8(truncatingIfNeeded: prefixLength - 1)
            {
                prefixLength -= 1
            }
            var bytes = Array(payloadPrefix[..<prefixLength])
            bytes.reserveCapacity(payloadLength)
            while bytes.count < payloadLength {
                let offset = bytes.count % 256
                bytes += Self.cycle[offset..<min(256, offset + payloadLength - bytes.count)]
            }
            return bytes
        }

        var encoded: [UInt8] {
            var out: [UInt8] = [
                typeCode, UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF),
                UInt8(stream & 0xFF),
            ]
            let length = UInt32(payloadLength)
            out += [
                UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF),
                UInt8(length & 0xFF),
            ]
            return out + payload
        }
    }

    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/relay-transcripts")

    init(file: String) throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent(file))
        let root = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        name = file
        let relay = root["relay"] as? [String: Any] ?? [:]
        longPollMilliseconds = UInt64((relay["long_poll_s"] as? Int ?? 25) * 1000)
        var roles: [String: String] = [:]
        for variable in root["variables"] as? [[String: Any]] ?? [] {
            if let value = variable["value"] as? String, let role = variable["name"] as? String,
                role.hasPrefix("bootstrap#") || role.hasPrefix("session#")
            {
                roles[value] = role
            }
        }
        roleOfRecordedValue = roles
        var events: [(Int, Event)] = []
        for item in root["exchanges"] as? [[String: Any]] ?? [] {
            let exchange = Self.exchange(item)
            events.append((exchange.step, .exchange(exchange)))
        }
        for item in root["websocket_messages"] as? [[String: Any]] ?? [] {
            let message = Self.message(item)
            events.append((message.step, .message(message)))
        }
        self.events = events.sorted { $0.0 < $1.0 }.map(\.1)
    }

    private static func exchange(_ item: [String: Any]) -> Exchange {
        let request = item["request"] as? [String: Any] ?? [:]
        let response = item["response"] as? [String: Any] ?? [:]
        let extracted = response["extracted"] as? [String: Any]
        let requestFrames = (request["frames"] as? [[String: Any]]).map(frames)
        let body =
            (request["body_hex"] as? String).map(hexBytes)
            ?? (requestFrames ?? []).flatMap(\.encoded)
        return Exchange(
            step: item["step"] as? Int ?? 0, label: item["label"] as? String ?? "",
            start: UInt64(item["t_start_ms"] as? Int ?? 0),
            elapsed: UInt64(item["elapsed_ms"] as? Int ?? 0),
            method: request["method"] as? String ?? "", path: request["path"] as? String ?? "",
            headers: headers(request["headers"]), body: body,
            status: response["status"] as? Int ?? 0, responseHeaders: headers(response["headers"]),
            responseFrames: (response["frames"] as? [[String: Any]]).map(frames),
            constStatement: extracted?["const_statement"] as? String,
            batchStatement: extracted?["batch_statement"] as? String,
            responseVariables: (item["variables"] as? [[String: Any]] ?? []).compactMap {
                guard let location = $0["where"] as? String, location.hasPrefix("response."),
                    let role = $0["variable"] as? String
                else { return nil }
                return (location, role)
            },
            socket: item["socket"] as? String)
    }

    private static func message(_ item: [String: Any]) -> SocketMessage {
        let recordedFrames = (item["frames"] as? [[String: Any]]).map(frames)
        let payload =
            (item["payload_hex"] as? String).map(hexBytes)
            ?? (recordedFrames ?? []).flatMap(\.encoded)
        return SocketMessage(
            step: item["step"] as? Int ?? 0, socket: item["socket"] as? String ?? "",
            fromClient: item["dir"] as? String == "client->relay",
            time: UInt64(item["t_ms"] as? Int ?? 0),
            opcode: item["opcode_name"] as? String, payload: payload, frames: recordedFrames,
            closeCode: item["close_code"] as? Int)
    }

    /// Recorded frames; an `elided_frames: n` entry stands for n copies of the frame after it.
    private static func frames(_ list: [[String: Any]]) -> [ExpectedFrame] {
        var result: [ExpectedFrame] = []
        var pendingCopies = 0
        for item in list {
            if let elided = item["elided_frames"] as? Int {
                pendingCopies = elided
                continue
            }
            let frame = ExpectedFrame(
                typeCode: UInt8(item["type_code"] as? Int ?? 0),
                stream: UInt32(item["stream"] as? Int ?? 0),
                payloadLength: item["payload_len"] as? Int ?? 0,
                payloadPrefix: hexBytes(
                    (item["payload_hex"] ?? item["payload_head_hex"]) as? String ?? ""),
                isWholePayload: item["payload_hex"] != nil,
                windowDelta: (item["window_delta"] as? Int).map { UInt32($0) })
            result += Array(repeating: frame, count: pendingCopies + 1)
            pendingCopies = 0
        }
        return result
    }

    private static func headers(_ value: Any?) -> [(name: String, value: String)] {
        (value as? [[String]] ?? []).compactMap {
            $0.count == 2 ? (name: $0[0], value: $0[1]) : nil
        }
    }

    static func hexBytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).compactMap {
            UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)
        }
    }
}
