import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite("SessionDriver: https carrier")
struct SessionDriverHTTPSTests: SessionDriverSuite {
    /// The harness's settings with a stream's uplink queue as large as its window.
    static let windowSizedQueues = {
        var settings = SessionHarness.settings
        settings.perStreamQueueLimit = 4 << 20
        return settings
    }()

    @Test("bootstrap brings the session up and parks the first /down poll at cursor 0")
    func bootstrap() {
        var h = SessionHarness()
        let up = h.establish(.https)
        #expect(up == [.sessionUp(.https), .sendHTTP(RequestID(3), .down(lane: nil), H.down(0), deadline: h.at(.seconds(35)), silence: nil)])
        #expect(h.supervisor.sessionMode == .https)
    }

    @Test("a whole echo: OPEN+DATA in one /up, delivery, cursor advanced after it, coalesced WINDOW")
    func echoLife() {
        var h = H.established(.https)
        // Nothing reaches the relay before the connection's first bytes.
        #expect(h.on(.localAccepted(conn)) == [])
        // The stream's queue bound (one 2 MiB batch) binds inside its 4 MiB window.
        #expect(h.supervisor.readAllowance(for: conn) == 2 << 20)
        // 03 step 3: OPEN(1)+DATA(1, 16 B) as /up seq 1.
        let openBody = CarrierFixturesBytes.openData
        #expect(
            h.on(.localRead(conn, echoBytes))
                == [.sendHTTP(RequestID(4), .up(lane: nil), H.api.up(session: H.token, sequence: 1, lane: nil, body: openBody), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        // The 16 bytes left the queue for /up 1: the queue bound is whole again.
        #expect(h.supervisor.readAllowance(for: conn) == 2 << 20)
        // More bytes while /up 1 is in flight wait for the ack, then go as one body.
        #expect(h.on(.localRead(conn, echoBytes)) == [])
        #expect(h.on(.localRead(conn, echoBytes)) == [])
        #expect(
            h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(5), .up(lane: nil), H.up(2, [.data(stream: stream(1), payload: echoBytes + echoBytes)]), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        // 03 step 5: WINDOW(1,16)+DATA(1,16): written locally, then the poll acknowledges it.
        let batch = H.downBatch(cursor: 1, [.window(stream: stream(1), delta: 16), .data(stream: stream(1), payload: echoBytes)])
        #expect(
            h.on(.httpResponse(RequestID(3), batch, wallClockSeconds: 0))
                == [.writeLocal(conn, echoBytes), .sendHTTP(RequestID(6), .down(lane: nil), H.down(1), deadline: h.at(.seconds(35)), silence: nil)])
        // Credit comes back as the local socket drains, coalesced while /up 2 is in flight.
        #expect(h.on(.localWritten(conn, 10)) == [])
        #expect(h.on(.localWritten(conn, 6)) == [])
        #expect(
            h.on(.httpResponse(RequestID(5), H.upAck(2), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(7), .up(lane: nil), H.up(3, [.window(stream: stream(1), delta: 16)]), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        // An idle 204 polls again at once with the same cursor.
        #expect(
            h.on(.httpResponse(RequestID(6), H.downIdle(cursor: 1), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(8), .down(lane: nil), H.down(1), deadline: h.at(.seconds(35)), silence: nil)])
        // Local EOF: CLOSE(1) goes out once /up 3 is acked.
        #expect(h.on(.localEOF(conn)) == [])
        #expect(
            h.on(.httpResponse(RequestID(7), H.upAck(3), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(9), .up(lane: nil), H.up(4, [.close(stream: stream(1))]), deadline: h.at(.seconds(20)), silence: .seconds(5))])
        #expect(h.supervisor.carriedConnections == 0)
    }

    /// The relay holds at most 32 MiB per session in both directions; 16 full 4 MiB windows
    /// are 64 MiB. The session keeps what the relay has not returned by WINDOW within its
    /// uplink budget, and halves the budget when an `/up` gets 503.
    @Test("all streams together stay within the uplink budget, halved by a 503 on /up")
    func uplinkBudget() {
        // Queues as large as the windows, so that four streams fill the budget.
        var h = H.established(.https, settings: Self.windowSizedQueues)
        let connections = (0..<5).map { ConnectionID(UInt64(7 + $0)) }
        var sentUp: RequestID?
        var offered: [Int] = []
        for connection in connections {
            _ = h.on(.localAccepted(connection))
            let allowed = h.supervisor.readAllowance(for: connection)
            offered.append(allowed)
            guard allowed > 0 else { continue }
            let actions = h.on(.localRead(connection, [UInt8](repeating: 1, count: allowed)[...]))
            for case .sendHTTP(let id, _, _, _, _) in actions { sentUp = id }
        }
        let granted = connections.map { h.supervisor.readAllowance(for: $0) }
        // Four full windows are the whole 16 MiB budget: the fifth stream gets nothing yet.
        #expect(offered == [4 << 20, 4 << 20, 4 << 20, 4 << 20, 0])
        #expect(granted == [0, 0, 0, 0, 0])
        guard let up = sentUp else {
            Issue.record("no /up was sent")
            return
        }
        // The relay refuses the first /up for want of room: the budget halves to 8 MiB, so a
        // returned 4 MiB window (12 MiB still unacknowledged) frees nothing yet.
        let busy = CarrierResponse(status: 503, headers: [("Retry-After", "1")])
        _ = h.on(.httpResponse(up, busy, wallClockSeconds: 0))
        let window = H.downBatch(cursor: 1, [.window(stream: stream(1), delta: 4 << 20)])
        _ = h.on(.httpResponse(RequestID(3), window, wallClockSeconds: 0))
        #expect(connections.map { h.supervisor.readAllowance(for: $0) } == [0, 0, 0, 0, 0])
        // Accepted /up bodies win the budget back 256 KiB at a time.
        let retried = h.on(.timerFired(.retry(up)))
        guard case .sendHTTP(let again, _, _, _, _)? = retried.first else {
            Issue.record("no retry of the refused /up: \(retried)")
            return
        }
        _ = h.on(.httpResponse(again, H.upAck(1), wallClockSeconds: 0))
        #expect(h.supervisor.readAllowance(for: connections[0]) == 0)
    }

    @Test("the watchdog rebuilds a session whose queued uplink has not moved for the stall bound")
    func stallWatchdog() {
        var h = H.established(.https, settings: Self.windowSizedQueues)
        _ = h.on(.localAccepted(conn))
        // 4 MiB read at once: the first /up takes a 2 MiB batch, the rest waits for its ack.
        let bulk = [UInt8](repeating: 0x5A, count: 4 << 20)
        #expect(h.on(.localRead(conn, bulk[...])).contains { if case .sendHTTP = $0 { true } else { false } })
        // A quiet session with nothing owed is left alone; so is one that moved recently.
        h.advance(.seconds(29))
        #expect(h.on(.progressCheck) == [])
        h.advance(.seconds(1))
        let actions = h.onLogged(.progressCheck)
        let stalled = actions.contains {
            if case .log(.sessionStalled(let state)) = $0 { return state.contains("stream 1: send credit 0") && state.contains("/up") }
            return false
        }
        #expect(stalled, "\(actions)")
        #expect(actions.contains(.closeLocal(conn, .sessionFailed)))
        #expect(actions.contains { if case .sessionDown(let failure) = $0 { return failure.kind == .stalled } else { return false } })
    }

    @Test("the watchdog leaves a session alone whose only stall is a local client that does not read")
    func stalledReaderIsNotAStalledSession() {
        var h = H.established(.https)
        _ = h.on(.localAccepted(conn))
        _ = h.on(.localRead(conn, echoBytes))
        _ = h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0))
        // The relay's data reaches the daemon but the local client never takes it.
        let batch = H.downBatch(cursor: 1, [.data(stream: stream(1), payload: echoBytes)])
        _ = h.on(.httpResponse(RequestID(3), batch, wallClockSeconds: 0))
        h.advance(.seconds(60))
        #expect(h.on(.progressCheck) == [])
    }

    @Test("a request without an answer is retried byte-identically after the backoff")
    func identicalRetry() {
        var h = H.established(.https)
        _ = h.on(.localAccepted(conn))
        let first = h.on(.localRead(conn, echoBytes))
        guard case .sendHTTP(_, _, let upRequest, _, _) = first.first else {
            Issue.record("no /up")
            return
        }
        // The /up gets no answer: it is retried after the backoff, and the parked /down,
        // whose connection is suspect too, goes again at once, identical.
        #expect(
            h.on(.httpFailed(RequestID(4))) == [
                .schedule(.retry(RequestID(4)), at: h.at(.milliseconds(250))), .cancelHTTP(RequestID(3)),
                .sendHTTP(RequestID(5), .down(lane: nil), H.down(0), deadline: h.at(.seconds(35)), silence: nil),
            ])
        // Bytes read meanwhile do not change the retried body.
        #expect(h.on(.localRead(conn, echoBytes)) == [])
        h.advance(.milliseconds(250))
        #expect(h.on(.timerFired(.retry(RequestID(4)))) == [.sendHTTP(RequestID(6), .up(lane: nil), upRequest, deadline: h.at(.seconds(20)), silence: .seconds(5))])
        // A late answer to the abandoned attempt is ignored; the retry's ack moves on.
        #expect(h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0)) == [])
        let next = H.up(2, [.data(stream: stream(1), payload: echoBytes)])
        #expect(
            h.on(.httpResponse(RequestID(6), H.upAck(1), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(7), .up(lane: nil), next, deadline: h.at(.seconds(20)), silence: .seconds(5))])
        // The /down gets no answer: retried after the backoff, and the /up in flight goes again.
        #expect(
            h.on(.httpFailed(RequestID(5))) == [
                .schedule(.retry(RequestID(5)), at: h.at(.milliseconds(250))), .cancelHTTP(RequestID(7)),
                .sendHTTP(RequestID(8), .up(lane: nil), next, deadline: h.at(.seconds(20)), silence: .seconds(5)),
            ])
        h.advance(.milliseconds(250))
        #expect(h.on(.timerFired(.retry(RequestID(5)))) == [.sendHTTP(RequestID(9), .down(lane: nil), H.down(0), deadline: h.at(.seconds(35)), silence: nil)])
        // The second failure of the same operation doubles the backoff.
        #expect(
            h.on(.httpFailed(RequestID(9))) == [
                .schedule(.retry(RequestID(9)), at: h.at(.milliseconds(500))), .cancelHTTP(RequestID(8)),
                .sendHTTP(RequestID(10), .up(lane: nil), next, deadline: h.at(.seconds(20)), silence: .seconds(5)),
            ])
    }

    @Test("503 with Retry-After: the identical request again after that wait")
    func serviceUnavailable() {
        var h = H.carrying(conn, over: .https)
        let busy = CarrierResponse(status: 503, headers: [("Retry-After", "1")])
        #expect(h.on(.httpResponse(RequestID(4), busy, wallClockSeconds: 0)) == [.schedule(.retry(RequestID(4)), at: h.at(.seconds(1)))])
        h.advance(.seconds(1))
        #expect(
            h.on(.timerFired(.retry(RequestID(4))))
                == [.sendHTTP(RequestID(5), .up(lane: nil), H.api.up(session: H.token, sequence: 1, lane: nil, body: CarrierFixturesBytes.openData), deadline: h.at(.seconds(20)), silence: .seconds(5))])
    }

    @Test("404 on /up ends the session: local connections closed, everything cancelled, rebuild after backoff")
    func notFoundOnUp() {
        var h = H.established(.https)
        _ = h.on(.localAccepted(conn))
        _ = h.on(.localAccepted(ConnectionID(8)))
        _ = h.on(.localRead(conn, echoBytes))
        let actions = h.on(.httpResponse(RequestID(4), H.notFound, wallClockSeconds: 0))
        #expect(actions.count == 5)
        #expect(
            Array(actions.prefix(3)) == [
                .cancelHTTP(RequestID(3)), .closeLocal(conn, .sessionFailed), .closeLocal(ConnectionID(8), .sessionFailed),
            ])
        guard case .sessionDown(let failure) = actions[3] else {
            Issue.record("no sessionDown")
            return
        }
        #expect(failure.kind == .refused)
        #expect(failure.message.contains("404"))
        #expect(!failure.message.contains(H.sessionText))
        #expect(Array(actions.suffix(1)) == [.schedule(.rebuild, at: h.at(.seconds(1)))])
        #expect(h.supervisor.sessionMode == nil)
        // Late events of the dead session change nothing.
        #expect(h.on(.httpResponse(RequestID(3), H.downIdle(cursor: 0), wallClockSeconds: 0)) == [])
        #expect(h.on(.localWritten(conn, 1)) == [])
        h.advance(.seconds(1))
        #expect(h.on(.timerFired(.rebuild)) == [.sendHTTP(RequestID(5), .bridgePage, H.bridgeRequest, deadline: h.at(.seconds(20)), silence: .seconds(5))])
    }

    @Test("a malformed downlink batch and a frame for a never-opened stream end the session")
    func hostileBatches() {
        for body in [[0x7F, 0, 0, 1, 0, 0, 0, 0] as [UInt8], Frame.data(stream: stream(9), payload: [1]).encoded] {
            var h = H.established(.https)
            let answer = CarrierResponse(status: 200, headers: [("X-Down-Cursor", "1")], body: body)
            let actions = h.on(.httpResponse(RequestID(3), answer, wallClockSeconds: 0))
            guard actions.count == 2, case .sessionDown(let failure) = actions[0] else {
                Issue.record("expected sessionDown, got \(actions)")
                continue
            }
            #expect(failure.kind == .protocolViolation)
            #expect(actions[1] == .schedule(.rebuild, at: h.at(.seconds(1))))
        }
    }

    @Test("full local write queues hold back the next poll until localWritten makes room")
    func downlinkBackpressure() {
        var settings = H.settings
        settings.globalQueueLimit = 20
        var h = H.carrying(conn, over: .https, settings: settings)
        _ = h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0))
        let batch = H.downBatch(cursor: 1, [.data(stream: stream(1), payload: echoBytes + echoBytes)])
        // 32 bytes queued for the local socket >= 20: delivered, but no new poll, no reading.
        #expect(
            h.on(.httpResponse(RequestID(3), batch, wallClockSeconds: 0))
                == [.writeLocal(conn, echoBytes + echoBytes), .pauseLocalRead(conn)])
        #expect(h.supervisor.readAllowance(for: conn) == 0)
        #expect(
            h.on(.localWritten(conn, 16))
                == [.sendHTTP(RequestID(5), .down(lane: nil), H.down(1), deadline: h.at(.seconds(35)), silence: nil),
                    .sendHTTP(RequestID(6), .up(lane: nil), H.up(2, [.window(stream: stream(1), delta: 16)]), deadline: h.at(.seconds(20)), silence: .seconds(5)),
                    .resumeLocalRead(conn)])
    }

    @Test("relay CLOSE closes the local connection and lets its queued writes flush; PING is answered")
    func relayCloseAndPing() {
        var h = H.carrying(conn, over: .https)
        let batch = H.downBatch(
            cursor: 1, [.data(stream: stream(1), payload: echoBytes), .close(stream: stream(1)), .ping(token: [1, 2])])
        #expect(
            h.on(.httpResponse(RequestID(3), batch, wallClockSeconds: 0))
                == [.writeLocal(conn, echoBytes), .closeLocal(conn, .relayClosedStream),
                    .sendHTTP(RequestID(5), .down(lane: nil), H.down(1), deadline: h.at(.seconds(35)), silence: nil)])
        #expect(LocalCloseReason.relayClosedStream.flushesPendingWrites)
        #expect(
            h.on(.httpResponse(RequestID(4), H.upAck(1), wallClockSeconds: 0))
                == [.sendHTTP(RequestID(6), .up(lane: nil), H.up(2, [.pong(token: [1, 2])]), deadline: h.at(.seconds(20)), silence: .seconds(5))])
    }
}

enum CarrierFixturesBytes {
    /// 03 step 3: OPEN(1) + DATA(1, "0123456789abcdef").
    static let openData: [UInt8] = hex("0100000100000000020000010000001030313233343536373839616263646566")

    static func hex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for character in text.utf8 {
            let nibble = character <= UInt8(ascii: "9") ? character - UInt8(ascii: "0") : character - UInt8(ascii: "a") + 10
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return out
    }
}
