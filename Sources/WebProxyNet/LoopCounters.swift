/// What one event loop has done since it started, counted where it happens: the figures
/// that explain a run's CPU per GiB moved (the metrics' `webproxyd_loop_*_total`). Kept on
/// the loop thread.
public struct LoopCounters: Hashable, Sendable {
    /// Returns from `epoll_wait` with work to do: the loop's wake-ups.
    public var wakeups = 0
    /// `read(2)` calls on TCP sockets that returned bytes or the peer's EOF.
    public var socketReads = 0
    /// `sendmsg(2)` calls on TCP sockets.
    public var socketWrites = 0
    /// TLS records read from peers, and written to them (headers walked in the ciphertext).
    public var tlsRecordsReceived = 0
    public var tlsRecordsSent = 0
    /// Whole WebSocket data messages received, and sent.
    public var webSocketMessagesReceived = 0
    public var webSocketMessagesSent = 0

    public init() {}
}

/// Counts the TLS records in one direction of a ciphertext stream by walking their 5-byte
/// headers (type, version, 16-bit length), across any split of the stream into reads.
struct TLSRecordCounter {
    /// Bytes of the current record's body not seen yet.
    private var bodyRemaining = 0
    /// Bytes of the next header seen so far (0 to 4), and the length they hold.
    private var headerSeen = 0
    private var length = 0

    /// Walks `ciphertext`; returns how many records began in it.
    mutating func count(_ ciphertext: UnsafeRawBufferPointer) -> Int {
        var records = 0
        var index = 0
        while index < ciphertext.count {
            if bodyRemaining > 0 {
                let step = min(bodyRemaining, ciphertext.count - index)
                bodyRemaining -= step
                index += step
                continue
            }
            let byte = Int(ciphertext[index])
            index += 1
            if headerSeen == 3 { length = byte << 8 }
            if headerSeen == 4 { length |= byte }
            headerSeen += 1
            if headerSeen == 5 {
                records += 1
                headerSeen = 0
                bodyRemaining = length
            }
        }
        return records
    }
}
