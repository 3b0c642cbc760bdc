import Testing
@testable import WebProxyCore

/// A local connection that sends and then reaches end of file: nothing it sent may be lost.
@Suite struct SessionMuxFinishTests {
    private func frames(_ batch: [UInt8]?) throws -> [Frame] {
        try FrameBatch.decode(try #require(batch)[...], direction: .clientToRelay)
    }

    @Test func sharedUplinkSendsQueuedDataBeforeClose() throws {
        var mux = SessionMux()
        let stream = try mux.open()
        try mux.enqueue(Array("last words".utf8)[...], on: stream)
        let finishing = mux.finish(stream)
        #expect(finishing)
        #expect(mux.isLive(stream))
        var refused = false
        do { try mux.enqueue([1][...], on: stream) } catch { refused = error.scope == .refused }
        #expect(refused)

        let first = try frames(mux.nextBatch())
        #expect(first == [.open(stream: stream), .data(stream: stream, payload: Array("last words".utf8)[...])])
        #expect(!mux.isLive(stream))
        let second = try frames(mux.nextBatch())
        #expect(second == [.close(stream: stream)])
        let third = mux.nextBatch()
        #expect(third == nil)
    }

    @Test func dataBeyondOneBatchStillPrecedesClose() throws {
        var mux = SessionMux()
        let stream = try mux.open()
        let bytes = [UInt8](repeating: 7, count: 300_000)
        try mux.enqueue(bytes[...], on: stream)
        mux.finish(stream)
        var sent: [UInt8] = []
        var last: [Frame] = []
        while let batch = mux.nextBatch(maxBytes: 100_000) {
            last = try frames(batch)
            for case .data(_, let payload) in last { sent += payload }
        }
        #expect(sent == bytes)
        #expect(last == [.close(stream: stream)])
    }

    @Test func laneSendsOpenDataThenClose() throws {
        var mux = SessionMux(configuration: .init(uplink: .perStream))
        let lane = try mux.open()
        try mux.enqueue([1, 2, 3][...], on: lane)
        mux.finish(lane)
        let first = try frames(mux.nextLaneBatch(for: lane))
        #expect(first == [.open(stream: lane), .data(stream: lane, payload: [1, 2, 3][...])])
        #expect(mux.hasPendingUplink(for: lane))
        let second = try frames(mux.nextLaneBatch(for: lane))
        #expect(second == [.close(stream: lane)])
        #expect(!mux.hasPendingUplink(for: lane))
    }

    @Test func finishingWithNothingQueuedIsClose() throws {
        var mux = SessionMux()
        let stream = try mux.open()
        let finished = mux.finish(stream)
        #expect(finished)
        #expect(!mux.isLive(stream))
        let batch = mux.nextBatch()
        #expect(batch == nil)  // its OPEN never went out, so nothing does
        let again = mux.finish(stream)
        #expect(!again)
    }
}
