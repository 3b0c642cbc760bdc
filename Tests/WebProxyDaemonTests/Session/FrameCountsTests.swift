import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite struct FrameCountsTests {
    typealias H = SessionHarness

    @Test func countsTheFramesOfAnEncodedBatch() {
        #expect(FrameCounts.frames(inBatch: []) == 0)
        #expect(FrameCounts.frames(inBatch: CarrierFixturesBytes.openData) == 2)
        let mixed: [Frame] = [
            .pong(token: [1, 2, 3]), .close(stream: stream(2)), .window(stream: stream(1), delta: 16), .open(stream: stream(3)),
            .data(stream: stream(1), payload: Array(repeating: 0x41, count: 70_000)[...]),
        ]
        #expect(FrameCounts.frames(inBatch: mixed.encodedBatch()) == 5)
    }

    @Test func theSupervisorCountsEveryFrameBothWaysAcrossSessions() {
        let socket = SocketID(3)
        let conn = ConnectionID(7)
        var h = SessionDriverWebSocketTests().openSession()
        // HELLO out, WELCOME in.
        #expect(h.supervisor.frameCounts == FrameCounts(sent: 1, received: 1))
        _ = h.on(.localAccepted(conn))
        _ = h.on(.localRead(conn, echoBytes))  // OPEN + DATA
        let message = [Frame.window(stream: stream(1), delta: 16), .data(stream: stream(1), payload: echoBytes)]
        _ = h.on(.webSocketMessage(socket, message.encodedBatch()))
        _ = h.on(.localWritten(conn, 16))  // WINDOW
        #expect(h.supervisor.frameCounts == FrameCounts(sent: 4, received: 3))
        // The session is lost; what it carried stays counted.
        _ = h.on(.webSocketClosed(socket, clean: false))
        #expect(h.supervisor.sessionMode == nil)
        #expect(h.supervisor.frameCounts == FrameCounts(sent: 4, received: 3))
    }
}
