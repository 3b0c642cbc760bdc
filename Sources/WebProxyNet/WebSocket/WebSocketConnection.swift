/// One WebSocket endpoint as a state machine: bytes in, actions out. It reassembles binary
/// messages up to a cap, answers Pings, runs the close handshake and fails the connection on
/// protocol violations. The close deadline is the caller's timer (`closeDeadlinePassed`).
public struct WebSocketConnection: Sendable {
    public let role: WebSocketRole
    /// Largest binary message accepted, whether whole or reassembled from fragments.
    public let maxMessageBytes: Int
    public private(set) var state = WebSocketConnectionState.open
    private var parser: WebSocketFrameParser
    private var encoder: WebSocketFrameEncoder
    private var fragments: [UInt8]?

    /// A client endpoint; its frames are masked with keys from `masks`.
    public init(clientWithMasks masks: WebSocketMaskSource, maxMessageBytes: Int) {
        self.role = .client
        self.maxMessageBytes = maxMessageBytes
        self.parser = WebSocketFrameParser(role: .client, maxDataPayload: maxMessageBytes)
        self.encoder = WebSocketFrameEncoder(clientMasks: masks)
    }

    /// A server endpoint (the test relay); its frames go out unmasked.
    public init(serverWithMaxMessageBytes maxMessageBytes: Int) {
        self.role = .server
        self.maxMessageBytes = maxMessageBytes
        self.parser = WebSocketFrameParser(role: .server, maxDataPayload: maxMessageBytes)
        self.encoder = WebSocketFrameEncoder()
    }

    /// Handles received bytes. Bytes after the connection closed are ignored.
    public mutating func receive(_ bytes: [UInt8]) -> [WebSocketAction] {
        guard state != .closed else { return [] }
        parser.receive(bytes)
        return drainFrames()
    }

    /// Handles received bytes. Bytes after the connection closed are ignored.
    public mutating func receive(_ bytes: ArraySlice<UInt8>) -> [WebSocketAction] {
        guard state != .closed else { return [] }
        parser.receive(bytes)
        return drainFrames()
    }

    /// Handles received bytes (copied once, into the parser). Bytes after the connection
    /// closed are ignored.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [WebSocketAction] {
        guard state != .closed else { return [] }
        parser.receive(bytes)
        return drainFrames()
    }

    /// The transport ended (FIN or reset). Before a completed close handshake that is an
    /// abrupt end, reported as `.endOfStream`.
    public mutating func receiveEndOfStream() -> [WebSocketAction] {
        guard state != .closed else { return [] }
        state = .closed
        return [.closed(.endOfStream)]
    }

    /// The caller's timer for the peer's Close expired while closing.
    public mutating func closeDeadlinePassed() -> [WebSocketAction] {
        guard state == .closing else { return [] }
        state = .closed
        return [.closed(.timedOut)]
    }

    /// Frames a binary message to write, or nil once closing or closed.
    public mutating func sendBinary(_ payload: ArraySlice<UInt8>) -> [UInt8]? {
        guard state == .open else { return nil }
        var out: [UInt8] = []
        encoder.encode(.binary, payload: payload, into: &out)
        return out
    }

    /// Frames a binary message to write, or nil once closing or closed.
    public mutating func sendBinary(_ payload: [UInt8]) -> [UInt8]? {
        sendBinary(payload[...])
    }

    /// Frames a binary message without copying it: masks `payload` in place (client) and
    /// returns the header to write before it, or nil (payload untouched) once closing or closed.
    public mutating func sendBinaryInPlace(_ payload: inout [UInt8]) -> [UInt8]? {
        guard state == .open else { return nil }
        return encoder.encodeInPlace(.binary, payload: &payload)
    }

    /// Frames a Ping (payload at most 125 bytes) to write, or nil once closing or closed.
    public mutating func sendPing(_ payload: [UInt8] = []) -> [UInt8]? {
        precondition(payload.count <= WebSocketFrame.maxControlPayload, "ping payload over 125 bytes")
        guard state == .open else { return nil }
        var out: [UInt8] = []
        encoder.encode(.ping, payload: payload, into: &out)
        return out
    }

    /// Starts the close handshake: returns the Close frame to write and moves to `.closing`;
    /// nil if a Close was already sent. `reason` must fit in 123 UTF-8 bytes.
    public mutating func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") -> [UInt8]? {
        precondition(reason.utf8.count <= WebSocketFrame.maxControlPayload - 2, "close reason over 123 bytes")
        guard state == .open else { return nil }
        state = .closing
        return closeFrame(code: code, reason: reason)
    }

    private mutating func drainFrames() -> [WebSocketAction] {
        var actions: [WebSocketAction] = []
        while state != .closed {
            parser.maxDataPayload = maxMessageBytes - (fragments?.count ?? 0)
            do {
                guard let frame = try parser.next() else { break }
                try handle(frame, into: &actions)
            } catch {
                fail(error, into: &actions)
            }
        }
        return actions
    }

    private mutating func handle(_ frame: WebSocketFrame, into actions: inout [WebSocketAction])
        throws(WebSocketError)
    {
        switch frame.opcode {
        case .text:
            throw .textMessage
        case .binary:
            guard fragments == nil else { throw .expectedContinuation }
            if frame.fin {
                actions.append(.message(frame.payload))
            } else {
                fragments = frame.payload
            }
        case .continuation:
            guard fragments != nil else { throw .unexpectedContinuation }
            fragments?.append(contentsOf: frame.payload)
            if frame.fin, let message = fragments {
                fragments = nil
                actions.append(.message(message))
            }
        case .ping:
            if state == .open {
                var out: [UInt8] = []
                encoder.encode(.pong, payload: frame.payload, into: &out)
                actions.append(.write(out))
                actions.append(.ping(frame.payload))
            }
        case .pong:
            actions.append(.pong(frame.payload))
        case .close:
            let (code, reason) = try Self.parseClose(frame.payload)
            if state == .open {
                // Echo the peer's code (no reason), as the reference relay does.
                actions.append(.write(closeFrame(code: code, reason: "")))
            }
            state = .closed
            actions.append(.closed(.clean(code: code, reason: reason)))
        }
    }

    private mutating func fail(_ error: WebSocketError, into actions: inout [WebSocketAction]) {
        if state == .open { actions.append(.write(closeFrame(code: error.closeCode, reason: ""))) }
        state = .closed
        fragments = nil
        actions.append(.closed(.failed(error)))
    }

    private mutating func closeFrame(code: WebSocketCloseCode?, reason: String) -> [UInt8] {
        var payload: [UInt8] = []
        if let code {
            payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
            payload.append(contentsOf: reason.utf8)
        }
        var out: [UInt8] = []
        encoder.encode(.close, payload: payload, into: &out)
        return out
    }

    /// Empty, or a 2-byte code the peer may send followed by a UTF-8 reason.
    static func parseClose(_ payload: [UInt8]) throws(WebSocketError) -> (WebSocketCloseCode?, String) {
        if payload.isEmpty { return (nil, "") }
        guard payload.count >= 2 else { throw .invalidClosePayload }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isAllowedOnWire else { throw .invalidCloseCode }
        guard let reason = String(validating: payload[2...], as: UTF8.self) else {
            throw .invalidCloseReason
        }
        return (code, reason)
    }
}
