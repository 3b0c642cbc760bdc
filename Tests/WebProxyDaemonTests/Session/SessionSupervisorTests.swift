import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite("SessionSupervisor: bootstrap, rebuild, admission, shutdown")
struct SessionSupervisorTests {
    typealias H = SessionHarness

    @Test("a session created for another carrier than the page announced: an error naming both")
    func wrongCarrierMode() {
        var h = SessionHarness()
        _ = h.on(.start)
        _ = h.on(.httpResponse(RequestID(1), H.page(.https), wallClockSeconds: 0))
        let actions = h.on(.httpResponse(RequestID(2), H.created(.websocket), wallClockSeconds: 0))
        #expect(
            actions == [
                .sessionDown(
                    SessionFailure(
                        .carrierModeMismatch,
                        "the bridge page announced carrier https but the session was created for websocket")),
                .schedule(.rebuild, at: h.at(.seconds(1))),
            ])
    }

    @Test("a page without the bootstrap statement: wrong secret or host, or not a WEB relay")
    func notARelay() {
        var h = SessionHarness()
        _ = h.on(.start)
        let website = CarrierResponse(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>hello</html>".utf8))
        let actions = h.on(.httpResponse(RequestID(1), website, wallClockSeconds: 0))
        guard case .sessionDown(let failure)? = actions.first else {
            Issue.record("expected sessionDown, got \(actions)")
            return
        }
        #expect(failure.kind == .notARelay)
        #expect(failure.message.contains("wrong secret or host, or not a WEB relay"))
        #expect(!failure.message.contains(H.capability))
    }

    @Test("503 on session creation: the identical request again after Retry-After; no sessionDown")
    func createBusy() {
        var h = SessionHarness()
        _ = h.on(.start)
        _ = h.on(.httpResponse(RequestID(1), H.page(.https), wallClockSeconds: 0))
        let busy = CarrierResponse(status: 503, headers: [("Retry-After", "2")])
        #expect(h.on(.httpResponse(RequestID(2), busy, wallClockSeconds: 0)) == [.schedule(.retry(RequestID(2)), at: h.at(.seconds(2)))])
        h.advance(.seconds(2))
        #expect(h.on(.timerFired(.retry(RequestID(2)))) == [.sendHTTP(RequestID(3), .createSession, H.createRequest, deadline: h.at(.seconds(20)), silence: .seconds(5))])
        #expect(
            h.on(.httpResponse(RequestID(3), H.created(.https), wallClockSeconds: 0))
                == [.sessionUp(.https), .sendHTTP(RequestID(4), .down(lane: nil), H.down(0), deadline: h.at(.seconds(35)), silence: nil)])
    }

    @Test("rebuild delays grow while bootstraps fail and start over after a stable session")
    func rebuildBackoff() {
        var h = SessionHarness()
        _ = h.on(.start)
        var delays: [Duration] = []
        var request = RequestID(1)
        for _ in 0..<4 {
            let actions = h.on(.httpResponse(request, H.notFound, wallClockSeconds: 0))
            guard case .schedule(.rebuild, let at)? = actions.last else {
                Issue.record("no rebuild in \(actions)")
                return
            }
            delays.append(h.now.duration(to: at))
            h.now = at
            let next = h.on(.timerFired(.rebuild))
            guard case .sendHTTP(let id, _, _, _, _)? = next.first else { return }
            request = id
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8)])
        // A session that stays up for the stable period resets the backoff.
        _ = h.on(.httpResponse(request, H.page(.https), wallClockSeconds: 0))
        _ = h.on(.httpResponse(RequestID(request.rawValue + 1), H.created(.https), wallClockSeconds: 0))
        h.advance(.seconds(61))
        let down = h.on(.httpResponse(RequestID(request.rawValue + 2), H.notFound, wallClockSeconds: 0))
        #expect(down.last == .schedule(.rebuild, at: h.at(.seconds(1))))
    }

    @Test("at most 128 local connections: the 129th is closed at once and counted")
    func streamLimit() {
        var h = SessionHarness()
        _ = h.establish(.https)
        for raw in 1...128 { #expect(h.on(.localAccepted(ConnectionID(UInt64(raw)))) == []) }
        #expect(h.supervisor.carriedConnections == 128)
        let refused = h.onLogged(.localAccepted(ConnectionID(129)))
        #expect(refused == [.closeLocal(ConnectionID(129), .streamLimit), .log(.localConnectionRefused(.streamLimit, total: 1))])
        #expect(h.supervisor.refusedConnections == 1)
        // One leaves, the next fits.
        _ = h.on(.localEOF(ConnectionID(5)))
        #expect(h.on(.localAccepted(ConnectionID(130))) == [])
    }

    @Test("connections arriving during a rebuild wait unread, then are closed after the bound")
    func admissionWait() {
        var h = SessionHarness()
        _ = h.establish(.https)
        _ = h.on(.httpResponse(RequestID(3), H.notFound, wallClockSeconds: 0))
        let first = ConnectionID(1)
        #expect(h.on(.localAccepted(first)) == [.pauseLocalRead(first), .schedule(.admission(first), at: h.at(.seconds(10)))])
        #expect(h.supervisor.readAllowance(for: first) == 0)
        h.advance(.seconds(10))
        #expect(h.on(.timerFired(.admission(first))) == [.closeLocal(first, .sessionUnavailable)])
        #expect(h.supervisor.refusedConnections == 1)
        // One that arrives later is admitted when the session comes up.
        let second = ConnectionID(2)
        _ = h.on(.localAccepted(second))
        _ = h.on(.timerFired(.rebuild))
        _ = h.on(.httpResponse(RequestID(4), H.page(.https), wallClockSeconds: 0))
        #expect(
            h.on(.httpResponse(RequestID(5), H.created(.https), wallClockSeconds: 0))
                == [.sessionUp(.https), .sendHTTP(RequestID(6), .down(lane: nil), H.down(0), deadline: h.at(.seconds(35)), silence: nil),
                    .cancelTimer(.admission(second)), .resumeLocalRead(second)])
        #expect(h.supervisor.readAllowance(for: second) == 2 << 20)
    }

    @Test("shutdown closes local connections, sends DELETE with a bounded wait, then stops")
    func shutdown() {
        var h = SessionHarness()
        _ = h.establish(.https)
        _ = h.on(.localAccepted(ConnectionID(1)))
        let actions = h.on(.shutdown)
        #expect(
            actions == [
                .cancelHTTP(RequestID(3)), .closeLocal(ConnectionID(1), .shutdown),
                .sendHTTP(RequestID(4), .deleteSession, H.api.deleteSession(session: H.token), deadline: h.at(.seconds(3)), silence: .seconds(5)),
            ])
        #expect(H.api.deleteSession(session: H.token).header("Content-Type") == nil)
        #expect(h.on(.localAccepted(ConnectionID(2))) == [.closeLocal(ConnectionID(2), .shutdown)])
        #expect(
            h.onLogged(.httpResponse(RequestID(4), CarrierResponse(status: 204), wallClockSeconds: 0))
                == [.log(.sessionDeleted(status: 204)), .stopped])
        #expect(h.on(.shutdown) == [])
    }

    @Test("shutdown with a DELETE that gets no answer, and shutdown while a bootstrap retry waits")
    func shutdownEdges() {
        var h = SessionHarness()
        _ = h.establish(.websocket)
        _ = h.on(.shutdown)
        #expect(h.on(.httpFailed(RequestID(4))) == [.stopped])

        var idle = SessionHarness()
        _ = idle.on(.start)
        _ = idle.on(.httpFailed(RequestID(1)))
        _ = idle.on(.localAccepted(ConnectionID(1)))
        #expect(
            idle.on(.shutdown)
                == [.cancelTimer(.admission(ConnectionID(1))), .closeLocal(ConnectionID(1), .shutdown),
                    .cancelTimer(.retry(RequestID(1))), .stopped])
    }

    @Test("log events and failures never carry tokens, the capability or payload bytes")
    func logsAreClean() {
        var h = SessionHarness()
        var everything: [SessionAction] = []
        everything += h.onLogged(.start)
        everything += h.onLogged(.httpResponse(RequestID(1), H.page(.https), wallClockSeconds: 0))
        everything += h.onLogged(.httpResponse(RequestID(2), H.created(.https), wallClockSeconds: 0))
        everything += h.onLogged(.localAccepted(ConnectionID(1)))
        everything += h.onLogged(.localRead(ConnectionID(1), echoBytes))
        everything += h.onLogged(.httpFailed(RequestID(4)))
        everything += h.onLogged(.httpResponse(RequestID(3), H.notFound, wallClockSeconds: 0))
        let text = everything.map(\.description).joined(separator: "\n")
        for secret in [H.capability, H.bootstrap, H.sessionText, "0123456789abcdef"] {
            #expect(!text.contains(secret))
        }
        #expect(text.contains("log("))
    }
}
