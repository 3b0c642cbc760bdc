import WebProxyCore

/// One relay session: its streams, tombstones, lanes (downlink queues with carrier state)
/// and pending budget. Methods take the call's `RelayContext` and append actions to it.
struct RelaySession: Sendable {
    let id: SessionID
    let token: String
    let profile: Int
    let mode: CarrierMode
    let batchLimit: Int
    let limits: RelayLimits
    /// Last request, poll completion or WebSocket message (for `reconnectGrace`).
    var lastActivity: RelayInstant
    private(set) var streams: [StreamID: RelayStream] = [:]
    private(set) var tombstones: TombstoneSet
    var lanes: [UInt32: RelayLane] = [:]
    private(set) var budget: PendingBudget
    /// websocket: a multiplexed socket was attached once (a second upgrade is refused).
    var hadWebSocket = false
    /// Lanes whose queue or state changed since the last delivery.
    private var dirty: Set<UInt32> = []

    init(
        id: SessionID, token: String, profile: Int, mode: CarrierMode, batchLimit: Int,
        limits: RelayLimits, now: RelayInstant
    ) {
        self.id = id
        self.token = token
        self.profile = profile
        self.mode = mode
        self.batchLimit = batchLimit
        self.limits = limits
        lastActivity = now
        tombstones = TombstoneSet(capacity: limits.maxTombstones)
        budget = PendingBudget(limits: limits)
        if mode != .websocketLanes { lanes[0] = RelayLane() }
    }

    /// Streams, lanes and budget in counts, for a test's stall report.
    var stateSummary: String {
        var parts = ["budget \(budget.bytes) bytes / \(budget.items) items"]
        for id in streams.keys.sorted() {
            guard let stream = streams[id] else { continue }
            parts.append(
                "stream \(id): receive window \(stream.receiveWindow), send credit \(stream.sendCredit), held \(stream.held.count), paused \(stream.readingPaused), undrained writes \(stream.undrainedWrites.count)")
        }
        for key in lanes.keys.sorted() {
            guard let lane = lanes[key] else { continue }
            parts.append(
                "lane \(key): cursor \(lane.cursor), unacked \(lane.unacked?.bytes ?? 0), parked \(lane.parked != nil), last up \(lane.lastUplink?.sequence ?? 0)")
        }
        return parts.joined(separator: "; ")
    }

    /// The lane carrying a stream's frames.
    func laneKey(_ stream: StreamID) -> UInt32 { mode.usesLanes ? stream.rawValue : 0 }

    /// Whether a lane or lane socket keeps the session from idling out.
    var isAttached: Bool { lanes.values.contains { $0.parked != nil || $0.socket != nil } }

    private var mergeLimit: Int {
        max(1, min(limits.maxFramePayload, batchLimit - Frame.headerLength))
    }

    private func backend(_ stream: StreamID) -> BackendID { BackendID(session: id, stream: stream) }

    // MARK: - Uplink

    /// Validates a client batch against a copy of the session and applies it only if every
    /// frame is acceptable (all-or-nothing). `lane` is the `X-Lane-ID` or lane socket id for
    /// the lane carriers, nil otherwise. Returns false, applying nothing, when the batch's
    /// DATA does not fit the pending budget.
    mutating func receiveUplink(
        _ frames: [Frame], lane: UInt32?, context: inout RelayContext
    ) throws(CarrierFailure) -> Bool {
        let data = frames.reduce((bytes: 0, count: 0)) {
            if case .data(_, let payload) = $1 { return ($0.bytes + payload.count, $0.count + 1) }
            return $0
        }
        guard budget.admitsUplink(payload: data.bytes, count: data.count) else { return false }
        var trial = self
        var trialContext = RelayContext(
            limits: context.limits, now: context.now, faults: context.faults)
        try trial.apply(frames, lane: lane, context: &trialContext)
        self = trial
        context.faults = trialContext.faults
        context.actions += trialContext.actions
        settle(context: &context)
        return true
    }

    private mutating func apply(_ frames: [Frame], lane: UInt32?, context: inout RelayContext)
        throws(CarrierFailure)
    {
        if let lane {
            if lane == 0 {
                guard frames.allSatisfy({ $0.type == .pong }) else {
                    throw CarrierFailure("lane 0 carries only PONG")
                }
                return
            }
            guard frames.allSatisfy({ $0.stream.rawValue == lane }) else {
                throw CarrierFailure("frame for another stream on lane \(lane)")
            }
            let known = lanes[lane] != nil || streams[StreamID(rawValue: lane) ?? .session] != nil
            if !known, frames.first?.type != .open {
                // Frames for a lane this session no longer (or never) knew: late frames.
                guard frames.allSatisfy({ $0.type != .open }) else {
                    throw CarrierFailure("OPEN is not the first frame of a new lane")
                }
                return
            }
        }
        for frame in frames { try apply(frame, context: &context) }
    }

    private mutating func apply(_ frame: Frame, context: inout RelayContext) throws(CarrierFailure)
    {
        switch frame {
        case .open(let id):
            guard streams[id] == nil, !tombstones.contains(id) else {
                throw CarrierFailure("OPEN reuses stream id \(id)")
            }
            if mode == .httpsLanes, lanes[id.rawValue] == nil { lanes[id.rawValue] = RelayLane() }
            if streams.count >= limits.maxStreamsPerSession {
                queueClose(id)
                bury(id)
            } else {
                streams[id] = RelayStream(window: limits.streamWindow)
                context.actions.append(.dialBackend(backend(id), profile: profile))
            }
        case .data(let id, let payload):
            guard var stream = streams[id] else {
                guard tombstones.contains(id) else {
                    throw CarrierFailure("DATA for never-opened stream \(id)")
                }
                return
            }
            guard payload.count <= stream.receiveWindow else {
                throw CarrierFailure("DATA beyond the receive window of stream \(id)")
            }
            stream.receiveWindow -= payload.count
            stream.undrainedWrites.append(payload.count)
            budget.charge(bytes: payload.count, items: 1)
            if stream.connected {
                context.actions.append(.writeBackend(backend(id), Array(payload)))
            } else {
                stream.unsentWrites.append(Array(payload))
            }
            streams[id] = stream
        case .window(let id, let delta):
            guard var stream = streams[id] else {
                guard tombstones.contains(id) else {
                    throw CarrierFailure("WINDOW for never-opened stream \(id)")
                }
                return
            }
            stream.sendCredit = min(stream.sendCredit + Int(delta), Int(UInt32.max))
            streams[id] = stream
            admitHeld(id, context: &context)
        case .close(let id):
            guard streams[id] != nil else {
                guard tombstones.contains(id) else {
                    throw CarrierFailure("CLOSE for never-opened stream \(id)")
                }
                return
            }
            abort(id, context: &context)
        case .pong:
            break
        default:
            throw CarrierFailure("\(frame.type.name) is not allowed in an uplink batch")
        }
    }

    // MARK: - Backends

    mutating func backendConnected(_ id: StreamID, context: inout RelayContext) {
        guard var stream = streams[id], !stream.connected else { return }
        stream.connected = true
        for write in stream.unsentWrites {
            context.actions.append(.writeBackend(backend(id), write))
        }
        stream.unsentWrites = []
        streams[id] = stream
    }

    mutating func backendDialFailed(_ id: StreamID, context: inout RelayContext) {
        guard streams[id] != nil else { return }
        releaseUplink(id)
        streams[id] = nil
        queueClose(id)
        bury(id)
        settle(context: &context)
    }

    mutating func backendReceived(_ bytes: [UInt8], from id: StreamID, context: inout RelayContext)
    {
        guard !bytes.isEmpty, streams[id] != nil else { return }
        streams[id]?.held += bytes
        admitHeld(id, context: &context)
        settle(context: &context)
    }

    mutating func backendDrained(_ count: Int, from id: StreamID, context: inout RelayContext) {
        guard var stream = streams[id], count > 0 else { return }
        var remaining = min(count, stream.undrainedWrites.reduce(0, +))
        let granted = remaining
        var finished = 0
        while remaining > 0, let first = stream.undrainedWrites.first {
            let used = min(first, remaining)
            remaining -= used
            if used == first {
                stream.undrainedWrites.removeFirst()
                finished += 1
            } else {
                stream.undrainedWrites[0] = first - used
            }
        }
        guard granted > 0 else { return }
        budget.release(bytes: granted, items: finished)
        stream.receiveWindow = min(stream.receiveWindow + granted, limits.streamWindow)
        streams[id] = stream
        let key = laneKey(id)
        if lanes[key, default: RelayLane()].queue.addWindow(UInt32(clamping: granted), stream: id) {
            budget.charge(bytes: 4, items: 1)
        }
        dirty.insert(key)
        settle(context: &context)
    }

    mutating func backendEnded(_ id: StreamID, context: inout RelayContext) {
        guard streams[id] != nil else { return }
        streams[id]?.backendEnded = true
        admitHeld(id, context: &context)
        settle(context: &context)
    }

    /// Queues held backend bytes as far as credit and budget allow; queues CLOSE after a
    /// backend EOF once everything before it is queued; pauses or resumes the backend.
    private mutating func admitHeld(_ id: StreamID, context: inout RelayContext) {
        guard var stream = streams[id] else { return }
        let key = laneKey(id)
        while !stream.held.isEmpty, stream.sendCredit > 0 {
            let count = min(stream.held.count, stream.sendCredit, limits.backendReadChunk)
            guard budget.admitsDownlinkData(count) else { break }
            let added = lanes[key, default: RelayLane()].queue.appendData(
                stream.held[..<count], stream: id, mergeLimit: mergeLimit)
            budget.charge(bytes: count, items: added ? 1 : 0)
            stream.sendCredit -= count
            stream.held.removeFirst(count)
            dirty.insert(key)
        }
        if stream.held.isEmpty, stream.backendEnded {
            streams[id] = stream
            releaseUplink(id)
            streams[id] = nil
            queueClose(id)
            bury(id)
            context.actions.append(.closeBackend(backend(id)))
            return
        }
        let shouldPause = !stream.held.isEmpty || stream.sendCredit == 0
        if shouldPause != stream.readingPaused {
            stream.readingPaused = shouldPause
            context.actions.append(
                shouldPause ? .pauseBackend(backend(id)) : .resumeBackend(backend(id)))
        }
        streams[id] = stream
    }

    /// Client CLOSE or a lane error: drop what is queued for the stream, close its backend
    /// and remember the id.
    private mutating func abort(_ id: StreamID, context: inout RelayContext) {
        let key = laneKey(id)
        if let removed = lanes[key]?.queue.removeAll(of: id) {
            budget.release(bytes: removed.bytes, items: removed.items)
        }
        releaseUplink(id)
        streams[id] = nil
        bury(id)
        context.actions.append(.closeBackend(backend(id)))
        dirty.insert(key)
    }

    private mutating func releaseUplink(_ id: StreamID) {
        guard let stream = streams[id] else { return }
        budget.release(
            bytes: stream.undrainedWrites.reduce(0, +), items: stream.undrainedWrites.count)
    }

    private mutating func queueClose(_ id: StreamID) {
        let key = laneKey(id)
        lanes[key, default: RelayLane()].queue.appendClose(stream: id)
        budget.charge(bytes: 0, items: 1)
        dirty.insert(key)
    }

    /// Tombstones `id`; the evicted oldest tombstone's idle lane state goes with it.
    private mutating func bury(_ id: StreamID) {
        guard let evicted = tombstones.insert(id), mode.usesLanes,
            let lane = lanes[evicted.rawValue], lane.parked == nil, lane.socket == nil
        else { return }
        if let unacked = lane.unacked { budget.release(bytes: unacked.bytes, items: unacked.items) }
        lanes[evicted.rawValue] = nil
    }

    mutating func abortStream(_ id: StreamID, context: inout RelayContext) {
        abort(id, context: &context)
    }

    mutating func releaseBudget(bytes: Int, items: Int) {
        budget.release(bytes: bytes, items: items)
    }

    mutating func markDirty(_ key: UInt32) { dirty.insert(key) }

    /// Forgets every stream and lane (the session is over).
    mutating func resetAll() {
        streams = [:]
        lanes = [:]
        dirty = []
        budget = PendingBudget(limits: limits)
    }

    // MARK: - Delivery

    /// Re-admits stalled backend data and delivers every changed lane, until nothing changes.
    mutating func settle(context: inout RelayContext) {
        for (id, stream) in streams where !stream.held.isEmpty && stream.sendCredit > 0 {
            admitHeld(id, context: &context)
        }
        var rounds = 0
        while !dirty.isEmpty, rounds < 4 {
            let keys = dirty.sorted()
            dirty = []
            var released = false
            for key in keys { released = deliver(key, context: &context) || released }
            if released {
                for (id, stream) in streams where !stream.held.isEmpty && stream.sendCredit > 0 {
                    admitHeld(id, context: &context)
                }
            }
            rounds += 1
        }
    }

    /// Sends what a lane can send now. Returns whether budget was released.
    private mutating func deliver(_ key: UInt32, context: inout RelayContext) -> Bool {
        guard var lane = lanes[key] else { return false }
        var released = false
        if mode.usesWebSocket {
            guard var socket = lane.socket, !socket.awaitingOpen else { return false }
            while !lane.queue.isEmpty {
                let batch = lane.queue.takeBatch(
                    maxBytes: batchLimit, maxFrames: limits.maxFramesPerBatch)
                budget.release(bytes: batch.bytes, items: batch.items)
                released = true
                var body = batch.body
                context.corrupt(&body)
                context.actions.append(.sendMessage(socket.connection, body))
                socket.lastSent = context.now
            }
            lane.socket = socket
            if mode == .websocketLanes, streams[StreamID(rawValue: key) ?? .session] == nil {
                // The lane's stream is over and everything was sent: drop the socket (no close frame).
                context.actions.append(.dropConnection(socket.connection))
                lanes[key] = nil
                return released
            }
        } else if let parked = lane.parked {
            if !lane.queue.isEmpty {
                let batch = lane.queue.takeBatch(
                    maxBytes: batchLimit, maxFrames: limits.maxFramesPerBatch)
                var body = batch.body
                context.corrupt(&body)
                lane.unacked = (body, batch.bytes, batch.items)
                lane.parked = nil
                context.actions.append(
                    .respond(parked.connection, Self.batchResponse(body, cursor: lane.cursor + 1)))
                lastActivity = context.now
            } else if isClosedAndDrained(key, lane) {
                lane.parked = nil
                context.actions.append(
                    .respond(
                        parked.connection, Self.idleResponse(cursor: lane.cursor, laneClosed: true))
                )
                lastActivity = context.now
            }
        }
        lanes[key] = lane
        return released
    }

    private func isClosedAndDrained(_ key: UInt32, _ lane: RelayLane) -> Bool {
        mode == .httpsLanes && key != 0 && streams[StreamID(rawValue: key) ?? .session] == nil
            && lane.queue.isEmpty && lane.unacked == nil
    }

    static func batchResponse(_ body: [UInt8], cursor: UInt64) -> RelayResponse {
        .frames(body, [(name: "X-Down-Cursor", value: String(cursor))])
    }

    static func idleResponse(cursor: UInt64, laneClosed: Bool = false) -> RelayResponse {
        var extra = [(name: "X-Down-Cursor", value: String(cursor))]
        if laneClosed { extra.append((name: "X-Lane-Closed", value: "1")) }
        return .noContent(extra)
    }
}
