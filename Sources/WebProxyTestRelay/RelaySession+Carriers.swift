import WebProxyCore

/// The carrier side of a session: uplink sequencing, long polls, WebSocket binding, timers.
extension RelaySession {
    // MARK: - HTTPS uplink sequencing

    /// What an `/up` with sequence `sequence` should do on `lane`.
    enum UplinkSequencing {
        /// `last + 1`: apply the body.
        case apply
        /// A byte-identical repeat of the last sequence: acknowledge again, apply nothing.
        case repeatAck
    }

    func sequencing(_ sequence: UInt64, body: BodyFingerprint, lane key: UInt32)
        throws(CarrierFailure) -> UplinkSequencing
    {
        let last = lanes[key]?.lastUplink
        if let last, last.sequence == sequence {
            guard last.body == body else {
                throw CarrierFailure("repeat of the last X-Up-Seq with a different body")
            }
            return .repeatAck
        }
        guard sequence == (last?.sequence ?? 0) + 1 else {
            throw CarrierFailure("X-Up-Seq out of order")
        }
        return .apply
    }

    /// Records an applied (or acknowledged-and-ignored) uplink of `lane`.
    mutating func commitUplink(_ sequence: UInt64, body: BodyFingerprint, lane key: UInt32) {
        if lanes[key] == nil, mode == .httpsLanes {
            // Late frames for a lane never opened here are acknowledged; nothing else is kept.
            return
        }
        lanes[key]?.lastUplink = (sequence, body)
    }

    // MARK: - Long polls

    /// A `/down` with `cursor` on `lane`: replays, acknowledges, answers or parks.
    /// Returns false for a lane the session does not know (404, the session survives).
    mutating func poll(
        lane key: UInt32, cursor: UInt64, connection: RelayConnectionID, context: inout RelayContext
    ) throws(CarrierFailure) -> Bool {
        guard var lane = lanes[key] else { return false }
        lastActivity = context.now
        if let unacked = lane.unacked {
            if cursor == lane.cursor {
                context.actions.append(
                    .respond(connection, Self.batchResponse(unacked.body, cursor: lane.cursor + 1)))
                return true
            }
            guard cursor == lane.cursor + 1 else {
                throw CarrierFailure("X-Down-Cursor is neither the last nor the next batch")
            }
            lane.cursor = cursor
            lane.unacked = nil
            releaseBudget(bytes: unacked.bytes, items: unacked.items)
        } else {
            guard cursor == lane.cursor else {
                throw CarrierFailure("X-Down-Cursor does not match")
            }
        }
        if let older = lane.parked {
            context.actions.append(
                .respond(older.connection, Self.idleResponse(cursor: lane.cursor)))
        }
        lane.parked = RelayLane.ParkedPoll(
            connection: connection, deadline: context.now.advanced(by: limits.longPoll))
        lanes[key] = lane
        markDirty(key)
        settle(context: &context)
        if let parked = lanes[key]?.parked, parked.connection == connection {
            context.actions.append(.park(connection, until: parked.deadline))
        }
        return true
    }

    /// Forgets a parked poll whose connection went away.
    mutating func forgetPoll(_ connection: RelayConnectionID) {
        for (key, lane) in lanes where lane.parked?.connection == connection {
            lanes[key]?.parked = nil
        }
    }

    // MARK: - WebSockets

    /// Binds the multiplexed socket (websocket) or a new lane socket (websocket-lanes).
    /// Returns false when the upgrade must be refused.
    mutating func attachSocket(lane key: UInt32, connection: RelayConnectionID, now: RelayInstant)
        -> Bool
    {
        let socket = RelayLane.LaneSocket(
            connection: connection, awaitingOpen: mode == .websocketLanes, lastSent: now,
            lastReceived: now)
        switch mode {
        case .websocket:
            guard key == 0, !hadWebSocket else { return false }
            hadWebSocket = true
            lanes[0, default: RelayLane()].socket = socket
        case .websocketLanes:
            guard let id = StreamID(rawValue: key), !id.isSession, lanes[key] == nil,
                streams[id] == nil,
                !tombstones.contains(id), lanes.count < limits.maxStreamsPerSession
            else { return false }
            var lane = RelayLane()
            lane.socket = socket
            lanes[key] = lane
        case .https, .httpsLanes:
            return false
        }
        lastActivity = now
        return true
    }

    /// Notes client traffic on a socket (any message, Ping or Pong).
    mutating func socketHeard(lane key: UInt32, now: RelayInstant) {
        lanes[key]?.socket?.lastReceived = now
        lastActivity = now
    }

    /// A binary message on a socket: one batch of client frames.
    mutating func socketMessage(_ bytes: [UInt8], lane key: UInt32, context: inout RelayContext)
        throws(CarrierFailure)
    {
        let frames = try Self.decodeBatch(bytes[...], limits: limits)
        if mode == .websocketLanes {
            guard let socket = lanes[key]?.socket else { return }
            if socket.awaitingOpen {
                guard case .open(let id)? = frames.first, id.rawValue == key else {
                    throw CarrierFailure("the first message of a lane must begin with OPEN")
                }
                lanes[key]?.socket?.awaitingOpen = false
            }
        }
        guard
            try receiveUplink(frames, lane: mode == .websocketLanes ? key : nil, context: &context)
        else {
            throw CarrierFailure("uplink message does not fit the pending budget")
        }
    }

    /// Ends a websocket-lanes lane after a lane error or a lost socket: the stream (if it
    /// was opened) is closed and tombstoned; a lane that never saw its OPEN leaves no trace.
    mutating func closeLane(_ key: UInt32, drop: Bool, context: inout RelayContext) {
        guard let lane = lanes[key] else { return }
        if let id = StreamID(rawValue: key), streams[id] != nil {
            abortStream(id, context: &context)
        }
        if let removed = lanes[key]?.queue.removeAll() {
            releaseBudget(bytes: removed.bytes, items: removed.items)
        }
        if drop, let socket = lane.socket {
            context.actions.append(.dropConnection(socket.connection))
        }
        lanes[key] = nil
        settle(context: &context)
    }

    /// Which lane a socket connection is bound to.
    func lane(of connection: RelayConnectionID) -> UInt32? {
        lanes.first { $0.value.socket?.connection == connection }?.key
    }

    // MARK: - Timers and endings

    /// Expires polls, pings or drops idle sockets. Returns false when the session must end
    /// (its multiplexed socket went silent, or it idled past `reconnectGrace`).
    mutating func tick(context: inout RelayContext) -> Bool {
        let now = context.now
        for key in lanes.keys.sorted() {
            guard let lane = lanes[key] else { continue }
            if let parked = lane.parked, parked.deadline <= now {
                lanes[key]?.parked = nil
                lastActivity = now
                context.actions.append(
                    .respond(parked.connection, Self.idleResponse(cursor: lane.cursor)))
            }
            if let socket = lane.socket {
                if socket.lastSent.advanced(by: limits.longPoll) <= now {
                    context.actions.append(.sendPing(socket.connection))
                    lanes[key]?.socket?.lastSent = now
                }
                if socket.lastReceived.advanced(by: limits.longPoll * 2) <= now {
                    guard mode == .websocketLanes else { return false }
                    closeLane(key, drop: true, context: &context)
                }
            }
        }
        return isAttached || lastActivity.advanced(by: limits.reconnectGrace) > now
    }

    /// The earliest instant at which `tick` has something to do.
    var nextDeadline: RelayInstant {
        var deadline =
            isAttached
            ? RelayInstant(nanoseconds: .max) : lastActivity.advanced(by: limits.reconnectGrace)
        for lane in lanes.values {
            if let parked = lane.parked { deadline = min(deadline, parked.deadline) }
            if let socket = lane.socket {
                deadline = min(deadline, socket.lastSent.advanced(by: limits.longPoll))
                deadline = min(deadline, socket.lastReceived.advanced(by: limits.longPoll * 2))
            }
        }
        return deadline
    }

    /// Ends the session: closes every backend, answers parked polls with 404 and drops sockets.
    mutating func end(context: inout RelayContext) {
        for id in streams.keys.sorted() {
            context.actions.append(.closeBackend(BackendID(session: self.id, stream: id)))
        }
        for key in lanes.keys.sorted() {
            guard let lane = lanes[key] else { continue }
            if let parked = lane.parked {
                context.actions.append(.respond(parked.connection, .localNotFound))
            }
            if let socket = lane.socket {
                context.actions.append(.dropConnection(socket.connection))
            }
        }
        resetAll()
    }

    /// Decodes one carrier body or message with this relay's limits.
    static func decodeBatch(_ body: ArraySlice<UInt8>, limits: RelayLimits) throws(CarrierFailure)
        -> [Frame]
    {
        guard !body.isEmpty else { throw CarrierFailure("empty batch") }
        var decoder = FrameDecoder(direction: .clientToRelay, maxPayload: limits.maxFramePayload)
        decoder.append(body)
        var frames: [Frame] = []
        do throws(FrameError) {
            while true {
                if frames.count >= limits.maxFramesPerBatch, decoder.bufferedByteCount > 0 {
                    throw FrameError.tooManyFrames
                }
                guard let frame = try decoder.nextFrame() else { break }
                frames.append(frame)
            }
            try decoder.finish()
        } catch {
            throw CarrierFailure(error.description)
        }
        return frames
    }
}
