@testable import WebProxyNet

/// The masking key the fixture recorder always used.
let fixtureMaskingKey: UInt32 = 0x37FA_213D

/// A mask source that yields `key` every time, as the fixture recorder did.
func fixedMasks(_ key: UInt32 = fixtureMaskingKey) -> WebSocketMaskSource {
    WebSocketMaskSource(keysPerFill: 4) { buffer in
        for offset in stride(from: 0, to: buffer.count, by: 4) {
            buffer[offset] = UInt8(key >> 24)
            buffer[offset + 1] = UInt8(key >> 16 & 0xFF)
            buffer[offset + 2] = UInt8(key >> 8 & 0xFF)
            buffer[offset + 3] = UInt8(key & 0xFF)
        }
    }
}

/// One frame as a peer would send it: masked with `key` when given.
func frameBytes(
    _ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, maskingKey: UInt32? = nil
) -> [UInt8] {
    var out: [UInt8] = []
    WebSocketFrameEncoder.encode(opcode, payload: payload[...], fin: fin, maskingKey: maskingKey, into: &out)
    return out
}

/// The Close frame a connection of `role` writes for `code` (masked with the fixture key
/// when the role is client, as `fixedMasks()` makes it).
func closeFrameBytes(_ code: WebSocketCloseCode?, reason: String = "", from role: WebSocketRole) -> [UInt8] {
    var payload: [UInt8] = []
    if let code { payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + Array(reason.utf8) }
    return frameBytes(.close, payload, maskingKey: role == .client ? fixtureMaskingKey : nil)
}

/// Actions with consecutive writes merged, so different input splits compare equal.
func mergingWrites(_ actions: [WebSocketAction]) -> [WebSocketAction] {
    var merged: [WebSocketAction] = []
    for action in actions {
        if case .write(let more) = action, case .write(let existing)? = merged.last {
            merged[merged.count - 1] = .write(existing + more)
        } else {
            merged.append(action)
        }
    }
    return merged
}

/// Feeds `pieces` to `connection`, collecting every action; optionally ends the stream.
func run(
    _ connection: inout WebSocketConnection, _ pieces: [ArraySlice<UInt8>], endOfStream: Bool = false
) -> [WebSocketAction] {
    var actions: [WebSocketAction] = []
    for piece in pieces { actions += connection.receive(piece) }
    if endOfStream { actions += connection.receiveEndOfStream() }
    return actions
}
