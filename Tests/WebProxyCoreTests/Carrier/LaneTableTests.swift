import Testing

@testable import WebProxyCore

@Suite struct LaneTableTests {
    typealias F = CarrierFixtures

    static func id(_ raw: UInt32) -> StreamID { StreamID(rawValue: raw)! }

    static func openBody(_ lane: UInt32, _ data: String = "6c616e65206f6e65207061796c6f6164") -> [UInt8] {
        Frame.open(stream: id(lane)).encoded + Frame.data(stream: id(lane), payload: F.bytes(hex: data)[...]).encoded
    }

    static func ack(_ value: String) -> CarrierResponse {
        CarrierResponse(status: 204, headers: [("Cache-Control", "no-store"), ("X-Up-Ack", value)])
    }

    static func idle(cursor: String, closed: Bool = false) -> CarrierResponse {
        CarrierResponse(
            status: 204,
            headers: [("Cache-Control", "no-store"), ("X-Down-Cursor", cursor)]
                + (closed ? [("X-Lane-Closed", "1")] : []))
    }

    /// Opens `lane` through an acknowledged OPEN-bearing /up.
    static func open(_ table: inout LaneTable, _ lane: UInt32) throws {
        let request = try table.nextUplinkRequest(lane: id(lane), body: openBody(lane))
        _ = try #require(request)
        let verdict = table.judgeUplink(lane: id(lane), ack("1"))
        #expect(verdict == .accepted(.laneOpened))
    }

    @Test func laneZeroIsPolledFromTheStart() throws {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        #expect(table.lanesReadyToPoll == [.session])
        #expect(table.liveLaneCount == 0)
        // 06 step 3.
        let poll2 = table.nextPoll(lane: .session)
        let poll = try #require(poll2)
        #expect(
            F.asRecorded(poll) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer Jg-FHFmaq4OeWJTK0lsLUs004xOsNwGtAGdLbjQUX-I"],
                ["X-Down-Cursor", "0"], ["X-Lane-ID", "0"],
            ])
        #expect(table.lanesReadyToPoll == [])
        let verdict = table.judgeDownlink(lane: .session, Self.idle(cursor: "0"))
        #expect(verdict == .accepted(.noData))
        #expect(table.lanesReadyToPoll == [.session])
        // 06 step 4: a lane-0 PONG goes up as seq 1 of lane 0.
        let pong = F.bytes(hex: "06000000000000096b656570616c697665")
        let request = try table.nextUplinkRequest(lane: .session, body: pong)
        let up = try #require(request)
        #expect(up.header("X-Up-Seq") == "1" && up.header("X-Lane-ID") == "0")
        let verdict2 = table.judgeUplink(lane: .session, Self.ack("1"))
        #expect(verdict2 == .accepted(.acknowledged))
    }

    @Test func aLaneIsPolledOnlyAfterItsOpenWasAcknowledged() throws {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        let poll2 = table.nextPoll(lane: Self.id(1))
        #expect(poll2 == nil)
        // 06 step 5.
        let request = try table.nextUplinkRequest(lane: Self.id(1), body: Self.openBody(1))
        let up = try #require(request)
        #expect(up.body == F.bytes(hex: "010000010000000002000001000000106c616e65206f6e65207061796c6f6164"))
        #expect(
            F.asRecorded(up) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer Jg-FHFmaq4OeWJTK0lsLUs004xOsNwGtAGdLbjQUX-I"],
                ["X-Up-Seq", "1"], ["X-Lane-ID", "1"], ["Content-Type", "application/octet-stream"],
            ])
        #expect(table.contains(Self.id(1)) && table.liveLaneCount == 1)
        let poll3 = table.nextPoll(lane: Self.id(1))
        #expect(poll3 == nil)
        #expect(table.lanesReadyToPoll == [.session])
        // A 503 on the OPEN leaves the lane unpolled; the retry is identical.
        let verdict = table.judgeUplink(lane: Self.id(1), F.unavailable)
        #expect(verdict == .retryLater(.seconds(1)))
        #expect(table.uplinkInFlight(lane: Self.id(1)) == up)
        let poll4 = table.nextPoll(lane: Self.id(1))
        #expect(poll4 == nil)
        let verdict2 = table.judgeUplink(lane: Self.id(1), Self.ack("1"))
        #expect(verdict2 == .accepted(.laneOpened))
        #expect(table.lanesReadyToPoll == [.session, Self.id(1)])
        // 06 step 7.
        let poll5 = table.nextPoll(lane: Self.id(1))
        let poll = try #require(poll5)
        #expect(poll.header("X-Down-Cursor") == "0" && poll.header("X-Lane-ID") == "1")
        #expect(table.pollInFlight(lane: Self.id(1)) == poll)
    }

    @Test func lanesKeepTheirOwnSequencesAndCursors() throws {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        try Self.open(&table, 1)
        // 06 step 6: lane 3 also starts at seq 1.
        let request = try table.nextUplinkRequest(
            lane: Self.id(3), body: Self.openBody(3, "6c616e65207468726565206461746121"))
        let lane3 = try #require(request)
        #expect(lane3.header("X-Up-Seq") == "1")
        let verdict = table.judgeUplink(lane: Self.id(3), Self.ack("1"))
        #expect(verdict == .accepted(.laneOpened))
        // 06 steps 7–10: lane 1 gets a batch, replays it, then acknowledges it.
        let batch = F.bytes(hex: "04000001000000040000001002000001000000106c616e65206f6e65207061796c6f6164")
        let batchResponse = CarrierResponse(
            status: 200, headers: [("Content-Type", "application/octet-stream"), ("X-Down-Cursor", "1")], body: batch)
        let poll = table.nextPoll(lane: Self.id(1))
        _ = try #require(poll)
        let poll2 = table.nextPoll(lane: Self.id(3))
        _ = try #require(poll2)
        let verdict2 = table.judgeDownlink(lane: Self.id(1), batchResponse)
        #expect(verdict2 == .accepted(.batch(batch)))
        let poll3 = table.nextPoll(lane: Self.id(1))
        #expect(poll3 == nil)
        table.markDelivered(lane: Self.id(1))
        let poll4 = table.nextPoll(lane: Self.id(1))
        #expect(try #require(poll4).header("X-Down-Cursor") == "1")
        // Lane 3's poll is still the cursor-0 one.
        #expect(table.pollInFlight(lane: Self.id(3))?.header("X-Down-Cursor") == "0")
        // 06 step 11: lane 1's second body is seq 2, lane 3 is unaffected.
        let request2 = try table.nextUplinkRequest(lane: Self.id(1), body: F.bytes(hex: "02000001000000046d6f7265"))
        let more = try #require(request2)
        #expect(more.header("X-Up-Seq") == "2")
        let verdict3 = table.judgeUplink(lane: Self.id(1), Self.ack("2"))
        #expect(verdict3 == .accepted(.acknowledged))
    }

    @Test func aClosedLaneIsForgottenOnceItsUplinkIsIdle() throws {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        try Self.open(&table, 1)
        try Self.open(&table, 2)
        // Lane 1: closed while idle (06 step 14) -> forgotten at once.
        let poll = table.nextPoll(lane: Self.id(1))
        _ = try #require(poll)
        let verdict = table.judgeDownlink(lane: Self.id(1), Self.idle(cursor: "0", closed: true))
        #expect(verdict == .accepted(.laneClosed))
        #expect(!table.contains(Self.id(1)))
        let poll2 = table.nextPoll(lane: Self.id(1))
        #expect(poll2 == nil)
        // Lane 2: closed while a CLOSE is still going up -> kept until its ack.
        let request = try table.nextUplinkRequest(lane: Self.id(2), body: Frame.close(stream: Self.id(2)).encoded)
        _ = try #require(request)
        let poll3 = table.nextPoll(lane: Self.id(2))
        _ = try #require(poll3)
        let verdict2 = table.judgeDownlink(lane: Self.id(2), Self.idle(cursor: "0", closed: true))
        #expect(verdict2 == .accepted(.laneClosed))
        #expect(table.contains(Self.id(2)))
        #expect(table.lanesReadyToPoll == [.session])
        let verdict3 = table.judgeUplink(lane: Self.id(2), Self.ack("2"))
        #expect(verdict3 == .accepted(.acknowledged))
        #expect(!table.contains(Self.id(2)))
        #expect(table.liveLaneCount == 0)
    }

    @Test func aNewLaneMustBeginWithItsOpen() {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        let wrongBodies: [(UInt32, [UInt8])] = [
            (5, F.bytes(hex: "020000050000000c6e65766572206f70656e6564")),  // 06 step 19: DATA(5) alone
            (5, Frame.open(stream: Self.id(6)).encoded),
            (5, [0x01, 0, 0, 5]),
            (5, []),
        ]
        for (lane, body) in wrongBodies {
            #expect(throws: CarrierError.laneNotOpened) { try table.nextUplinkRequest(lane: Self.id(lane), body: body) }
        }
        #expect(table.liveLaneCount == 0)
        do {
            _ = try table.nextUplinkRequest(lane: Self.id(5), body: [])
        } catch {
            #expect(!error.endsSession)
            #expect(error.description == "the first uplink body of lane 5 does not begin with OPEN(5)")
        }
    }

    @Test func atMost128LanesLiveBesidesLaneZero() throws {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        for lane in 1...128 { try Self.open(&table, UInt32(lane)) }
        #expect(table.liveLaneCount == 128)
        #expect(throws: CarrierError.laneLimitReached) {
            try table.nextUplinkRequest(lane: Self.id(129), body: Self.openBody(129))
        }
        do {
            _ = try table.nextUplinkRequest(lane: Self.id(129), body: Self.openBody(129))
        } catch {
            #expect(!error.endsSession)
        }
        // Lane 0 and open lanes still take uplinks.
        let request = try table.nextUplinkRequest(lane: Self.id(128), body: Frame.close(stream: Self.id(128)).encoded)
        #expect(request != nil)
        // Once a lane is finished there is room again.
        let poll = table.nextPoll(lane: Self.id(7))
        _ = try #require(poll)
        let verdict = table.judgeDownlink(lane: Self.id(7), Self.idle(cursor: "0", closed: true))
        #expect(verdict == .accepted(.laneClosed))
        #expect(table.liveLaneCount == 127)
        try Self.open(&table, 129)
        #expect(table.liveLaneCount == 128)
    }

    @Test func answersForUnknownLanesAreFatal() {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        let verdict = table.judgeUplink(lane: Self.id(7), Self.ack("1"))
        #expect(verdict == .fatal(.unexpectedResponse))
        let verdict2 = table.judgeDownlink(lane: Self.id(7), F.local404)
        #expect(verdict2 == .fatal(.unexpectedResponse))
        // Lane 0 exists but has nothing in flight.
        let verdict3 = table.judgeUplink(lane: .session, Self.ack("1"))
        #expect(verdict3 == .fatal(.unexpectedResponse))
    }

    @Test func aCrossLaneRefusalEndsTheSession() throws {
        var table = LaneTable(api: F.api, session: F.lanesSession)
        try Self.open(&table, 3)
        // 06 step 27: the relay answers a cross-lane frame with 404.
        let request = try table.nextUplinkRequest(lane: Self.id(3), body: F.bytes(hex: "020000010000000563726f7373"))
        _ = try #require(request)
        guard case .fatal(let error) = table.judgeUplink(lane: Self.id(3), F.local404) else {
            Issue.record("404 accepted")
            return
        }
        #expect(error == .unexpectedStatus && error.endsSession)
    }
}
