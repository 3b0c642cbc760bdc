import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite("SessionDriver: https-lanes and websocket-lanes carriers")
struct SessionDriverLaneTests: SessionDriverSuite {

    @Test("https-lanes: lane 0 polled from the start, OPEN-bearing /up, lane polled after its ack, X-Lane-Closed ends it")
    func httpsLanesLife() {
        var h = SessionHarness()
        let up = h.establish(.httpsLanes)
        #expect(up == [.sessionUp(.httpsLanes), .sendHTTP(RequestID(3), .down(lane: .session), H.down(0, lane: .session), deadline: h.at(.seconds(35)), silence: nil)])
        _ = h.on(.localAccepted(conn))
        #expect(
            h.on(.localRead(conn, echoBytes))
                == [.sendHTTP(RequestID(4), .up(lane: stream(1)), H.api.up(session: H.token, sequence: 1, lane: stream(1), body: CarrierFixturesBytes.openData), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        // No poll of lane 1 before its OPEN was acknowledged.
        #expect(
            h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(5), .down(lane: stream(1)), H.down(0, lane: stream(1)), deadline: h.at(.seconds(35)), silence: nil)])
        let batch = H.downBatch(cursor: 1, [.window(stream: stream(1), delta: 16), .data(stream: stream(1), payload: echoBytes)])
        #expect(
            h.on(.httpResponse(RequestID(5), batch, wallClockSeconds: 0))
                == [.writeLocal(conn, echoBytes), .sendHTTP(RequestID(6), .down(lane: stream(1)), H.down(1, lane: stream(1)), deadline: h.at(.seconds(35)), silence: nil)])
        #expect(
            h.on(.localWritten(conn, 16))
                == [.sendHTTP(RequestID(7), .up(lane: stream(1)), H.up(2, lane: stream(1), [.window(stream: stream(1), delta: 16)]), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        _ = h.on(.httpResponse(RequestID(7), H.upAck(2), wallClockSeconds: 0))
        // Local close: CLOSE on the lane; the lane is polled until the relay reports it closed.
        #expect(
            h.on(.localEOF(conn))
                == [.sendHTTP(RequestID(8), .up(lane: stream(1)), H.up(3, lane: stream(1), [.close(stream: stream(1))]), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        #expect(h.on(.httpResponse(RequestID(8), H.upAck(3), wallClockSeconds: 0)) == [])
        #expect(h.on(.httpResponse(RequestID(6), H.downIdle(cursor: 1, laneClosed: true), wallClockSeconds: 0)) == [])
        // Lane 0 keeps polling.
        #expect(
            h.on(.httpResponse(RequestID(3), H.downIdle(cursor: 0), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(9), .down(lane: .session), H.down(0, lane: .session), deadline: h.at(.seconds(35)), silence: nil)])
    }

    @Test("https-lanes: a cross-lane frame ends the whole session")
    func httpsLanesCrossLane() {
        var h = H.carrying(conn, over: .httpsLanes)
        _ = h.on(.localAccepted(ConnectionID(8)))
        _ = h.on(.localRead(ConnectionID(8), echoBytes))
        _ = h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0))
        let batch = H.downBatch(cursor: 1, [.data(stream: stream(2), payload: echoBytes)])
        let actions = h.on(.httpResponse(RequestID(6), batch, wallClockSeconds: 0))
        #expect(actions.contains(.closeLocal(conn, .sessionFailed)))
        #expect(actions.contains(.closeLocal(ConnectionID(8), .sessionFailed)))
        #expect(actions.contains(.sessionDown(SessionFailure(.protocolViolation, "the relay sent DATA for stream 2 on lane 1"))))
    }

    /// websocket-lanes session up; no lanes yet.
    func lanesSession() -> SessionHarness {
        var h = SessionHarness()
        let up = h.establish(.websocketLanes)
        #expect(up == [.sessionUp(.websocketLanes), .schedule(.laneIdle, at: h.at(.seconds(90)))])
        return h
    }

    @Test("websocket-lanes: one socket per stream, first message OPEN+DATA, lane loss closes one stream only")
    func websocketLanesLife() {
        var h = lanesSession()
        let lane1 = SocketID(3)
        let lane2 = SocketID(4)
        #expect(
            h.on(.localAccepted(conn))
                == [.openWebSocket(lane1, H.upgrade(lane: stream(1)).request, deadline: h.at(.seconds(20))), .cancelTimer(.laneIdle)])
        #expect(H.upgrade(lane: stream(1)).request.header("Sec-WebSocket-Protocol") == "tproxy-lane-v1.\(H.sessionText).1")
        #expect(h.on(.localAccepted(ConnectionID(8))) == [.openWebSocket(lane2, H.upgrade(lane: stream(2)).request, deadline: h.at(.seconds(20)))])
        // Bytes read while the lane connects wait in the mux.
        #expect(h.on(.localRead(conn, echoBytes)) == [])
        #expect(
            h.on(.webSocketOpened(lane1, response: H.switched(lane: stream(1))))
                == [.schedule(.socketLiveness(lane1), at: h.at(.seconds(3))), .sendWebSocketMessage(lane1, CarrierFixturesBytes.openData)])
        #expect(
            h.on(.webSocketOpened(lane2, response: H.switched(lane: stream(2))))
                == [.schedule(.socketLiveness(lane2), at: h.at(.seconds(3))), .sendWebSocketMessage(lane2, Frame.open(stream: stream(2)).encoded)])
        // Lane 1 ends without CLOSE: only stream 1 is over.
        #expect(
            h.on(.webSocketClosed(lane1, clean: false))
                == [.cancelTimer(.socketLiveness(lane1)), .closeLocal(conn, .relayClosedStream)])
        let message = Frame.data(stream: stream(2), payload: echoBytes).encoded
        #expect(h.on(.webSocketMessage(lane2, message)) == [.writeLocal(ConnectionID(8), echoBytes)])
        #expect(h.supervisor.sessionMode == .websocketLanes)
        // A relay fault on lane 2 (window overrun is impossible here; a cross-lane frame) ends lane 2 only.
        let actions = h.on(.webSocketMessage(lane2, Frame.data(stream: stream(1), payload: echoBytes).encoded))
        #expect(
            actions == [
                .closeWebSocket(lane2), .cancelTimer(.socketLiveness(lane2)), .schedule(.laneIdle, at: h.at(.seconds(90))),
                .closeLocal(ConnectionID(8), .streamFault),
            ])
        #expect(h.supervisor.sessionMode == .websocketLanes)
    }

    @Test("websocket-lanes: local close sends CLOSE on the lane, then closes the socket")
    func websocketLanesLocalClose() {
        var h = lanesSession()
        _ = h.on(.localAccepted(conn))
        _ = h.on(.webSocketOpened(SocketID(3), response: H.switched(lane: stream(1))))
        #expect(
            h.on(.localEOF(conn))
                == [.sendWebSocketMessage(SocketID(3), Frame.close(stream: stream(1)).encoded), .closeWebSocket(SocketID(3)),
                    .cancelTimer(.socketLiveness(SocketID(3))), .schedule(.laneIdle, at: h.at(.seconds(90)))])
    }

    @Test("websocket-lanes: a connection that goes away while its lane connects cancels the handshake, sending nothing")
    func cancelConnectingLane() {
        var h = lanesSession()
        _ = h.on(.localAccepted(conn))
        #expect(h.on(.localEOF(conn)) == [.closeWebSocket(SocketID(3)), .schedule(.laneIdle, at: h.at(.seconds(90)))])
        // A late upgrade answer for the cancelled socket is ignored.
        #expect(h.on(.webSocketOpened(SocketID(3), response: H.switched(lane: stream(1)))) == [])
    }

    @Test("websocket-lanes: a failed new lane upgrade ends the session")
    func failedLaneUpgrade() {
        var h = lanesSession()
        _ = h.on(.localAccepted(conn))
        _ = h.on(.webSocketOpened(SocketID(3), response: H.switched(lane: stream(1))))
        _ = h.on(.localAccepted(ConnectionID(8)))
        let actions = h.on(.webSocketUpgradeFailed(SocketID(4), response: H.notFound))
        #expect(
            Array(actions.prefix(3)) == [
                .cancelTimer(.socketLiveness(SocketID(3))), .closeWebSocket(SocketID(3)), .closeLocal(conn, .sessionFailed),
            ])
        #expect(actions.contains(.closeLocal(ConnectionID(8), .sessionFailed)))
        guard case .sessionDown(let failure)? = actions.first(where: { if case .sessionDown = $0 { true } else { false } }) else {
            Issue.record("no sessionDown in \(actions)")
            return
        }
        #expect(failure.kind == .carrierLost)
        #expect(failure.message.contains("new lane 2"))
    }

    @Test("websocket-lanes: 90 s without a lane recreates the session quietly (DELETE, new bootstrap)")
    func idleRecycle() {
        var h = lanesSession()
        h.advance(.seconds(90))
        let actions = h.on(.timerFired(.laneIdle))
        #expect(
            actions == [
                .sendHTTP(RequestID(3), .deleteSession, H.api.deleteSession(session: H.token), deadline: h.at(.seconds(20)), silence: .seconds(5)),
                .sendHTTP(RequestID(4), .bridgePage, H.bridgeRequest, deadline: h.at(.seconds(20)), silence: .seconds(5)),
            ])
        #expect(h.supervisor.sessionMode == nil)
        // A connection arriving meanwhile waits for the new session and is admitted.
        #expect(h.on(.localAccepted(conn)) == [.pauseLocalRead(conn), .schedule(.admission(conn), at: h.at(.seconds(10)))])
        _ = h.on(.httpResponse(RequestID(3), CarrierResponse(status: 204), wallClockSeconds: 0))
        _ = h.on(.httpResponse(RequestID(4), H.page(.websocketLanes), wallClockSeconds: 0))
        #expect(
            h.on(.httpResponse(RequestID(5), H.created(.websocketLanes), wallClockSeconds: 0))
                == [.sessionUp(.websocketLanes), .schedule(.laneIdle, at: h.at(.seconds(90))), .cancelTimer(.admission(conn)),
                    .openWebSocket(SocketID(6), H.upgrade(lane: stream(1)).request, deadline: h.at(.seconds(20))),
                    .cancelTimer(.laneIdle), .resumeLocalRead(conn)])
    }
}
