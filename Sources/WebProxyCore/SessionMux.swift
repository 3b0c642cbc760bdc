/// The client side of one relay session (PROTOCOL.md §4): allocates stream ids, keeps
/// both flow-control windows of every stream, remembers closed ids, answers PINGs, and turns
/// what is queued into uplink batches (`SessionMux+Batching.swift`).
///
/// A pure value: no I/O, no clock. The daemon feeds it local events (`open`, `enqueue`,
/// `delivered`, `close`) and decoded relay frames (`receive`), performs the returned
/// actions, and sends what `nextBatch` or `nextLaneBatch` produce.
///
/// Late frames: a relay DATA/WINDOW/CLOSE for a closed id is ignored. Ids are allocated in
/// increasing order and never reused, so every id below the next one to allocate that is not
/// live was closed: the last 4096 are in `closedStreams` (PROTOCOL.md §4.4's tombstones), older
/// ones were evicted from it but are "closed long ago" and ignored just the same. Only ids
/// never handed out (or whose OPEN has not been sent yet) make a frame a protocol error.
public struct SessionMux: Sendable {
    /// Limits and policies fixed for the life of a session.
    public struct Configuration: Hashable, Sendable {
        /// Most streams live at once; `open` is refused beyond it (the relay's cap is 128).
        public var maxLiveStreams: Int
        /// One uplink for all streams, or one per stream (lane carriers).
        public var uplink: UplinkLayout
        /// When true (websocket-lanes), a relay fault on one live stream ends only that stream
        /// (`MuxError.Scope.stream`); otherwise it ends the session.
        public var isolatesStreamFaults: Bool
        /// Receive credit is returned once at least this many delivered bytes are pending for
        /// a stream; clamped to 1...4 MiB.
        public var windowUpdateThreshold: Int

        /// The defaults match the reference relay and the `https`/`websocket` carriers.
        public init(
            maxLiveStreams: Int = 128,
            uplink: UplinkLayout = .shared,
            isolatesStreamFaults: Bool = false,
            windowUpdateThreshold: Int = SessionMux.defaultWindowUpdateThreshold
        ) {
            self.maxLiveStreams = maxLiveStreams
            self.uplink = uplink
            self.isolatesStreamFaults = isolatesStreamFaults
            self.windowUpdateThreshold = windowUpdateThreshold
        }
    }

    /// How the carrier sends uplink frames.
    public enum UplinkLayout: Hashable, Sendable {
        /// One uplink for the whole session (`https`, `websocket`): use `nextBatch`.
        case shared
        /// One uplink per stream plus lane 0 (`https-lanes`, `websocket-lanes`): use
        /// `nextLaneBatch(for:)`.
        case perStream
    }

    /// What the daemon must do after a relay frame.
    public enum Action: Hashable, Sendable, CustomStringConvertible {
        /// Write these bytes to the stream's local connection, then report them with
        /// `delivered(_:on:)`.
        case deliver(StreamID, ArraySlice<UInt8>)
        /// The relay aborted the stream: close its local connection (queued data was dropped).
        case closeLocal(StreamID)
        /// A stream that had no send credit got some: read its local connection again.
        case sendCreditAvailable(StreamID)
        /// The relay said BYE: close every local connection and build a new session.
        case sessionEnded(ByeReason)

        public var description: String {
            switch self {
            case .deliver(let stream, let bytes): "deliver \(bytes.count) bytes on stream \(stream)"
            case .closeLocal(let stream): "close local connection of stream \(stream)"
            case .sendCreditAvailable(let stream): "send credit available on stream \(stream)"
            case .sessionEnded(let reason): "session ended by the relay (\(reason))"
            }
        }
    }

    /// The optional reason of a BYE. Its description gives the length only: the content is
    /// peer-controlled and stays out of logs.
    public struct ByeReason: Hashable, Sendable, CustomStringConvertible {
        /// The raw reason bytes.
        public let bytes: ArraySlice<UInt8>

        public var description: String { "BYE reason of \(bytes.count) bytes" }
    }

    /// Pending receive credit below this stays unsent (1/16 of a window): bulk downloads
    /// return credit every 256 KiB, chatty streams rarely send WINDOW at all. It cannot stall
    /// a stream: with the relay out of credit, delivered + undelivered bytes make 4 MiB, so
    /// delivering the rest always crosses the threshold.
    public static let defaultWindowUpdateThreshold = 256 << 10
    /// Unanswered PINGs allowed before the relay is considered hostile.
    public static let maxPendingPongs = 1024

    /// Everything the mux keeps for one live stream.
    struct StreamState: Sendable {
        /// Credit the relay granted us that DATA has not used yet.
        var sendWindow = FlowWindow()
        /// Bytes accepted by `enqueue` and not yet put in a batch.
        var queue = SendQueue()
        /// What the relay may still send us, as the relay counts it.
        var receiveWindow = FlowWindow()
        /// Bytes handed out by `deliver` and not yet reported by `delivered`.
        var undelivered = 0
        /// Bytes reported delivered whose credit has not gone out in a WINDOW yet.
        var pendingCredit = 0
        /// Bytes enqueued that no WINDOW from the relay has returned yet: queued here, in
        /// flight, or held by the relay.
        var unacknowledged = 0
        var openPending = true
        var windowPending = false
        /// The local connection ended: queued DATA still goes out, then CLOSE.
        var finishing = false

        /// Bytes `enqueue` still accepts: credit not already spoken for by queued bytes.
        var availableSendCredit: Int { max(0, sendWindow.available - queue.byteCount) }
    }

    /// The configuration, with the threshold clamped.
    public let configuration: Configuration
    /// Recently closed ids (the last 4096), the tombstones of PROTOCOL.md §4.4.
    public private(set) var closedStreams = StreamTombstones()
    /// True after BYE or a session-scoped error: every call is refused from then on.
    public private(set) var isFinished = false
    /// Total bytes queued on all streams.
    public internal(set) var queuedBytes = 0
    /// Uplink bytes of all live streams that no WINDOW has returned yet: what the session
    /// may have charged to the relay's pending budget (PROTOCOL.md §4.6), at most.
    public private(set) var unacknowledgedUplinkBytes = 0
    /// DATA bytes put into uplink batches over the session's life.
    public internal(set) var uplinkBytesSent = 0
    /// Uplink bytes WINDOW frames returned over the session's life.
    public private(set) var uplinkBytesAcknowledged = 0

    private(set) var nextStreamID: UInt32
    /// The id the next `open` gives, while ids are left (websocket-lanes upgrades a lane for
    /// it ahead of time).
    public var nextStream: StreamID? { isFinished ? nil : StreamID(rawValue: nextStreamID) }
    var streams: [StreamID: StreamState] = [:]
    // Uplink work. The shared-layout FIFOs hold only live ids (entries are removed when a
    // stream is retired), so their emptiness is exact.
    var pendingPongs = FIFO<ArraySlice<UInt8>>()
    var pendingCloses = FIFO<StreamID>()
    var pendingWindows = FIFO<StreamID>()
    var pendingOpens = FIFO<StreamID>()
    var dataRotation = FIFO<StreamID>()
    /// Per-stream layout: closed lanes whose CLOSE has not been sent on them yet.
    var pendingLaneCloses: Set<StreamID> = []
    /// Reused between batches so planning does not allocate each time.
    var scratchFrames: [Frame] = []

    /// A mux for a fresh session.
    public init(configuration: Configuration = Configuration()) {
        self.init(configuration: configuration, nextStreamID: StreamID.first.rawValue)
    }

    /// A mux whose first stream gets `nextStreamID` (tests reach id exhaustion this way).
    init(configuration: Configuration, nextStreamID: UInt32) {
        var configuration = configuration
        configuration.windowUpdateThreshold = min(
            max(1, configuration.windowUpdateThreshold), Int(FlowWindow.initialCredit))
        self.configuration = configuration
        self.nextStreamID = max(nextStreamID, StreamID.first.rawValue)
    }

    // MARK: Local events

    /// Allocates the next stream id and queues its OPEN; DATA may be enqueued right away.
    /// Fails with `.refused` at the live-stream limit and with `.session` once 0xFFFFFF has
    /// been used (live streams keep working, so the daemon may drain them).
    public mutating func open() throws(MuxError) -> StreamID {
        guard !isFinished else { throw .sessionFinished }
        guard let id = StreamID(rawValue: nextStreamID) else { throw .streamIDsExhausted }
        guard streams.count < configuration.maxLiveStreams else {
            throw MuxError(.refused, .liveStreamLimit(configuration.maxLiveStreams))
        }
        nextStreamID += 1
        streams[id] = StreamState()
        if configuration.uplink == .shared { pendingOpens.append(id) }
        return id
    }

    /// Queues bytes read from the stream's local connection. Never more than
    /// `sendCredit(for:)`: beyond it (or on a stream that is not live) the call is refused.
    public mutating func enqueue(_ bytes: ArraySlice<UInt8>, on stream: StreamID) throws(MuxError) {
        guard !isFinished else { throw .sessionFinished }
        guard let index = streams.index(forKey: stream) else {
            throw MuxError(.refused, .streamNotLive(stream))
        }
        guard !streams.values[index].finishing else { throw MuxError(.refused, .streamNotLive(stream)) }
        let credit = streams.values[index].availableSendCredit
        guard bytes.count <= credit else {
            throw MuxError(.refused, .sendCreditExceeded(stream, requested: bytes.count, credit: credit))
        }
        guard !bytes.isEmpty else { return }
        let wasIdle = streams.values[index].queue.isEmpty
        streams.values[index].queue.append(bytes)
        streams.values[index].unacknowledged += bytes.count
        queuedBytes += bytes.count
        unacknowledgedUplinkBytes += bytes.count
        if wasIdle, configuration.uplink == .shared { dataRotation.append(stream) }
    }

    /// The local connection of `stream` ended: queues CLOSE, drops its queued DATA and
    /// tombstones it. If its OPEN was never sent, nothing reaches the relay at all. Returns
    /// false (and does nothing) for a stream that is not live.
    @discardableResult
    public mutating func close(_ stream: StreamID) -> Bool {
        guard let openPending = streams[stream]?.openPending else { return false }
        retire(stream)
        if !openPending { queueClose(stream) }
        return true
    }

    /// The local connection of `stream` reached end of file: what it sent is still queued
    /// and goes out (after its OPEN, if that is pending), then CLOSE. With nothing queued
    /// this is `close`. Returns false for a stream that is not live.
    @discardableResult
    public mutating func finish(_ stream: StreamID) -> Bool {
        guard let index = streams.index(forKey: stream) else { return false }
        guard !streams.values[index].queue.isEmpty else { return close(stream) }
        streams.values[index].finishing = true
        return true
    }

    /// Retires a finishing stream once its last queued byte is in a batch; its CLOSE goes
    /// in a later batch, so it follows the DATA.
    mutating func closeIfFinished(_ stream: StreamID) {
        guard let state = streams[stream], state.finishing, state.queue.isEmpty else { return }
        retire(stream)
        queueClose(stream)
    }

    /// Reports that `count` bytes from `deliver` actions were written to the local
    /// connection, so their credit can go back to the relay. Ignored for a stream that is no
    /// longer live; refused for more bytes than were delivered.
    public mutating func delivered(_ count: Int, on stream: StreamID) throws(MuxError) {
        guard !isFinished, let index = streams.index(forKey: stream) else { return }
        let outstanding = streams.values[index].undelivered
        guard count >= 0, count <= outstanding else {
            throw MuxError(.refused, .deliveredCountInvalid(stream, reported: count, outstanding: outstanding))
        }
        streams.values[index].undelivered -= count
        streams.values[index].pendingCredit += count
        guard !streams.values[index].windowPending,
            streams.values[index].pendingCredit >= configuration.windowUpdateThreshold
        else { return }
        streams.values[index].windowPending = true
        if configuration.uplink == .shared { pendingWindows.append(stream) }
    }

    // MARK: Relay frames

    /// Applies one decoded relay frame. Returns what the daemon must do (nil: nothing), or
    /// throws a scoped error. A session-scoped error finishes the mux.
    public mutating func receive(_ frame: Frame) throws(MuxError) -> Action? {
        guard !isFinished else { throw .sessionFinished }
        do throws(MuxError) {
            return try apply(frame)
        } catch {
            if error.scope == .session { isFinished = true }
            throw error
        }
    }

    private mutating func apply(_ frame: Frame) throws(MuxError) -> Action? {
        switch frame {
        case .data(let id, let payload):
            guard let index = try liveIndex(for: id, type: .data) else { return nil }
            guard !payload.isEmpty else { throw fault(.emptyData(id), on: id) }
            let window = streams.values[index].receiveWindow.credit
            guard streams.values[index].receiveWindow.consume(payload.count) else {
                throw fault(.receiveWindowOverrun(id, received: payload.count, window: window), on: id)
            }
            streams.values[index].undelivered += payload.count
            return .deliver(id, payload)

        case .window(let id, let delta):
            guard let index = try liveIndex(for: id, type: .window) else { return nil }
            guard delta > 0 else { throw fault(.zeroWindow(id), on: id) }
            let wasBlocked = streams.values[index].availableSendCredit == 0
            streams.values[index].sendWindow.grant(delta)
            let acknowledged = min(Int(delta), streams.values[index].unacknowledged)
            streams.values[index].unacknowledged -= acknowledged
            unacknowledgedUplinkBytes -= acknowledged
            uplinkBytesAcknowledged += acknowledged
            // At the 2^32−1 ceiling a grant may add nothing; only report real new credit.
            let unblocked = wasBlocked && streams.values[index].availableSendCredit > 0
            return unblocked ? .sendCreditAvailable(id) : nil

        case .close(let id):
            guard try liveIndex(for: id, type: .close) != nil else {
                // Both sides closed: a lane need not carry our CLOSE any more. (A shared
                // uplink still sends it; a late CLOSE is harmless.)
                pendingLaneCloses.remove(id)
                return nil
            }
            retire(id)
            return .closeLocal(id)

        case .ping(let token):
            guard token.count <= FrameLimits.maxPingToken else {
                throw MuxError(.session, .pingTokenTooLong(token.count))
            }
            guard pendingPongs.count < SessionMux.maxPendingPongs else {
                throw MuxError(.session, .tooManyPendingPongs(SessionMux.maxPendingPongs))
            }
            pendingPongs.append(token)
            return nil

        case .bye(let reason):
            isFinished = true
            return .sessionEnded(ByeReason(bytes: reason))

        case .open, .pong, .hello, .welcome:
            throw MuxError(.session, .unexpectedFrame(frame.type))
        }
    }

    /// Where the live stream `id` is, nil for a closed id (the frame is ignored), or an error
    /// for stream 0 and for ids the relay cannot know yet.
    private func liveIndex(for id: StreamID, type: FrameType) throws(MuxError) -> Dictionary<StreamID, StreamState>.Index? {
        guard !id.isSession else { throw MuxError(.session, .streamFrameOnSession(type)) }
        if let index = streams.index(forKey: id) {
            // The relay cannot have heard of a stream whose OPEN has not been sent.
            guard !streams.values[index].openPending else {
                throw MuxError(.session, .frameForUnopenedStream(type, id))
            }
            return index
        }
        guard id.rawValue < nextStreamID else {
            throw MuxError(.session, .frameForUnopenedStream(type, id))
        }
        return nil
    }

    /// A relay fault on live stream `id`: with isolation only the stream is aborted (and told
    /// to the relay with CLOSE), otherwise the session ends.
    private mutating func fault(_ code: MuxError.Code, on id: StreamID) -> MuxError {
        guard configuration.isolatesStreamFaults else { return MuxError(.session, code) }
        retire(id)
        queueClose(id)
        return MuxError(.stream(id), code)
    }

    /// Forgets a live stream: drops its queued data and pending uplink work, tombstones it.
    private mutating func retire(_ id: StreamID) {
        guard let state = streams.removeValue(forKey: id) else { return }
        queuedBytes -= state.queue.byteCount
        unacknowledgedUplinkBytes -= state.unacknowledged
        closedStreams.insert(id)
        guard configuration.uplink == .shared else { return }
        if state.openPending { pendingOpens.removeAll { $0 == id } }
        if state.windowPending { pendingWindows.removeAll { $0 == id } }
        if !state.queue.isEmpty { dataRotation.removeAll { $0 == id } }
    }

    private mutating func queueClose(_ id: StreamID) {
        switch configuration.uplink {
        case .shared: pendingCloses.append(id)
        case .perStream: pendingLaneCloses.insert(id)
        }
    }

    // MARK: Queries

    /// Bytes `enqueue` accepts on `stream` now (0 for a stream that is not live): read at
    /// most this much from its local connection.
    public func sendCredit(for stream: StreamID) -> Int {
        streams[stream]?.availableSendCredit ?? 0
    }

    /// Bytes queued on `stream` and not yet in a batch.
    public func queuedBytes(on stream: StreamID) -> Int {
        streams[stream]?.queue.byteCount ?? 0
    }

    /// Streams with more than `bytes` of uplink that no WINDOW has returned yet.
    public func streamCount(unacknowledgedOver bytes: Int) -> Int {
        streams.values.reduce(0) { $0 + ($1.unacknowledged > bytes ? 1 : 0) }
    }

    /// Bytes delivered to the daemon on `stream` and not yet reported written.
    public func undeliveredBytes(on stream: StreamID) -> Int {
        streams[stream]?.undelivered ?? 0
    }

    /// Whether `stream` is open (not closed by either side).
    public func isLive(_ stream: StreamID) -> Bool { streams.keys.contains(stream) }

    /// Number of open streams.
    public var liveStreamCount: Int { streams.count }
}
