import Testing
@testable import WebProxyCore

@Suite struct StreamTombstonesTests {
    private func id(_ raw: UInt32) throws -> StreamID { try #require(StreamID(rawValue: raw)) }

    @Test func remembersInsertedIDs() throws {
        var tombstones = StreamTombstones()
        #expect(tombstones.insert(try id(7)) == nil)
        #expect(tombstones.contains(try id(7)))
        #expect(!tombstones.contains(try id(8)))
        #expect(tombstones.count == 1)
    }

    @Test func evictsTheOldestBeyondCapacity() throws {
        var tombstones = StreamTombstones(capacity: 3)
        for raw: UInt32 in 1...3 { #expect(tombstones.insert(try id(raw)) == nil) }
        #expect(tombstones.insert(try id(4)) == (try id(1)))
        #expect(tombstones.insert(try id(5)) == (try id(2)))
        #expect(!tombstones.contains(try id(1)))
        #expect(!tombstones.contains(try id(2)))
        for raw: UInt32 in 3...5 { #expect(tombstones.contains(try id(raw))) }
        #expect(tombstones.count == 3)
    }

    @Test func aDuplicateDoesNotTakeASlot() throws {
        var tombstones = StreamTombstones(capacity: 2)
        tombstones.insert(try id(1))
        tombstones.insert(try id(2))
        #expect(tombstones.insert(try id(2)) == nil)
        #expect(tombstones.contains(try id(1)))
        #expect(tombstones.count == 2)
    }

    @Test func keepsTheLast4096ByDefault() throws {
        var tombstones = StreamTombstones()
        var evicted: [StreamID] = []
        for raw: UInt32 in 1...4097 {
            if let gone = tombstones.insert(try id(raw)) { evicted.append(gone) }
        }
        #expect(evicted == [try id(1)])
        #expect(tombstones.count == 4096)
        #expect(!tombstones.contains(try id(1)))
        #expect(tombstones.contains(try id(2)))
        #expect(tombstones.contains(try id(4097)))
    }

    @Test func zeroCapacityIsRaisedToOne() throws {
        var tombstones = StreamTombstones(capacity: 0)
        tombstones.insert(try id(1))
        #expect(tombstones.insert(try id(2)) == (try id(1)))
        #expect(tombstones.capacity == 1)
    }

    @Test func theMuxTombstonesAndStillIgnoresEvictedIDs() throws {
        var mux = SessionMux()
        for _ in 1...4097 {
            let stream = try mux.open()
            let closed = mux.close(stream)
            #expect(closed)
        }
        let first = try id(1)
        let last = try id(4097)
        #expect(!mux.closedStreams.contains(first))
        #expect(mux.closedStreams.contains(try id(2)))
        #expect(mux.closedStreams.contains(last))
        #expect(mux.closedStreams.count == 4096)
        // Closed long ago (evicted) and recently closed are both ignored.
        #expect(try mux.receive(.data(stream: first, payload: [1][...])) == nil)
        #expect(try mux.receive(.window(stream: first, delta: 5)) == nil)
        #expect(try mux.receive(.close(stream: last)) == nil)
        // An id never handed out is still a protocol error.
        #expect(throws: MuxError(.session, .frameForUnopenedStream(.close, try id(4098)))) {
            try mux.receive(.close(stream: try id(4098)))
        }
    }
}
