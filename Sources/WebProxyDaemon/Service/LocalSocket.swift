import WebProxyNet
import WebProxySession

/// The shell's side of one accepted local (Telegram) connection: the socket, the bytes read
/// but not yet allowed through to the session (at most one read chunk: reading pauses while
/// any are held), and the count of relay bytes the kernel has taken, for `localWritten`.
final class LocalSocket: ByteStreamDelegate {
    /// Bytes held back for want of read allowance; reading pauses at this many.
    static let inboxLimit = EventLoop.readChunkSize

    let id: ConnectionID
    let tcp: TCPConnection
    private weak var owner: RelayService?
    /// Read but not yet handed to the session.
    var inbox: [UInt8] = []
    /// The peer's EOF, held until the inbox is handed over.
    var eofPending = false
    /// Whether the session allows reading (its last pause/resume).
    var sessionAllowsReading = true
    /// The DC its obfuscated2 init names, when the primary session carries it: a DC's first
    /// connection is its chat (`RelayService.classify`).
    var primaryDC: Int16?
    /// Relay bytes handed to the socket with `write`.
    private var handed = 0
    /// Of those, bytes already reported as written.
    private var reported = 0

    init(id: ConnectionID, tcp: TCPConnection, owner: RelayService) {
        self.id = id
        self.tcp = tcp
        self.owner = owner
        // Any queued byte owes a notice, and the notice comes when the queue is empty, so every
        // byte the kernel takes is reported (the session returns WINDOW credit only then).
        tcp.writeLimits = TCPConnection.WriteLimits(highWatermark: 1, lowWatermark: 0, limit: 8 << 20)
    }

    /// Reads while the session allows it and nothing is held back.
    func updateReading() {
        guard tcp.isOpen else { return }
        if sessionAllowsReading && inbox.count < Self.inboxLimit && !eofPending {
            if tcp.isReadingPaused { tcp.resumeReading() }
        } else if !tcp.isReadingPaused {
            tcp.pauseReading()
        }
    }

    /// Queues relay bytes; returns how many more bytes the kernel has taken since the last
    /// report (nil when the socket refused them: it is then broken).
    func write(_ bytes: ArraySlice<UInt8>) -> Int? {
        let accepted = bytes.withUnsafeBytes { raw in
            do {
                try tcp.write(raw)
                return true
            } catch {
                return false
            }
        }
        guard accepted else { return nil }
        handed += bytes.count
        return takeWrittenCount()
    }

    /// Bytes the kernel took since the last call.
    func takeWrittenCount() -> Int {
        let accepted = handed - tcp.queuedWriteBytes
        defer { reported = max(reported, accepted) }
        return max(0, accepted - reported)
    }

    // MARK: ByteStreamDelegate

    func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        inbox.append(contentsOf: bytes)
        updateReading()
        owner?.localDataArrived(id)
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        eofPending = true
        owner?.localDataArrived(id)
    }

    func streamDidBecomeWritable(_ connection: any ByteStream) {
        owner?.localDrained(id)
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        owner?.localClosed(id, failed: error != nil)
    }
}
