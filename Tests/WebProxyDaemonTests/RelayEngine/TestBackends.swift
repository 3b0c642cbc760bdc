import WebProxyCore
import WebProxyTestRelay

/// The recorder's loopback test backend, simulated: the first bytes of a stream choose
/// echo (default), `EOF!` (echo the first chunk, then EOF), `SINK` (read and discard) or
/// `HOLD` (never read: only the kernel buffers absorb bytes).
///
/// Events happen in FIFO order: a dial completes after the writes already issued for other
/// streams, and a write is drained before its echo is read, like on a fast loopback.
struct TestBackends {
    /// What the HOLD backend's socket buffers absorbed in the recording (05-https-flow-control,
    /// part B: the relay had granted WINDOW 3145688 when the backend stopped taking bytes).
    static let holdAbsorbs = 3_145_688
    /// The relay's backend read size.
    static let readChunk = 64 << 10

    enum Event {
        case connected(BackendID)
        case drained(BackendID, Int)
        case readable(BackendID)
    }

    private enum Mode {
        case echo
        case echoThenEnd
        case sink
        case hold
    }

    private struct Connection {
        var mode: Mode?
        var paused = false
        var outbox: [UInt8] = []
        var endPending = false
        var ended = false
        var absorbed = 0
    }

    private var connections: [BackendID: Connection] = [:]
    private var events: [Event] = []

    /// Applies the backend actions; returns nothing for other actions.
    mutating func perform(_ action: RelayAction) {
        switch action {
        case .dialBackend(let id, _):
            connections[id] = Connection()
            events.append(.connected(id))
        case .writeBackend(let id, let bytes):
            guard var connection = connections[id] else { return }
            let isFirstWrite = connection.mode == nil
            if isFirstWrite {
                let head = String(decoding: bytes.prefix(4), as: UTF8.self)
                connection.mode =
                    head == "EOF!"
                    ? .echoThenEnd : head == "SINK" ? .sink : head == "HOLD" ? .hold : .echo
            }
            switch connection.mode {
            case .echo:
                connection.outbox += bytes
            case .echoThenEnd where isFirstWrite:
                connection.outbox += bytes
                connection.endPending = true
            default:
                break
            }
            var drained = bytes.count
            if connection.mode == .hold {
                drained = min(bytes.count, Self.holdAbsorbs - connection.absorbed)
                connection.absorbed += drained
            }
            connections[id] = connection
            if drained > 0 { events.append(.drained(id, drained)) }
            if !connection.outbox.isEmpty || connection.endPending { events.append(.readable(id)) }
        case .pauseBackend(let id):
            connections[id]?.paused = true
        case .resumeBackend(let id):
            guard connections[id] != nil else { return }
            connections[id]?.paused = false
            events.append(.readable(id))
        case .closeBackend(let id):
            connections[id] = nil
        default:
            break
        }
    }

    /// The next event to feed the engine, if any.
    mutating func nextEvent() -> Event? {
        events.isEmpty ? nil : events.removeFirst()
    }

    /// One read from a readable backend: a chunk, an EOF, or nothing (paused, closed, empty).
    enum Read {
        case bytes([UInt8])
        case end
    }

    mutating func read(_ id: BackendID) -> Read? {
        guard var connection = connections[id], !connection.paused, !connection.ended else {
            return nil
        }
        defer { connections[id] = connection }
        if !connection.outbox.isEmpty {
            let chunk = Array(connection.outbox.prefix(Self.readChunk))
            connection.outbox.removeFirst(chunk.count)
            return .bytes(chunk)
        }
        if connection.endPending {
            connection.ended = true
            return .end
        }
        return nil
    }

    func isConnected(_ id: BackendID) -> Bool { connections[id] != nil }
}
