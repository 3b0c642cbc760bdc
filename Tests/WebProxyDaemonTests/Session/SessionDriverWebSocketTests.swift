import Testing
import WebProxyCore
import WebProxyNet

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite("SessionDriver: websocket carrier")
struct SessionDriverWebSocketTests: SessionDriverSuite {
    let socket = SocketID(3)

    /// Session up, socket 3 open.
    func openSession(batchLimit: Int = 2_097_152) -> SessionHarness {
        var h = SessionHarness()
        _ = h.on(.start)
        _ = h.on(.httpResponse(RequestID(1), H.page(.websocket, batchLimit: batchLimit), wallClockSeconds: 0))
        let up = h.on(.httpResponse(RequestID(2), H.created(.websocket), wallClockSeconds: 0))
        #expect(up == [.sessionUp(.websocket), .openWebSocket(socket, H.upgrade().request, deadline: h.at(.seconds(20)))])
        #expect(H.upgrade().request.header("Sec-WebSocket-Protocol") == "tproxy-v1." + H.sessionText)
        #expect(H.upgrade().request.header("Authorization") == nil)
        #expect(h.on(.webSocketOpened(socket, response: H.switched())) == [.schedule(.socketLiveness(socket), at: h.at(.seconds(3)))])
        return h
    }

    @Test("one batch per message both ways; relay data written locally; WINDOW after localWritten")
    func echoLife() {
        var h = openSession()
        _ = h.on(.localAccepted(conn))
        #expect(h.on(.localRead(conn, echoBytes)) == [.sendWebSocketMessage(socket, CarrierFixturesBytes.openData)])
        let message = [Frame.window(stream: stream(1), delta: 16), .data(stream: stream(1), payload: echoBytes)].encodedBatch()
        #expect(h.on(.webSocketMessage(socket, message)) == [.writeLocal(conn, echoBytes)])
        #expect(
            h.on(.localWritten(conn, 16))
                == [.sendWebSocketMessage(socket, Frame.window(stream: stream(1), delta: 16).encoded)])
        #expect(h.on(.localEOF(conn)) == [.sendWebSocketMessage(socket, Frame.close(stream: stream(1)).encoded)])
    }

    @Test("no new message while the socket buffers batchLimit bytes or more")
    func sendBackpressure() {
        var h = openSession(batchLimit: 100)
        _ = h.on(.localAccepted(conn))
        // 32 bytes sent, 32 < 100 buffered: a second read goes out too.
        _ = h.on(.localRead(conn, echoBytes))
        let chunk = Array(repeating: UInt8(0x41), count: 80)[...]
        #expect(
            h.on(.localRead(conn, chunk))
                == [.sendWebSocketMessage(socket, Frame.data(stream: stream(1), payload: chunk).encoded)])
        // 32 + 88 = 120 >= 100: held back.
        #expect(h.on(.localRead(conn, echoBytes)) == [])
        #expect(
            h.on(.webSocketDrained(socket, bufferedBytes: 99))
                == [.sendWebSocketMessage(socket, Frame.data(stream: stream(1), payload: echoBytes).encoded)])
    }

    @Test("with 2 MiB batches, messages of at most 256 KiB (the transport's high watermark), none while the socket buffers that much, two queued per stream")
    func sendBackpressureAtHighWatermark() {
        #expect(SessionDriver.socketBufferBytes == TCPConnection.WriteLimits.default.highWatermark)
        var h = openSession()
        _ = h.on(.localAccepted(conn))
        _ = h.on(.localRead(conn, echoBytes))
        // Two messages may wait per stream, not the batch of 2 MiB the relay would take.
        #expect(h.supervisor.readAllowance(for: conn) == 512 << 10)
        // 300 KiB: the first message is 256 KiB exactly, and the socket then holds enough.
        let chunk = Array(repeating: UInt8(0x41), count: 300 << 10)[...]
        let firstBytes = (256 << 10) - 4 * Frame.headerLength
        let first = stride(from: 0, to: firstBytes, by: FrameLimits.clientDataChunk).map {
            Frame.data(stream: stream(1), payload: chunk[$0..<min($0 + FrameLimits.clientDataChunk, firstBytes)])
        }
        #expect(first.encodedBatch().count == 256 << 10)
        #expect(h.on(.localRead(conn, chunk)) == [.sendWebSocketMessage(socket, first.encodedBatch())])
        #expect(h.on(.localRead(conn, echoBytes)) == [])
        #expect(h.on(.webSocketDrained(socket, bufferedBytes: 256 << 10)) == [])
        let rest = Frame.data(stream: stream(1), payload: (Array(chunk[firstBytes...]) + echoBytes)[...])
        #expect(h.on(.webSocketDrained(socket, bufferedBytes: 64 << 10)) == [.sendWebSocketMessage(socket, rest.encoded)])
    }

    @Test("Ping after 3 s of silence, loss after 7 s: the session ends and locals are closed")
    func liveness() {
        var h = openSession()
        _ = h.on(.localAccepted(conn))
        h.advance(.seconds(2))
        #expect(h.on(.webSocketMessage(socket, Frame.ping(token: []).encoded)) == [.sendWebSocketMessage(socket, Frame.pong(token: []).encoded)])
        h.advance(.seconds(2))
        // Heard at t+2: not silent for 3 s yet.
        #expect(h.on(.timerFired(.socketLiveness(socket))) == [.schedule(.socketLiveness(socket), at: h.at(.seconds(1)))])
        h.advance(.seconds(1))
        #expect(
            h.on(.timerFired(.socketLiveness(socket)))
                == [.sendWebSocketPing(socket), .schedule(.socketLiveness(socket), at: h.at(.seconds(4)))])
        h.advance(.seconds(4))
        let actions = h.on(.timerFired(.socketLiveness(socket)))
        #expect(
            Array(actions.prefix(4)) == [
                .closeWebSocket(socket), .cancelTimer(.socketLiveness(socket)), .closeLocal(conn, .sessionFailed),
                .sessionDown(SessionFailure(.carrierLost, "the WebSocket was silent for 7 s")),
            ])
        #expect(actions.last == .schedule(.rebuild, at: h.at(.seconds(1))))
    }

    @Test("a Pong keeps the socket alive")
    func pongKeepsAlive() {
        var h = openSession()
        h.advance(.seconds(3))
        #expect(h.on(.timerFired(.socketLiveness(socket))) == [.sendWebSocketPing(socket), .schedule(.socketLiveness(socket), at: h.at(.seconds(4)))])
        h.advance(.seconds(3))
        #expect(h.on(.webSocketPong(socket)) == [])
        h.advance(.seconds(1))
        #expect(h.on(.timerFired(.socketLiveness(socket))) == [.schedule(.socketLiveness(socket), at: h.at(.seconds(2)))])
    }

    @Test("losing the socket, a failed upgrade or a wrong subprotocol ends the session")
    func socketLoss() {
        var h = openSession()
        _ = h.on(.localAccepted(conn))
        _ = h.on(.localRead(conn, echoBytes))
        let lost = h.on(.webSocketClosed(socket, clean: false))
        #expect(Array(lost.prefix(2)) == [.cancelTimer(.socketLiveness(socket)), .closeLocal(conn, .sessionFailed)])
        #expect(lost.contains(.sessionDown(SessionFailure(.carrierLost, "the relay closed the WebSocket"))))

        for answer in [H.notFound, H.switched(lane: stream(1))] as [CarrierResponse] {
            var h = SessionHarness()
            _ = h.on(.start)
            _ = h.on(.httpResponse(RequestID(1), H.page(.websocket), wallClockSeconds: 0))
            _ = h.on(.httpResponse(RequestID(2), H.created(.websocket), wallClockSeconds: 0))
            let actions = answer.status == 101
                ? h.on(.webSocketOpened(socket, response: answer)) : h.on(.webSocketUpgradeFailed(socket, response: answer))
            guard case .sessionDown(let failure)? = actions.first else {
                Issue.record("expected sessionDown, got \(actions)")
                continue
            }
            #expect(failure.kind == .carrierLost)
            #expect(!failure.message.contains(H.sessionText))
        }
    }

    @Test("a text or empty message and a malformed batch end the session")
    func malformedMessage() {
        var h = openSession()
        let actions = h.on(.webSocketMessage(socket, [0x02, 0, 0, 1, 0, 0, 0, 4, 1]))
        guard case .sessionDown(let failure)? = actions.dropFirst(2).first else {
            Issue.record("expected sessionDown, got \(actions)")
            return
        }
        #expect(failure.kind == .protocolViolation)
    }
}
