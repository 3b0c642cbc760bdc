import WebProxyCore

/// The `websocket` and `websocket-lanes` carriers (PROTOCOL.md §5.3, §5.4): one batch per
/// message, of at most `socketBufferLimit` bytes, and no new message while the socket
/// buffers that much or more; Pings after `socketPingAfter` of silence and loss after
/// `socketDeadAfter`. Losing the session socket ends the session; losing an established lane
/// ends its stream; a failed new lane upgrade ends the session.
extension SessionDriver {
    /// Starts a WebSocket upgrade for the session (`lane` nil) or one lane.
    mutating func openSocket(lane: StreamID?, step: inout SessionStep) -> SocketID {
        let id = step.ids.socket()
        let upgrade = WebSocketUpgrade(channel: CarrierChannel(api: api, session: session.token, lane: lane))
        sockets[id] = CarrierSocket(upgrade: upgrade, lane: lane, lastHeard: step.now)
        step.emit(.openWebSocket(id, upgrade.request, deadline: step.now.advanced(by: settings.requestDeadline)))
        return id
    }

    /// websocket-lanes: opens the lane socket of a connection's fresh stream.
    mutating func openLane(for connection: ConnectionID, step: inout SessionStep) {
        guard let stream = connections[connection]?.stream else { return }
        laneSockets[stream] = openSocket(lane: stream, step: &step)
        updateLaneIdleTimer(step: &step)
    }

    /// websocket-lanes: upgrades a lane for the mux's next stream id, unless the session has
    /// one already, has no ids left, or its lane sockets reach `maxStreams` (the relay counts
    /// the spare among its 128 lanes). Called at the start, when a connection took the spare
    /// and when a lane closed. Its liveness Pings keep the session alive on the relay.
    mutating func openSpareLane(step: inout SessionStep) {
        guard isRunning, settings.opensSpareLane, spareLane == nil, laneSockets.count < settings.maxStreams,
            let next = mux.nextStream
        else { return }
        spareLane = openSocket(lane: next, step: &step)
    }

    /// Gives the spare lane to `stream`, the stream just opened; false when there is none or
    /// it was upgraded for another id (then it is closed: that id is not the next any more).
    mutating func takeSpareLane(for stream: StreamID, step: inout SessionStep) -> Bool {
        guard let spare = spareLane, let socket = sockets[spare] else { return false }
        spareLane = nil
        guard socket.lane == stream else {
            dropSpareLane(spare, socket, closing: true, step: &step)
            return false
        }
        laneSockets[stream] = spare
        updateLaneIdleTimer(step: &step)
        return true
    }

    /// Forgets the spare lane; `closing` closes its socket too (it has not ended by itself).
    private mutating func dropSpareLane(_ id: SocketID, _ socket: CarrierSocket, closing: Bool, step: inout SessionStep) {
        if closing { step.emit(.closeWebSocket(id)) }
        sockets[id] = nil
        spareLane = nil
        if socket.phase == .open { step.emit(.cancelTimer(.socketLiveness(id))) }
        updateLaneIdleTimer(step: &step)
    }

    /// Arms the idle timer while the session has no lane socket (a spare counts), disarms
    /// it otherwise.
    mutating func updateLaneIdleTimer(step: inout SessionStep) {
        let hasLane = !laneSockets.isEmpty || spareLane != nil
        if !hasLane, !laneIdleArmed {
            laneIdleArmed = true
            step.emit(.schedule(.laneIdle, at: step.now.advanced(by: settings.laneIdleRecycle)))
        } else if hasLane, laneIdleArmed {
            laneIdleArmed = false
            step.emit(.cancelTimer(.laneIdle))
        }
    }

    mutating func socketOpened(_ id: SocketID, _ response: CarrierResponse, step: inout SessionStep) {
        guard let socket = sockets[id], socket.phase == .connecting else { return }
        switch socket.upgrade.judge(response) {
        case .accepted:
            sockets[id]?.phase = .open
            sockets[id]?.lastHeard = step.now
            step.emit(.schedule(.socketLiveness(id), at: step.now.advanced(by: settings.socketPingAfter)))
        case .retryLater, .fatal:
            socketUpgradeFailed(id, response, step: &step)
        }
    }

    /// Any failed upgrade ends the session: the session socket, or a new lane, spare or not
    /// (the session or the network is gone).
    mutating func socketUpgradeFailed(_ id: SocketID, _ response: CarrierResponse?, step: inout SessionStep) {
        guard let socket = sockets.removeValue(forKey: id) else { return }
        if let lane = socket.lane { laneSockets[lane] = nil }
        if id == spareLane { spareLane = nil }
        let what = socket.lane.map { "the WebSocket upgrade of new lane \($0)" } ?? "the session WebSocket upgrade"
        let message: String
        if let response {
            switch socket.upgrade.judge(response) {
            case .fatal(let error): message = "\(what) failed: \(error)"
            case .retryLater, .accepted: message = "\(what) failed with HTTP \(response.status)"
            }
        } else {
            // The shell logs the cause (connect, TLS, timeout or an answer that is not HTTP).
            message = "\(what) got no valid answer"
        }
        fail(SessionFailure(.carrierLost, message), step: &step)
    }

    mutating func socketMessage(_ id: SocketID, _ message: [UInt8], step: inout SessionStep) {
        guard let socket = sockets[id], socket.phase == .open else { return }
        heard(id, step: &step)
        if id == spareLane, let lane = socket.lane {
            // No stream is open on it, so the relay has nothing to say there.
            step.emit(.log(.streamAborted(lane, "the relay sent a message on the spare lane")))
            dropSpareLane(id, socket, closing: true, step: &step)
            return
        }
        let frames: [Frame]
        do {
            frames = try FrameBatch.decode(message[...], direction: .relayToClient)
        } catch {
            let text = "the relay sent a malformed message: \(error)"
            if let lane = socket.lane {
                abortLane(lane, text, step: &step)
            } else {
                fail(SessionFailure(.protocolViolation, text), step: &step)
            }
            return
        }
        receive(frames, lane: socket.lane, step: &step)
    }

    mutating func heard(_ id: SocketID, step: inout SessionStep) {
        guard sockets[id]?.phase == .open else { return }
        sockets[id]?.lastHeard = step.now
        sockets[id]?.pinged = false
    }

    /// The liveness timer of an open socket: ping after silence, give up after longer silence.
    mutating func livenessCheck(_ id: SocketID, step: inout SessionStep) {
        guard let socket = sockets[id], socket.phase == .open else { return }
        let silence = socket.lastHeard.duration(to: step.now)
        if silence >= settings.socketDeadAfter {
            step.emit(.closeWebSocket(id))
            let seconds = settings.socketDeadAfter.components.seconds
            socketEnded(id, "the WebSocket was silent for \(seconds) s", step: &step)
            return
        }
        if silence >= settings.socketPingAfter {
            if !socket.pinged {
                sockets[id]?.pinged = true
                step.emit(.sendWebSocketPing(id))
            }
            step.emit(.schedule(.socketLiveness(id), at: socket.lastHeard.advanced(by: settings.socketDeadAfter)))
        } else {
            step.emit(.schedule(.socketLiveness(id), at: socket.lastHeard.advanced(by: settings.socketPingAfter)))
        }
    }

    /// A socket is gone. The session socket ends the session; a lane that ends without a
    /// CLOSE counts as CLOSE of its stream.
    mutating func socketEnded(_ id: SocketID, _ why: String, step: inout SessionStep) {
        guard let socket = sockets[id] else { return }
        if socket.phase == .connecting {
            socketUpgradeFailed(id, nil, step: &step)
            return
        }
        if id == spareLane {
            // It carried nothing. The next admission, or a lane's close, opens the next one.
            dropSpareLane(id, socket, closing: false, step: &step)
            return
        }
        guard let lane = socket.lane else {
            sockets[id] = nil
            sessionSocket = nil
            step.emit(.cancelTimer(.socketLiveness(id)))
            fail(SessionFailure(.carrierLost, why), step: &step)
            return
        }
        dropLaneSocket(lane, id, socket, step: &step)
        if mux.isLive(lane) { step.emit(.log(.streamAborted(lane, why))) }
        synthesizeClose(lane, .relayClosedStream, step: &step)
    }

    /// websocket-lanes: the relay broke the protocol on one lane. Only that stream ends.
    mutating func abortLane(_ lane: StreamID, _ why: String, step: inout SessionStep) {
        guard let id = laneSockets[lane], let socket = sockets[id] else { return }
        step.emit(.log(.streamAborted(lane, why)))
        step.emit(.closeWebSocket(id))
        dropLaneSocket(lane, id, socket, step: &step)
        synthesizeClose(lane, .streamFault, step: &step)
    }

    private mutating func dropLaneSocket(_ lane: StreamID, _ id: SocketID, _ socket: CarrierSocket, step: inout SessionStep) {
        sockets[id] = nil
        laneSockets[lane] = nil
        if socket.phase == .open { step.emit(.cancelTimer(.socketLiveness(id))) }
        openSpareLane(step: &step)
        updateLaneIdleTimer(step: &step)
    }

    mutating func pumpSessionSocket(step: inout SessionStep) {
        guard let id = sessionSocket, sockets[id]?.phase == .open else { return }
        while let buffered = sockets[id]?.bufferedBytes, buffered < socketBufferLimit,
            let batch = mux.nextBatch(maxBytes: socketBufferLimit, paced: uplinkAllowance)
        {
            sockets[id]?.bufferedBytes = buffered + batch.count
            step.frames.sent += FrameCounts.frames(inBatch: batch)
            step.emit(.sendWebSocketMessage(id, batch))
        }
    }

    /// Sends what each open lane holds; cancels the handshake of a lane whose connection
    /// went away while it was connecting (the mux sends nothing for a stream it never
    /// opened) and closes a lane once its stream is over and its CLOSE is out.
    mutating func pumpLaneSockets(step: inout SessionStep) {
        for (lane, id) in laneSockets.sorted(by: { $0.key < $1.key }) {
            guard let socket = sockets[id] else { continue }
            if socket.phase == .open {
                while let buffered = sockets[id]?.bufferedBytes, buffered < socketBufferLimit,
                    let batch = mux.nextLaneBatch(for: lane, maxBytes: socketBufferLimit, paced: uplinkAllowance)
                {
                    sockets[id]?.bufferedBytes = buffered + batch.count
                    step.frames.sent += FrameCounts.frames(inBatch: batch)
                    step.emit(.sendWebSocketMessage(id, batch))
                }
            }
            guard !mux.isLive(lane), !mux.hasPendingUplink(for: lane) else { continue }
            step.emit(.closeWebSocket(id))
            dropLaneSocket(lane, id, socket, step: &step)
        }
    }
}
