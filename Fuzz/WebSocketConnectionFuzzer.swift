// Fuzz target: WebSocketConnection (client and server roles) fed arbitrary bytes split at
// random points, with our own close handshake, deadline and end of stream mixed in.
//
// Input: [options] [split seed] [bytes...]
//   options bit 0: role (0 client, 1 server); bits 1-2: message limit 0 / 10 / 1000 / 2 MiB;
//   bit 3: we send Close first; bit 4: the close deadline passes at the end; bit 5: the
//   transport ends at the end
// Invariants: messages stay within the limit; at most one `.closed`, always the last action,
// and nothing after it; every write is exactly one valid frame for the peer's role (a Pong
// of at most 125 bytes, or a Close with an allowed code) and at most one Close is ever
// written; sending is refused once closing.
import WebProxyNet

@_cdecl("LLVMFuzzerTestOneInput")
public func webSocketConnectionFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.byte()
    let seed = input.byte()
    let bytes = input.rest()
    let maxMessageBytes = [0, 10, 1000, 2 << 20][Int(options >> 1 & 3)]
    var connection: WebSocketConnection
    if options & 1 == 0 {
        let masks = WebSocketMaskSource(keysPerFill: 4) { buffer in
            for index in buffer.indices {
                buffer[index] = UInt8(truncatingIfNeeded: index &* 37 &+ 11)
            }
        }
        connection = WebSocketConnection(clientWithMasks: masks, maxMessageBytes: maxMessageBytes)
    } else {
        connection = WebSocketConnection(serverWithMaxMessageBytes: maxMessageBytes)
    }
    var checker = ActionChecker(connection: connection)
    if options & 8 != 0 {
        guard let close = connection.close(code: .normalClosure, reason: "bye") else {
            invariant(false, "close refused on an open connection")
            return 0
        }
        checker.checkWrite(close)
        invariant(connection.state == .closing, "close did not move to closing")
    }
    for chunk in bytes.chunked(seed: seed) {
        checker.check(connection.receive(chunk), state: connection.state)
        if connection.state != .open {
            invariant(
                connection.sendBinary([1, 2, 3]) == nil,
                "sendBinary allowed while \(connection.state)")
        }
    }
    if options & 0x10 != 0 {
        checker.check(connection.closeDeadlinePassed(), state: connection.state)
    }
    if options & 0x20 != 0 {
        checker.check(connection.receiveEndOfStream(), state: connection.state)
    }
    return 0
}

private struct ActionChecker {
    let role: WebSocketRole
    let maxMessageBytes: Int
    var closedSeen = false
    var closeFramesWritten = 0

    init(connection: WebSocketConnection) {
        role = connection.role
        maxMessageBytes = connection.maxMessageBytes
    }

    mutating func check(_ actions: [WebSocketAction], state: WebSocketConnectionState) {
        for (index, action) in actions.enumerated() {
            invariant(!closedSeen, "action after .closed")
            switch action {
            case .message(let message):
                invariant(
                    message.count <= maxMessageBytes,
                    "message of \(message.count) bytes over the limit")
            case .pong(let payload), .ping(let payload):
                invariant(
                    payload.count <= WebSocketFrame.maxControlPayload, "control payload too long")
            case .write(let bytes):
                checkWrite(bytes)
            case .closed:
                invariant(index == actions.count - 1, ".closed is not the last action")
                closedSeen = true
            }
        }
        invariant(closedSeen == (state == .closed), "state \(state) disagrees with the actions")
    }

    /// A write is one whole frame the peer accepts: a Pong or a Close, at most one Close ever.
    mutating func checkWrite(_ bytes: [UInt8]) {
        var peer = WebSocketFrameParser(
            role: role == .client ? .server : .client, maxDataPayload: 0)
        peer.receive(bytes)
        guard let frame = try? peer.next() else {
            invariant(false, "written bytes are not one valid frame")
            return
        }
        invariant(!peer.hasPartialFrame, "bytes left over after the written frame")
        switch frame.opcode {
        case .pong:
            invariant(frame.payload.count <= WebSocketFrame.maxControlPayload, "pong too long")
        case .close:
            closeFramesWritten += 1
            invariant(closeFramesWritten == 1, "a second Close frame was written")
            if !frame.payload.isEmpty {
                invariant(frame.payload.count >= 2, "one-byte close payload")
                let code = WebSocketCloseCode(
                    rawValue: UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]))
                invariant(code.isAllowedOnWire, "close code \(code) not allowed on the wire")
            }
        default:
            invariant(false, "wrote a \(frame.opcode) frame")
        }
    }
}
