import WebProxyCore

/// One relay session's behaviour, for all four carriers (PROTOCOL.md §4 and §5): it
/// composes `SessionMux` with the carrier machines of WebProxyCore and decides everything;
/// the I/O shell only performs the actions. Built by `SessionSupervisor` once the relay
/// answered WELCOME; it reports its end through `outcome` and has then closed every local
/// connection it carried (fail closed).
///
/// Bounds: a stream's uplink queue stays within its send credit and `streamQueueLimit`;
/// a stream's local write queue within its 4 MiB receive window (the relay cannot send
/// more before a WINDOW, and WINDOW follows `localWritten`); all queues together within
/// `globalQueueLimit`, by stopping reads and, on the https carriers, holding back the next
/// poll (the relay then keeps the data).
struct SessionDriver: Sendable {
    enum Outcome: Hashable, Sendable {
        case running
        /// The session is over: rebuild.
        case failed(SessionFailure)
        /// websocket-lanes: idle for the recycle period; build a fresh session quietly.
        case idleExpired
    }

    let session: EstablishedSession
    let api: RelayAPI
    let batchLimit: Int
    let settings: SessionSettings
    /// websocket carriers: no new message while the socket holds this many bytes the kernel
    /// has not taken, and no message larger (a whole batch, when the relay's batches are
    /// smaller).
    var socketBufferLimit: Int { min(batchLimit, Self.socketBufferBytes) }
    /// Most uplink bytes a stream may queue. The https carriers: `perStreamQueueLimit` (one
    /// batch), so a stream alone can fill the next `/up` body. The WebSocket carriers send a
    /// message whenever the socket has room, so two messages are enough to keep it busy; more
    /// would wait in the daemon's memory instead of the local socket's kernel buffer.
    var streamQueueLimit: Int {
        switch mode {
        case .https, .httpsLanes: settings.perStreamQueueLimit
        case .websocket, .websocketLanes: min(settings.perStreamQueueLimit, 2 * socketBufferLimit)
        }
    }
    var mode: CarrierMode { session.carrierMode }
    private(set) var outcome = Outcome.running
    var isRunning: Bool { outcome == .running }

    var mux: SessionMux
    var exchanges: HTTPExchanges
    var connections: [ConnectionID: LocalConnection] = [:]
    var connectionByStream: [StreamID: ConnectionID] = [:]
    /// Sum of the connections' `writeQueued`.
    var writeQueuedTotal = 0
    /// What the session holds, with its peaks, as of the end of the last step.
    private(set) var queued = QueuedBytes()
    /// The session's uplink budget now: `settings.uplinkBudget`, lowered while the relay
    /// signals pressure (503 on `/up`).
    private(set) var uplinkBudget: Int
    /// How much uplink the path needs in flight, from the relay's WINDOW returns.
    private(set) var pacer = UplinkPacer()
    /// When a byte or a relay frame last moved (for the watchdog); nil before `start`.
    private(set) var lastProgress: MonotonicInstant?

    // https
    var uplink: UplinkSequencer?
    var downlink: DownlinkCursor?
    // https-lanes
    var lanes: LaneTable?
    /// Lanes whose local connection is gone but whose CLOSE has not gone out yet.
    var closingLanes: Set<StreamID> = []
    /// Polls held back while the local write queues are full (`.session`: the https
    /// downlink, or lane 0).
    var deferredPolls: Set<StreamID> = []
    // websocket, websocket-lanes
    var sockets: [SocketID: CarrierSocket] = [:]
    var sessionSocket: SocketID?
    var laneSockets: [StreamID: SocketID] = [:]
    /// websocket-lanes: the lane socket upgraded for the mux's next stream id before any
    /// connection needs it; nothing is sent on it until a connection takes it.
    var spareLane: SocketID?
    var laneIdleArmed = false

    init(session: EstablishedSession, api: RelayAPI, batchLimit: Int, settings: SessionSettings) {
        self.session = session
        self.api = api
        self.batchLimit = min(max(batchLimit, SessionMux.minimumBatchBytes), FrameLimits.defaultBatchBytes)
        self.settings = settings
        uplinkBudget = settings.uplinkBudget
        let perStream = session.carrierMode == .httpsLanes || session.carrierMode == .websocketLanes
        mux = SessionMux(
            configuration: SessionMux.Configuration(
                maxLiveStreams: settings.maxStreams, uplink: perStream ? .perStream : .shared,
                isolatesStreamFaults: session.carrierMode == .websocketLanes,
                windowUpdateThreshold: settings.windowUpdateThreshold))
        exchanges = HTTPExchanges(policy: settings.retry, silenceBound: settings.requestSilence)
        let channel = CarrierChannel(api: api, session: session.token, lane: nil)
        switch session.carrierMode {
        case .https:
            uplink = UplinkSequencer(channel: channel)
            downlink = DownlinkCursor(channel: channel)
        case .httpsLanes:
            lanes = LaneTable(api: api, session: session.token)
        case .websocket, .websocketLanes:
            break
        }
    }

    /// Starts the carrier: the first poll, the session socket, or the lane idle timer.
    mutating func start(step: inout SessionStep) {
        lastProgress = step.now
        switch mode {
        case .https: poll(.session, step: &step)
        case .httpsLanes: poll(.session, step: &step)
        case .websocket: sessionSocket = openSocket(lane: nil, step: &step)
        case .websocketLanes:
            openSpareLane(step: &step)
            updateLaneIdleTimer(step: &step)
        }
    }

    /// Whether the relay owes the session work and nothing moved for `settings.stallBound`:
    /// uplink bytes wait for the carrier, or a stream is out of send credit while everything
    /// the relay sent it was written (so its WINDOW is the relay's to send). A local client
    /// that stops reading stalls only its own stream and does not count.
    func isStalled(at now: MonotonicInstant) -> Bool {
        guard isRunning, let lastProgress, lastProgress.duration(to: now) >= settings.stallBound else { return false }
        if mux.queuedBytes > 0 { return true }
        return connections.values.contains { local in
            guard let stream = local.stream, local.writeQueued == 0 else { return false }
            return mux.sendCredit(for: stream) == 0 && mux.undeliveredBytes(on: stream) == 0
        }
    }

    /// The watchdog's verdict: a stalled session is logged with its state and rebuilt.
    mutating func checkProgress(step: inout SessionStep) {
        guard isStalled(at: step.now) else { return }
        step.emit(.log(.sessionStalled(stateSummary)))
        fail(SessionFailure(.stalled, "no progress for \(settings.stallBound) with work queued"), step: &step)
    }

    /// The session's state in counts, for a stall report: never a token or a payload byte.
    var stateSummary: String {
        var parts = ["\(mode)", "requests \(exchanges.summary)"]
        if let uplink { parts.append("uplink \(uplink.isIdle ? "idle" : "busy")") }
        if !deferredPolls.isEmpty { parts.append("\(deferredPolls.count) polls deferred") }
        for connection in connections.keys.sorted() {
            guard let local = connections[connection], let stream = local.stream else { continue }
            parts.append(
                "stream \(stream): send credit \(mux.sendCredit(for: stream)), queued \(mux.queuedBytes(on: stream)), undelivered \(mux.undeliveredBytes(on: stream)), writing \(local.writeQueued), reading \(local.reading)")
        }
        return parts.joined(separator: "; ")
    }

    // MARK: Local connections

    var connectionCount: Int { connections.count }

    func carries(_ connection: ConnectionID) -> Bool { connections[connection] != nil }

    /// Bytes the shell may read from `connection` now: within the stream's send credit,
    /// its uplink queue bound, the global bound and the session's uplink budget.
    func readAllowance(for connection: ConnectionID) -> Int {
        guard isRunning, let local = connections[connection] else { return 0 }
        let credit = local.stream.map { mux.sendCredit(for: $0) } ?? Int(FlowWindow.initialCredit)
        let queued = local.stream.map { mux.queuedBytes(on: $0) } ?? 0
        let globalRoom = settings.globalQueueLimit - mux.queuedBytes - writeQueuedTotal
        let budgetRoom = uplinkBudget - mux.unacknowledgedUplinkBytes
        return max(0, min(credit, streamQueueLimit - queued, globalRoom, budgetRoom))
    }

    /// What the pacer lets the next batch carry of bulk DATA: each bulk stream an equal share
    /// of the target in flight and one batch more (so together they stay near it, and one
    /// whose backend stopped reading holds back only itself), at most `batchBulkBytes` per
    /// batch, so each batch (one WebSocket message, which the relay acknowledges whole, and
    /// which chat may have to wait behind) is a few milliseconds of the path.
    /// Nil when pacing is off and on every carrier but websocket (see `UplinkPacer`).
    var uplinkAllowance: SessionMux.UplinkAllowance? {
        guard settings.pacesUplink, mode == .websocket else { return nil }
        let bulkStreams = max(1, mux.streamCount(unacknowledgedOver: UplinkPacer.lightStreamBytes))
        let batchBulk = pacer.batchBulkBytes
        return SessionMux.UplinkAllowance(
            bulkBytes: batchBulk,
            streamInFlight: max(UplinkPacer.lightStreamBytes, pacer.target / bulkStreams + batchBulk),
            lightStreamBytes: UplinkPacer.lightStreamBytes)
    }

    /// The relay refused an `/up` for want of room (503): halve the uplink budget.
    mutating func relayUnderPressure() {
        uplinkBudget = max(min(Self.minimumUplinkBudget, settings.uplinkBudget), uplinkBudget / 2)
    }

    /// The relay took an `/up`: win back part of the budget.
    mutating func relayAcceptedUplink() {
        uplinkBudget = min(settings.uplinkBudget, uplinkBudget + Self.uplinkBudgetStep)
    }

    /// The transport's high watermark (`TCPConnection.WriteLimits.default`), so a socket held
    /// back at `socketBufferLimit` always owes a drain notice. More would only wait in memory
    /// (under load on loopback, up to two batches per socket did), with chat frames behind it.
    static let socketBufferBytes = 256 << 10

    static let minimumUplinkBudget = 2 << 20
    static let uplinkBudgetStep = 256 << 10

    /// Takes on a local connection (the supervisor enforces `maxStreams`). `reading` says
    /// whether the shell is reading it already.
    mutating func admit(_ connection: ConnectionID, reading: Bool, step: inout SessionStep) {
        guard isRunning else { return }
        connections[connection] = LocalConnection(stream: nil, reading: reading)
        // A lane socket needs its stream id at once: the spare lane is upgraded for it
        // already, or its handshake overlaps the first read.
        if mode == .websocketLanes, let stream = openStream(for: connection, step: &step) {
            if !takeSpareLane(for: stream, step: &step) { openLane(for: connection, step: &step) }
            openSpareLane(step: &step)
        }
        finishStep(step: &step)
    }

    /// Handles an event routed to this session. Events for unknown ids are stale and ignored.
    mutating func handle(_ event: SessionEvent, step: inout SessionStep) {
        guard isRunning else { return }
        switch event {
        case .localRead(let connection, let bytes): localRead(connection, bytes, step: &step)
        case .localWritten(let connection, let count): localWritten(connection, count, step: &step)
        case .localEOF(let connection): localEnded(connection, flushing: true, step: &step)
        case .localError(let connection): localEnded(connection, flushing: false, step: &step)
        case .httpResponse(let id, let response, let wallClock):
            guard let exchange = exchanges.take(id) else { return }
            httpAnswered(exchange, id: id, response, wallClockSeconds: wallClock, step: &step)
        case .httpFailed(let id):
            guard let exchange = exchanges.take(id) else { return }
            retry(exchange, id: id, .noResponse, wallClockSeconds: 0, step: &step)
        case .webSocketOpened(let id, let response): socketOpened(id, response, step: &step)
        case .webSocketUpgradeFailed(let id, let response): socketUpgradeFailed(id, response, step: &step)
        case .webSocketMessage(let id, let message): socketMessage(id, message, step: &step)
        case .webSocketPong(let id): heard(id, step: &step)
        case .webSocketDrained(let id, let buffered): sockets[id]?.bufferedBytes = max(0, buffered)
        case .webSocketClosed(let id, _): socketEnded(id, "the relay closed the WebSocket", step: &step)
        case .timerFired(.retry(let id)): _ = exchanges.retryTimerFired(id, step: &step)
        case .timerFired(.socketLiveness(let id)): livenessCheck(id, step: &step)
        case .timerFired(.laneIdle): laneIdleExpired(step: &step)
        case .progressCheck: checkProgress(step: &step)
        case .start, .shutdown, .localAccepted, .timerFired(.rebuild), .timerFired(.admission): return
        }
        finishStep(step: &step)
    }

    /// Ends the session for shutdown: everything is cancelled and every local connection closed.
    mutating func shutDown(step: inout SessionStep) {
        guard isRunning else { return }
        outcome = .failed(SessionFailure(.relayEnded, "the daemon is shutting down"))
        tearDown(closing: .shutdown, step: &step)
    }

    private mutating func localRead(_ connection: ConnectionID, _ bytes: ArraySlice<UInt8>, step: inout SessionStep) {
        guard var local = connections[connection] else { return }
        guard bytes.count <= readAllowance(for: connection) else {
            close(connection, .readOverrun, step: &step)
            return
        }
        guard !bytes.isEmpty else { return }
        lastProgress = step.now
        if local.stream == nil {
            guard let stream = openStream(for: connection, step: &step) else { return }
            local.stream = stream
        }
        guard let stream = local.stream else { return }
        do {
            try mux.enqueue(bytes, on: stream)
        } catch {
            close(connection, .readOverrun, step: &step)
        }
    }

    private mutating func localWritten(_ connection: ConnectionID, _ count: Int, step: inout SessionStep) {
        guard let local = connections[connection], count > 0, count <= local.writeQueued else { return }
        connections[connection]?.writeQueued -= count
        writeQueuedTotal -= count
        lastProgress = step.now
        if let stream = local.stream { try? mux.delivered(count, on: stream) }
        guard !deferredPolls.isEmpty, writeQueuedTotal < settings.globalQueueLimit else { return }
        let lanes = deferredPolls.sorted()
        deferredPolls = []
        for lane in lanes { poll(lane, step: &step) }
    }

    /// A local connection ended. After EOF what it sent still reaches the relay before
    /// CLOSE (`flushing`); after an error the stream is aborted.
    private mutating func localEnded(_ connection: ConnectionID, flushing: Bool, step: inout SessionStep) {
        guard let local = connections.removeValue(forKey: connection) else { return }
        writeQueuedTotal -= local.writeQueued
        guard let stream = local.stream else { return }
        connectionByStream[stream] = nil
        if flushing { mux.finish(stream) } else { mux.close(stream) }
        if mode == .httpsLanes, mux.hasPendingUplink(for: stream) { closingLanes.insert(stream) }
    }

    /// Allocates the stream of a connection. Fails the session when ids are exhausted.
    private mutating func openStream(for connection: ConnectionID, step: inout SessionStep) -> StreamID? {
        do {
            let stream = try mux.open()
            connections[connection]?.stream = stream
            connectionByStream[stream] = connection
            return stream
        } catch {
            if error.scope == .session {
                fail(SessionFailure(.streamIDsExhausted, error.description), step: &step)
            } else {
                close(connection, .streamLimit, step: &step)
            }
            return nil
        }
    }

    /// Closes a local connection from this side and aborts its stream.
    mutating func close(_ connection: ConnectionID, _ reason: LocalCloseReason, step: inout SessionStep) {
        guard connections[connection] != nil else { return }
        step.emit(.closeLocal(connection, reason))
        localEnded(connection, flushing: false, step: &step)
    }

    // MARK: Relay frames

    /// Applies decoded relay frames. `lane` is the lane they came on (every frame must carry
    /// its id), nil on the shared carriers.
    mutating func receive(_ frames: [Frame], lane: StreamID?, step: inout SessionStep) {
        step.frames.received += frames.count
        if !frames.isEmpty { lastProgress = step.now }
        for frame in frames {
            guard isRunning else { return }
            if let lane, frame.stream != lane {
                let message = "the relay sent \(frame.type.name) for stream \(frame.stream) on lane \(lane)"
                if mode == .websocketLanes {
                    abortLane(lane, message, step: &step)
                } else {
                    fail(SessionFailure(.protocolViolation, message), step: &step)
                }
                return
            }
            let action: SessionMux.Action?
            do {
                action = try mux.receive(frame)
            } catch {
                switch error.scope {
                case .session:
                    fail(SessionFailure(.protocolViolation, error.description), step: &step)
                case .stream(let stream):
                    // The mux aborted the stream and queued its CLOSE on the lane.
                    step.emit(.log(.streamAborted(stream, error.description)))
                    relayClosed(stream, .streamFault, step: &step)
                case .refused:
                    break
                }
                continue
            }
            switch action {
            case .deliver(let stream, let bytes):
                guard let connection = connectionByStream[stream] else { continue }
                connections[connection]?.writeQueued += bytes.count
                writeQueuedTotal += bytes.count
                step.emit(.writeLocal(connection, bytes))
            case .closeLocal(let stream):
                relayClosed(stream, .relayClosedStream, step: &step)
            case .sessionEnded(let reason):
                fail(SessionFailure(.relayEnded, "the relay ended the session (\(reason))"), step: &step)
            case .sendCreditAvailable, nil:
                break
            }
        }
    }

    /// The stream is over on the relay's side (the mux has retired it): close its connection.
    private mutating func relayClosed(_ stream: StreamID, _ reason: LocalCloseReason, step: inout SessionStep) {
        guard let connection = connectionByStream.removeValue(forKey: stream),
            let local = connections.removeValue(forKey: connection)
        else { return }
        writeQueuedTotal -= local.writeQueued
        step.emit(.closeLocal(connection, reason))
    }

    /// The relay says lane `stream` is over without a CLOSE frame: behave as if CLOSE came.
    mutating func synthesizeClose(_ stream: StreamID, _ reason: LocalCloseReason, step: inout SessionStep) {
        // Retire the stream without queuing anything new, then let a CLOSE for the closed id
        // drop a lane CLOSE of ours that can no longer be sent.
        mux.close(stream)
        _ = try? mux.receive(.close(stream: stream))
        relayClosed(stream, reason, step: &step)
    }

    // MARK: Ending

    /// Ends the session: cancels everything and closes every local connection (fail closed).
    mutating func fail(_ failure: SessionFailure, step: inout SessionStep) {
        guard isRunning else { return }
        outcome = .failed(failure)
        tearDown(closing: .sessionFailed, step: &step)
    }

    private mutating func laneIdleExpired(step: inout SessionStep) {
        laneIdleArmed = false
        guard mode == .websocketLanes, laneSockets.isEmpty else { return }
        outcome = .idleExpired
        tearDown(closing: .sessionFailed, step: &step)
    }

    private mutating func tearDown(closing reason: LocalCloseReason, step: inout SessionStep) {
        exchanges.cancelAll(step: &step)
        for id in sockets.keys.sorted() {
            if sockets[id]?.phase == .open { step.emit(.cancelTimer(.socketLiveness(id))) }
            step.emit(.closeWebSocket(id))
        }
        sockets = [:]
        laneSockets = [:]
        spareLane = nil
        sessionSocket = nil
        if laneIdleArmed { step.emit(.cancelTimer(.laneIdle)) }
        laneIdleArmed = false
        for connection in connections.keys.sorted() { step.emit(.closeLocal(connection, reason)) }
        connections = [:]
        connectionByStream = [:]
        writeQueuedTotal = 0
        deferredPolls = []
        closingLanes = []
    }

    // MARK: After every event

    /// Sends what the uplink holds, then tells the shell which connections to read.
    private mutating func finishStep(step: inout SessionStep) {
        guard isRunning else { return }
        pacer.acknowledged(total: mux.uplinkBytesAcknowledged, at: step.now)
        switch mode {
        case .https: pumpHTTPSUplink(step: &step)
        case .httpsLanes: pumpLaneUplinks(step: &step)
        case .websocket: pumpSessionSocket(step: &step)
        case .websocketLanes: pumpLaneSockets(step: &step)
        }
        guard isRunning else { return }
        pacer.sent(total: mux.uplinkBytesSent, acknowledged: mux.uplinkBytesAcknowledged, at: step.now)
        var largestStream = 0
        for connection in connections.keys.sorted() {
            guard let local = connections[connection] else { continue }
            largestStream = max(largestStream, local.writeQueued + (local.stream.map { mux.queuedBytes(on: $0) } ?? 0))
            guard let reading = connections[connection]?.reading else { continue }
            let allowed = readAllowance(for: connection) > 0
            guard allowed != reading else { continue }
            connections[connection]?.reading = allowed
            step.emit(allowed ? .resumeLocalRead(connection) : .pauseLocalRead(connection))
        }
        queued.observe(uplink: mux.queuedBytes, downlink: writeQueuedTotal, largestStream: largestStream)
    }
}
