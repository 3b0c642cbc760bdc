import Testing
@testable import WebProxyCore

private func s(_ raw: UInt32) -> StreamID { StreamID(rawValue: raw) ?? .max }
private func bytes(_ text: String) -> ArraySlice<UInt8> { Array(text.utf8)[...] }
private let mebibyte = [UInt8](repeating: 0x5A, count: 1 << 20)[...]
private let fourMiB = 4_194_304

/// A mux with `count` streams whose OPENs were already sent.
private func muxWithOpenStreams(_ count: Int, configuration: SessionMux.Configuration = .init()) throws -> SessionMux {
    var mux = SessionMux(configuration: configuration)
    for _ in 0..<count { _ = try mux.open() }
    _ = mux.drainUplink()
    return mux
}

@Suite struct SessionMuxTests {
    // MARK: Stream ids

    @Test func allocatesIDsFromOneAndQueuesOpen() throws {
        var mux = SessionMux()
        #expect(try mux.open() == s(1))
        #expect(try mux.open() == s(2))
        #expect(try mux.open() == s(3))
        #expect(mux.drainUplink() == [.open(stream: s(1)), .open(stream: s(2)), .open(stream: s(3))])
    }

    @Test func dataMayFollowOpenWithoutAcknowledgement() throws {
        var mux = SessionMux()
        let id = try mux.open()
        try mux.enqueue(bytes("hello stream one"), on: id)
        #expect(mux.drainUplink() == [.open(stream: id), .data(stream: id, payload: bytes("hello stream one"))])
    }

    @Test func refusesThe129thLiveStreamAndAcceptsAgainAfterAClose() throws {
        var mux = SessionMux()
        for raw: UInt32 in 1...128 { #expect(try mux.open() == s(raw)) }
        #expect(throws: MuxError(.refused, .liveStreamLimit(128))) { try mux.open() }
        #expect(mux.liveStreamCount == 128)
        #expect(!mux.isFinished)
        mux.close(s(5))
        // A refused open consumed no id.
        #expect(try mux.open() == s(129))
        #expect(throws: MuxError(.refused, .liveStreamLimit(128))) { try mux.open() }
    }

    @Test func aRelayCloseAlsoFreesALiveSlot() throws {
        var mux = try muxWithOpenStreams(0, configuration: .init(maxLiveStreams: 2))
        _ = try mux.open()
        _ = try mux.open()
        _ = mux.drainUplink()
        #expect(throws: MuxError(.refused, .liveStreamLimit(2))) { try mux.open() }
        #expect(try mux.receive(.close(stream: s(1))) == .closeLocal(s(1)))
        #expect(try mux.open() == s(3))
    }

    @Test func idsRunOutAfter0xFFFFFFWithASessionError() throws {
        var mux = SessionMux(configuration: .init(), nextStreamID: 0xFF_FFFE)
        #expect(try mux.open() == s(0xFF_FFFE))
        #expect(try mux.open() == .max)
        #expect(throws: MuxError.streamIDsExhausted) { try mux.open() }
        #expect(MuxError.streamIDsExhausted.scope == .session)
        // Live streams keep working so the daemon can drain them while it rebuilds.
        try mux.enqueue(bytes("max id"), on: .max)
        #expect(mux.drainUplink() == [
            .open(stream: s(0xFF_FFFE)), .open(stream: .max), .data(stream: .max, payload: bytes("max id")),
        ])
        #expect(throws: MuxError.streamIDsExhausted) { try mux.open() }
    }

    // MARK: Close races

    @Test func localCloseCrossingRelayData() throws {
        var mux = SessionMux()
        let id = try mux.open()
        try mux.enqueue(bytes("abc"), on: id)
        #expect(mux.drainUplink() == [.open(stream: id), .data(stream: id, payload: bytes("abc"))])
        let closed = mux.close(id)
        #expect(closed)
        // Sent by the relay before it saw our CLOSE: all ignored.
        #expect(try mux.receive(.data(stream: id, payload: bytes("abc"))) == nil)
        #expect(try mux.receive(.window(stream: id, delta: 3)) == nil)
        #expect(try mux.receive(.close(stream: id)) == nil)
        #expect(mux.drainUplink() == [.close(stream: id)])
        #expect(mux.closedStreams.contains(id))
        #expect(mux.sendCredit(for: id) == 0)
        #expect(throws: MuxError(.refused, .streamNotLive(id))) { try mux.enqueue(bytes("x"), on: id) }
        let closedAgain = mux.close(id)
        #expect(!closedAgain)
        #expect(mux.drainUplink() == [])
    }

    @Test func localCloseDropsQueuedData() throws {
        var mux = try muxWithOpenStreams(1)
        try mux.enqueue(bytes("never sent"), on: s(1))
        mux.close(s(1))
        #expect(mux.queuedBytes == 0)
        #expect(mux.drainUplink() == [.close(stream: s(1))])
    }

    @Test func relayCloseWhileLocalDataIsQueued() throws {
        var mux = try muxWithOpenStreams(2)
        try mux.enqueue(mebibyte, on: s(1))
        try mux.enqueue(bytes("keep"), on: s(2))
        #expect(mux.queuedBytes == (1 << 20) + 4)
        #expect(try mux.receive(.close(stream: s(1))) == .closeLocal(s(1)))
        #expect(mux.queuedBytes(on: s(1)) == 0)
        #expect(mux.queuedBytes == 4)
        #expect(!mux.isLive(s(1)))
        // No CLOSE is echoed back, and the other stream is untouched.
        #expect(mux.drainUplink() == [.data(stream: s(2), payload: bytes("keep"))])
        let closedAgain = mux.close(s(1))
        #expect(!closedAgain)
        #expect(mux.closedStreams.contains(s(1)))
    }

    @Test func lateWindowAfterRelayClose() throws {
        var mux = try muxWithOpenStreams(1)
        #expect(try mux.receive(.close(stream: s(1))) == .closeLocal(s(1)))
        #expect(try mux.receive(.window(stream: s(1), delta: 100)) == nil)
        #expect(try mux.receive(.data(stream: s(1), payload: bytes("late"))) == nil)
        #expect(mux.drainUplink() == [])
    }

    @Test func closingBeforeTheOpenWasSentSendsNothing() throws {
        var mux = SessionMux()
        let id = try mux.open()
        try mux.enqueue(bytes("abc"), on: id)
        let closed = mux.close(id)
        #expect(closed)
        #expect(!mux.hasPendingUplink)
        #expect(mux.drainUplink() == [])
        #expect(mux.closedStreams.contains(id))
        #expect(try mux.open() == s(2))
    }

    @Test func aFrameForAStreamWhoseOpenIsUnsentIsAProtocolError() throws {
        var mux = SessionMux()
        let id = try mux.open()
        #expect(throws: MuxError(.session, .frameForUnopenedStream(.data, id))) {
            try mux.receive(.data(stream: id, payload: bytes("x")))
        }
        #expect(mux.isFinished)
    }

    @Test func aFrameForANeverOpenedIDEndsTheSession() throws {
        var mux = try muxWithOpenStreams(1)
        #expect(throws: MuxError(.session, .frameForUnopenedStream(.window, s(2)))) {
            try mux.receive(.window(stream: s(2), delta: 1))
        }
        #expect(mux.isFinished)
        #expect(throws: MuxError.sessionFinished) { try mux.receive(.close(stream: s(1))) }
        #expect(throws: MuxError.sessionFinished) { try mux.open() }
        #expect(throws: MuxError.sessionFinished) { try mux.enqueue(bytes("x"), on: s(1)) }
        #expect(!mux.hasPendingUplink)
    }

    // MARK: Receive window

    @Test func fourMebibytesPlusOneByteOfRelayDataEndsTheSession() throws {
        var mux = try muxWithOpenStreams(1)
        for _ in 0..<4 {
            #expect(try mux.receive(.data(stream: s(1), payload: mebibyte)) == .deliver(s(1), mebibyte))
        }
        #expect(mux.undeliveredBytes(on: s(1)) == fourMiB)
        let error = MuxError(.session, .receiveWindowOverrun(s(1), received: 1, window: 0))
        #expect(throws: error) { try mux.receive(.data(stream: s(1), payload: bytes("!"))) }
        #expect(mux.isFinished)
        #expect(error.description == "relay sent 1 bytes of DATA on stream 1 with only 0 bytes of window left")
    }

    @Test func anOverrunInsideOneFrameIsCaughtToo() throws {
        var mux = try muxWithOpenStreams(1)
        for _ in 0..<3 { _ = try mux.receive(.data(stream: s(1), payload: mebibyte)) }
        _ = try mux.receive(.data(stream: s(1), payload: mebibyte.dropFirst(10)))
        #expect(throws: MuxError(.session, .receiveWindowOverrun(s(1), received: 11, window: 10))) {
            try mux.receive(.data(stream: s(1), payload: mebibyte.prefix(11)))
        }
    }

    @Test func receiveCreditReturnsOnceWorthItAndCoalesced() throws {
        var mux = try muxWithOpenStreams(1)
        for _ in 0..<4 { _ = try mux.receive(.data(stream: s(1), payload: mebibyte)) }
        try mux.delivered(100 << 10, on: s(1))
        #expect(!mux.hasPendingUplink)
        try mux.delivered(100 << 10, on: s(1))
        try mux.delivered(100 << 10, on: s(1))
        #expect(mux.hasPendingUplink)
        // Pending credit crossed 256 KiB; everything delivered by the batch goes in one WINDOW.
        try mux.delivered(50 << 10, on: s(1))
        #expect(mux.drainUplink() == [.window(stream: s(1), delta: 350 << 10)])
        // The relay may send exactly that much more.
        _ = try mux.receive(.data(stream: s(1), payload: mebibyte.prefix(350 << 10)))
        #expect(throws: MuxError(.session, .receiveWindowOverrun(s(1), received: 1, window: 0))) {
            try mux.receive(.data(stream: s(1), payload: bytes("x")))
        }
    }

    @Test func anExhaustedReceiveWindowAlwaysGetsItsCreditBack() throws {
        var mux = try muxWithOpenStreams(1)
        for _ in 0..<4 { _ = try mux.receive(.data(stream: s(1), payload: mebibyte)) }
        var returned: [Frame] = []
        for _ in 0..<64 {
            try mux.delivered(64 << 10, on: s(1))
            returned += mux.drainUplink()
        }
        #expect(returned == Array(repeating: .window(stream: s(1), delta: 256 << 10), count: 16))
        #expect(mux.undeliveredBytes(on: s(1)) == 0)
        for _ in 0..<4 {
            #expect(try mux.receive(.data(stream: s(1), payload: mebibyte)) == .deliver(s(1), mebibyte))
        }
    }

    @Test func aThresholdOfOneReturnsEveryDeliveryButStillOneWindowPerBatch() throws {
        var mux = try muxWithOpenStreams(1, configuration: .init(windowUpdateThreshold: 0))
        #expect(mux.configuration.windowUpdateThreshold == 1)
        _ = try mux.receive(.data(stream: s(1), payload: bytes("0123456789")))
        try mux.delivered(3, on: s(1))
        try mux.delivered(7, on: s(1))
        #expect(mux.drainUplink() == [.window(stream: s(1), delta: 10)])
    }

    @Test func deliveredCountsAreChecked() throws {
        var mux = try muxWithOpenStreams(1)
        _ = try mux.receive(.data(stream: s(1), payload: bytes("abc")))
        #expect(throws: MuxError(.refused, .deliveredCountInvalid(s(1), reported: 4, outstanding: 3))) {
            try mux.delivered(4, on: s(1))
        }
        #expect(throws: MuxError(.refused, .deliveredCountInvalid(s(1), reported: -1, outstanding: 3))) {
            try mux.delivered(-1, on: s(1))
        }
        try mux.delivered(3, on: s(1))
        #expect(mux.undeliveredBytes(on: s(1)) == 0)
        // A stream closed meanwhile: nothing to return, nothing to complain about.
        _ = try mux.receive(.close(stream: s(1)))
        try mux.delivered(10, on: s(1))
        #expect(!mux.isFinished)
    }

    // MARK: Send window

    @Test func sendCreditRunsOutAndResumesWithWindow() throws {
        var mux = try muxWithOpenStreams(1)
        #expect(mux.sendCredit(for: s(1)) == fourMiB)
        for _ in 0..<4 { try mux.enqueue(mebibyte, on: s(1)) }
        #expect(mux.sendCredit(for: s(1)) == 0)
        #expect(mux.queuedBytes(on: s(1)) == fourMiB)
        #expect(throws: MuxError(.refused, .sendCreditExceeded(s(1), requested: 1, credit: 0))) {
            try mux.enqueue(bytes("x"), on: s(1))
        }
        #expect(try mux.receive(.window(stream: s(1), delta: 1000)) == .sendCreditAvailable(s(1)))
        #expect(mux.sendCredit(for: s(1)) == 1000)
        // Not blocked any more: no second notice.
        #expect(try mux.receive(.window(stream: s(1), delta: 1)) == nil)
        let sent = mux.drainUplink().reduce(0) { $0 + $1.payloadLength }
        #expect(sent == fourMiB)
        #expect(mux.sendCredit(for: s(1)) == 1001)
        try mux.enqueue(mebibyte.prefix(1001), on: s(1))
        #expect(throws: MuxError(.refused, .sendCreditExceeded(s(1), requested: 1, credit: 0))) {
            try mux.enqueue(bytes("x"), on: s(1))
        }
    }

    @Test func sendCreditSaturatesAtTwoToTheThirtyTwoMinusOne() throws {
        var mux = try muxWithOpenStreams(1)
        #expect(try mux.receive(.window(stream: s(1), delta: 0xFFFF_FFFF)) == nil)
        #expect(try mux.receive(.window(stream: s(1), delta: 0xFFFF_FFFF)) == nil)
        #expect(mux.sendCredit(for: s(1)) == 0xFFFF_FFFF)
        try mux.enqueue(bytes("0123456789"), on: s(1))
        #expect(mux.sendCredit(for: s(1)) == 0xFFFF_FFFF - 10)
        _ = try mux.receive(.window(stream: s(1), delta: 0xFFFF_FFFF))
        #expect(mux.sendCredit(for: s(1)) == 0xFFFF_FFFF - 10)
        _ = mux.drainUplink()
        #expect(mux.sendCredit(for: s(1)) == 0xFFFF_FFFF - 10)
    }

    @Test func anEmptyEnqueueIsANoOp() throws {
        var mux = try muxWithOpenStreams(1)
        try mux.enqueue([], on: s(1))
        #expect(!mux.hasPendingUplink)
    }

    // MARK: PING, BYE and foreign frames

    @Test func pingIsAnsweredWithAnIdenticalPong() throws {
        var mux = SessionMux()
        #expect(try mux.receive(.ping(token: bytes("token-1"))) == nil)
        #expect(try mux.receive(.ping(token: [])) == nil)
        let longest = [UInt8](repeating: 0xEE, count: 64)[...]
        #expect(try mux.receive(.ping(token: longest)) == nil)
        #expect(mux.drainUplink() == [.pong(token: bytes("token-1")), .pong(token: []), .pong(token: longest)])
    }

    @Test func aPingTokenOver64BytesEndsTheSession() {
        var mux = SessionMux()
        #expect(throws: MuxError(.session, .pingTokenTooLong(65))) {
            try mux.receive(.ping(token: [UInt8](repeating: 0, count: 65)[...]))
        }
    }

    @Test func unansweredPingsAreBounded() throws {
        var mux = SessionMux()
        for _ in 0..<SessionMux.maxPendingPongs { _ = try mux.receive(.ping(token: bytes("p"))) }
        #expect(throws: MuxError(.session, .tooManyPendingPongs(1024))) {
            try mux.receive(.ping(token: bytes("p")))
        }
    }

    @Test func byeEndsTheSessionAndKeepsTheReasonOutOfDescriptions() throws {
        var mux = try muxWithOpenStreams(1)
        try mux.enqueue(bytes("pending"), on: s(1))
        let reason = bytes("secret maintenance")
        let action = try mux.receive(.bye(reason: reason))
        #expect(action == .sessionEnded(SessionMux.ByeReason(bytes: reason)))
        #expect(action?.description == "session ended by the relay (BYE reason of 18 bytes)")
        #expect(mux.isFinished)
        #expect(!mux.hasPendingUplink)
        #expect(mux.nextBatch() == nil)
        #expect(throws: MuxError.sessionFinished) { try mux.receive(.ping(token: [])) }
    }

    @Test(arguments: [
        Frame.hello(version: 1), .welcome, .open(stream: .first), .pong(token: [1][...]),
    ])
    func framesThatAreNotMuxInputsEndTheSession(frame: Frame) {
        var mux = SessionMux()
        #expect(throws: MuxError(.session, .unexpectedFrame(frame.type))) { try mux.receive(frame) }
        #expect(mux.isFinished)
    }

    @Test(arguments: [
        Frame.data(stream: .session, payload: [1][...]), .window(stream: .session, delta: 1), .close(stream: .session),
    ])
    func streamFramesOnStreamZeroEndTheSession(frame: Frame) {
        var mux = SessionMux()
        #expect(throws: MuxError(.session, .streamFrameOnSession(frame.type))) { try mux.receive(frame) }
    }

    @Test func malformedStreamFramesEndTheSession() throws {
        var mux = try muxWithOpenStreams(1)
        #expect(throws: MuxError(.session, .emptyData(s(1)))) { try mux.receive(.data(stream: s(1), payload: [])) }
        var other = try muxWithOpenStreams(1)
        #expect(throws: MuxError(.session, .zeroWindow(s(1)))) { try other.receive(.window(stream: s(1), delta: 0)) }
    }

    // MARK: Isolated stream faults (websocket-lanes)

    @Test func withIsolationAFaultEndsOnlyItsStream() throws {
        var mux = try muxWithOpenStreams(3, configuration: .init(isolatesStreamFaults: true))
        for _ in 0..<4 { _ = try mux.receive(.data(stream: s(1), payload: mebibyte)) }
        #expect(throws: MuxError(.stream(s(1)), .receiveWindowOverrun(s(1), received: 1, window: 0))) {
            try mux.receive(.data(stream: s(1), payload: bytes("!")))
        }
        #expect(throws: MuxError(.stream(s(2)), .zeroWindow(s(2)))) {
            try mux.receive(.window(stream: s(2), delta: 0))
        }
        #expect(!mux.isFinished)
        #expect(!mux.isLive(s(1)))
        #expect(!mux.isLive(s(2)))
        #expect(mux.drainUplink() == [.close(stream: s(1)), .close(stream: s(2))])
        #expect(try mux.receive(.data(stream: s(1), payload: bytes("late"))) == nil)
        #expect(try mux.receive(.data(stream: s(3), payload: bytes("fine"))) == .deliver(s(3), bytes("fine")))
        // Faults that belong to no stream still end the session.
        #expect(throws: MuxError(.session, .frameForUnopenedStream(.data, s(9)))) {
            try mux.receive(.data(stream: s(9), payload: bytes("x")))
        }
    }

    // MARK: Descriptions

    @Test func descriptionsNameCountsNotContents() {
        #expect(SessionMux.Action.deliver(s(3), bytes("secret")).description == "deliver 6 bytes on stream 3")
        #expect(MuxError(.refused, .sendCreditExceeded(s(2), requested: 5, credit: 4)).description
            == "5 bytes exceed the 4 bytes of send credit of stream 2")
        #expect(MuxError(.session, .pingTokenTooLong(65)).description
            == "relay sent a PING token of 65 bytes (at most 64)")
    }
}
