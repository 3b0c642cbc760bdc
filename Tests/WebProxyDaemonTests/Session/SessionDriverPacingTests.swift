import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

/// The uplink pacer in the session: bulk DATA leaves only within the room the pacer allows,
/// a light stream (chat) is not held back by it, and WINDOW returns open the room again.
@Suite("SessionDriver: uplink pacing")
struct SessionDriverPacingTests: SessionDriverSuite {
    let socket = SocketID(3)
    let bulk = ConnectionID(7)
    let chat = ConnectionID(8)

    /// A websocket session with the pacer on, socket 3 open.
    func openSession() -> SessionHarness {
        var h = SessionHarness(settings: SessionSettings(windowUpdateThreshold: 1, pacesUplink: true))
        _ = h.on(.start)
        _ = h.on(.httpResponse(RequestID(1), H.page(.websocket), wallClockSeconds: 0))
        _ = h.on(.httpResponse(RequestID(2), H.created(.websocket), wallClockSeconds: 0))
        _ = h.on(.webSocketOpened(socket, response: H.switched()))
        return h
    }

    @Test("bulk DATA waits for the pacer's room; chat DATA goes at once; WINDOW reopens the room")
    func bulkWaitsChatGoes() {
        var h = openSession()
        _ = h.on(.localAccepted(bulk))
        _ = h.on(.localAccepted(chat))
        let upload = (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0) }
        // Reading is not paced: the stream's queue bound (two messages) allows the whole read.
        #expect(h.supervisor.readAllowance(for: bulk) == 512 << 10)
        // Before a rate was measured, the pacer allows its floor in flight and a batch more,
        // `minimumBatchBulkBytes` of bulk DATA a message.
        let batch = UplinkPacer.minimumBatchBulkBytes
        let first = [Frame.open(stream: stream(1)), .data(stream: stream(1), payload: upload[..<batch])]
        let rest = (1...UplinkPacer.floor / batch).map { index in
            [Frame.data(stream: stream(1), payload: upload[index * batch..<(index + 1) * batch])]
        }
        let expected = ([first] + rest).map { SessionAction.sendWebSocketMessage(socket, $0.encodedBatch()) }
        #expect(h.on(.localRead(bulk, upload[...])) == expected)
        // The chat's bytes do not wait behind the held-back upload.
        let message = [UInt8](repeating: 0x43, count: 64)
        let chatBatch = [Frame.open(stream: stream(2)), .data(stream: stream(2), payload: message[...])]
        #expect(h.on(.localRead(chat, message[...])) == [.sendWebSocketMessage(socket, chatBatch.encodedBatch())])
        // 50 ms later the relay returns the first bytes: the pacer measured a round trip and
        // a rate, and more of the upload leaves.
        h.advance(.milliseconds(50))
        let window = Frame.window(stream: stream(1), delta: UInt32(UplinkPacer.floor)).encoded
        let after = h.on(.webSocketMessage(socket, window))
        #expect(h.supervisor.stateSummary.contains("stream 1"))
        let sent = after.compactMap { action -> Int? in
            if case .sendWebSocketMessage(_, let batch) = action { return batch.count } else { return nil }
        }
        #expect(!sent.isEmpty && sent.reduce(0, +) > UplinkPacer.floor / 2, "\(after)")
    }

    @Test("the https carrier is not paced: its single /up in flight needs full batches")
    func httpsIsNotPaced() {
        var h = H.established(.https, settings: SessionSettings(windowUpdateThreshold: 1, pacesUplink: true))
        _ = h.on(.localAccepted(bulk))
        let actions = h.on(.localRead(bulk, [UInt8](repeating: 1, count: 1 << 20)[...]))
        let bodies = actions.compactMap { action -> Int? in
            if case .sendHTTP(_, _, let request, _, _) = action { return request.body.count } else { return nil }
        }
        #expect(bodies.count == 1 && bodies[0] > 1 << 20, "\(bodies)")
    }
}
