import WebProxyCore

/// The `https` and `https-lanes` carriers (PROTOCOL.md §5.1, §5.2): one `/up` in flight per
/// uplink, coalescing whatever the mux queued meanwhile into the next body; one long poll
/// per downlink, whose cursor advances only after the batch was handed to the local
/// streams; byte-identical retries.
extension SessionDriver {
    /// Sends the next poll of the https downlink (`.session`) or of an https-lanes lane,
    /// unless the local write queues are full: then it waits for `localWritten`.
    mutating func poll(_ lane: StreamID, step: inout SessionStep) {
        guard writeQueuedTotal < settings.globalQueueLimit else {
            deferredPolls.insert(lane)
            return
        }
        let request: CarrierRequest?
        let operation: HTTPOperation
        if mode == .https {
            request = downlink?.nextPoll()
            operation = .down(lane: nil)
        } else {
            request = lanes?.nextPoll(lane: lane)
            operation = .down(lane: lane)
        }
        guard let request else { return }
        exchanges.send(operation, request, deadline: settings.longPollDeadline, step: &step)
    }

    mutating func pumpHTTPSUplink(step: inout SessionStep) {
        guard uplink?.isIdle == true, let body = mux.nextBatch(maxBytes: batchLimit),
            let request = uplink?.nextRequest(body: body)
        else { return }
        step.frames.sent += FrameCounts.frames(inBatch: body)
        exchanges.send(.up(lane: nil), request, deadline: settings.requestDeadline, step: &step)
    }

    mutating func pumpLaneUplinks(step: inout SessionStep) {
        guard var table = lanes else { return }
        lanes = nil  // keep the table uniquely referenced while it is edited
        defer { lanes = table }
        var candidates = Set(connectionByStream.keys).union(closingLanes)
        candidates.insert(.session)
        for lane in candidates.sorted() {
            guard table.uplinkInFlight(lane: lane) == nil, mux.hasPendingUplink(for: lane) else { continue }
            // A new lane waits (its OPEN stays queued) while the relay's lane cap is reached.
            guard table.contains(lane) || table.liveLaneCount < LaneTable.maxLiveLanes else { continue }
            guard let body = mux.nextLaneBatch(for: lane, maxBytes: batchLimit, paced: uplinkAllowance) else { continue }
            do {
                guard let request = try table.nextUplinkRequest(lane: lane, body: body) else { continue }
                step.frames.sent += FrameCounts.frames(inBatch: body)
                exchanges.send(.up(lane: lane), request, deadline: settings.requestDeadline, step: &step)
            } catch {
                fail(SessionFailure(error), step: &step)
                return
            }
            if !mux.hasPendingUplink(for: lane) { closingLanes.remove(lane) }
        }
    }

    /// An answer to one of this session's HTTP requests.
    mutating func httpAnswered(
        _ exchange: HTTPExchanges.Exchange, id: RequestID, _ response: CarrierResponse, wallClockSeconds: Int64,
        step: inout SessionStep
    ) {
        switch exchange.operation {
        case .up(nil):
            guard let verdict = uplink?.judge(response) else { return }
            switch verdict {
            case .accepted: relayAcceptedUplink()
            case .retryLater(let after):
                relayUnderPressure()
                retry(exchange, id: id, .serviceUnavailable(after), wallClockSeconds: wallClockSeconds, step: &step)
            case .fatal(let error): fail(SessionFailure(error), step: &step)
            }
        case .down(nil):
            guard let verdict = downlink?.judge(response) else { return }
            switch verdict {
            case .accepted(.batch(let body)):
                guard deliver(body, lane: nil, step: &step) else { return }
                downlink?.markDelivered()
                poll(.session, step: &step)
            case .accepted(.noData), .accepted(.laneClosed):
                poll(.session, step: &step)
            case .retryLater(let after):
                retry(exchange, id: id, .serviceUnavailable(after), wallClockSeconds: wallClockSeconds, step: &step)
            case .fatal(let error): fail(SessionFailure(error), step: &step)
            }
        case .up(let lane?):
            guard let verdict = lanes?.judgeUplink(lane: lane, response) else { return }
            switch verdict {
            case .accepted(.laneOpened):
                relayAcceptedUplink()
                poll(lane, step: &step)
            case .accepted(.acknowledged): relayAcceptedUplink()
            case .retryLater(let after):
                relayUnderPressure()
                retry(exchange, id: id, .serviceUnavailable(after), wallClockSeconds: wallClockSeconds, step: &step)
            case .fatal(let error): fail(SessionFailure(error), step: &step)
            }
        case .down(let lane?):
            guard let verdict = lanes?.judgeDownlink(lane: lane, response) else { return }
            switch verdict {
            case .accepted(.batch(let body)):
                guard deliver(body, lane: lane, step: &step) else { return }
                lanes?.markDelivered(lane: lane)
                poll(lane, step: &step)
            case .accepted(.noData):
                poll(lane, step: &step)
            case .accepted(.laneClosed):
                closingLanes.remove(lane)
                synthesizeClose(lane, .relayClosedStream, step: &step)
            case .retryLater(let after):
                retry(exchange, id: id, .serviceUnavailable(after), wallClockSeconds: wallClockSeconds, step: &step)
            case .fatal(let error): fail(SessionFailure(error), step: &step)
            }
        case .bridgePage, .createSession, .deleteSession:
            return
        }
    }

    /// Decodes a downlink batch and hands its frames to the mux and the local streams.
    /// False when the session ended on the way.
    private mutating func deliver(_ body: [UInt8], lane: StreamID?, step: inout SessionStep) -> Bool {
        do {
            let frames = try FrameBatch.decode(body[...], direction: .relayToClient)
            receive(frames, lane: lane, step: &step)
        } catch {
            fail(SessionFailure(.protocolViolation, "the relay sent a malformed batch: \(error)"), step: &step)
        }
        return isRunning
    }

    /// Schedules the identical request again, or ends the session when retries are spent.
    /// A request that got no answer also resends its sibling (the `/down` of the same lane
    /// after an `/up`, and the other way round) at once, identical: a parked long poll on a
    /// connection that went silent would otherwise hold the stream until its deadline.
    mutating func retry(
        _ exchange: HTTPExchanges.Exchange, id: RequestID, _ failure: RequestFailure, wallClockSeconds: Int64,
        step: inout SessionStep
    ) {
        if let error = exchanges.failed(exchange, id: id, failure, wallClockSeconds: wallClockSeconds, step: &step) {
            fail(SessionFailure(error), step: &step)
            return
        }
        guard failure == .noResponse else { return }
        switch exchange.operation {
        case .up(let lane): exchanges.resendInFlight(.down(lane: lane), step: &step)
        case .down(let lane): exchanges.resendInFlight(.up(lane: lane), step: &step)
        case .bridgePage, .createSession, .deleteSession: break
        }
    }
}
