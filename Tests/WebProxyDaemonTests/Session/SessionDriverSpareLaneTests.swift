import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite("SessionDriver: websocket-lanes' spare lane")
struct SessionDriverSpareLaneTests: SessionDriverSuite {
    static let settings = SessionSettings(windowUpdateThreshold: 1, opensSpareLane: true)

    /// websocket-lanes session up with the spare lane for stream 1 upgraded (socket 3).
    func sessionWithSpare(settings: SessionSettings = Self.settings) -> SessionHarness {
        var h = SessionHarness(settings: settings)
        let up = h.establish(.websocketLanes)
        #expect(up == [.sessionUp(.websocketLanes), .openWebSocket(SocketID(3), H.upgrade(lane: stream(1)).request, deadline: h.at(.seconds(20)))])
        // Upgraded, it sends nothing: no OPEN before a connection takes it.
        #expect(
            h.on(.webSocketOpened(SocketID(3), response: H.switched(lane: stream(1))))
                == [.schedule(.socketLiveness(SocketID(3)), at: h.at(.seconds(3)))])
        return h
    }

    @Test("a new connection takes the upgraded spare, its OPEN leaves at once, and the next spare is upgraded for stream 2")
    func connectionTakesSpare() {
        var h = sessionWithSpare()
        #expect(
            h.on(.localAccepted(conn))
                == [.openWebSocket(SocketID(4), H.upgrade(lane: stream(2)).request, deadline: h.at(.seconds(20))),
                    .sendWebSocketMessage(SocketID(3), Frame.open(stream: stream(1)).encoded)])
        #expect(
            h.on(.localRead(conn, echoBytes))
                == [.sendWebSocketMessage(SocketID(3), Frame.data(stream: stream(1), payload: echoBytes).encoded)])
        #expect(h.on(.webSocketMessage(SocketID(3), Frame.data(stream: stream(1), payload: echoBytes).encoded)) == [.writeLocal(conn, echoBytes)])
        // The second connection takes the spare while it still connects: its OPEN waits for the upgrade.
        let second = ConnectionID(8)
        #expect(h.on(.localAccepted(second)) == [.openWebSocket(SocketID(5), H.upgrade(lane: stream(3)).request, deadline: h.at(.seconds(20)))])
        #expect(
            h.on(.webSocketOpened(SocketID(4), response: H.switched(lane: stream(2))))
                == [.schedule(.socketLiveness(SocketID(4)), at: h.at(.seconds(3))), .sendWebSocketMessage(SocketID(4), Frame.open(stream: stream(2)).encoded)])
    }

    @Test("a spare the relay closes, or speaks on, is dropped alone; the next connection opens its own lane and a new spare")
    func spareLost() {
        var h = sessionWithSpare()
        #expect(
            h.on(.webSocketClosed(SocketID(3), clean: false))
                == [.cancelTimer(.socketLiveness(SocketID(3))), .schedule(.laneIdle, at: h.at(.seconds(90)))])
        #expect(h.supervisor.sessionMode == .websocketLanes)
        #expect(
            h.on(.localAccepted(conn))
                == [.openWebSocket(SocketID(4), H.upgrade(lane: stream(1)).request, deadline: h.at(.seconds(20))), .cancelTimer(.laneIdle),
                    .openWebSocket(SocketID(5), H.upgrade(lane: stream(2)).request, deadline: h.at(.seconds(20)))])
        _ = h.on(.webSocketOpened(SocketID(5), response: H.switched(lane: stream(2))))
        // No stream is open on the spare, so any message there is the relay's mistake.
        let actions = h.onLogged(.webSocketMessage(SocketID(5), Frame.data(stream: stream(2), payload: echoBytes).encoded))
        #expect(actions.filter { if case .log = $0 { false } else { true } } == [.closeWebSocket(SocketID(5)), .cancelTimer(.socketLiveness(SocketID(5)))])
        #expect(actions.contains(.log(.streamAborted(stream(2), "the relay sent a message on the spare lane"))))
        #expect(h.supervisor.sessionMode == .websocketLanes)
    }

    @Test("a failed spare upgrade ends the session, as any new lane's does")
    func spareUpgradeFails() {
        var h = SessionHarness(settings: Self.settings)
        _ = h.establish(.websocketLanes)
        let actions = h.on(.webSocketUpgradeFailed(SocketID(3), response: H.notFound))
        guard case .sessionDown(let failure)? = actions.first(where: { if case .sessionDown = $0 { true } else { false } }) else {
            Issue.record("no sessionDown in \(actions)")
            return
        }
        #expect(failure.kind == .carrierLost)
        #expect(failure.message.contains("new lane 1"))
    }

    @Test("no spare while the lane sockets reach max-streams; one once a lane closes")
    func spareWithinStreamLimit() {
        var h = sessionWithSpare(settings: SessionSettings(maxStreams: 1, windowUpdateThreshold: 1, opensSpareLane: true))
        #expect(h.on(.localAccepted(conn)) == [.sendWebSocketMessage(SocketID(3), Frame.open(stream: stream(1)).encoded)])
        #expect(
            h.on(.localEOF(conn))
                == [.sendWebSocketMessage(SocketID(3), Frame.close(stream: stream(1)).encoded), .closeWebSocket(SocketID(3)),
                    .cancelTimer(.socketLiveness(SocketID(3))),
                    .openWebSocket(SocketID(4), H.upgrade(lane: stream(2)).request, deadline: h.at(.seconds(20)))])
    }
}
