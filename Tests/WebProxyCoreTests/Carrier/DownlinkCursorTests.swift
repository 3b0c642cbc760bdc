import Testing

@testable import WebProxyCore

@Suite struct DownlinkCursorTests {
    typealias F = CarrierFixtures

    static let channel = CarrierChannel(api: F.api, session: F.httpsSession, lane: nil)
    /// 03 step 5: WINDOW(1,16) + DATA(1, 16 B).
    static let batch = F.bytes(hex: "040000010000000400000010020000010000001030313233343536373839616263646566")

    static func batchResponse(cursor: String, body: [UInt8] = batch) -> CarrierResponse {
        CarrierResponse(
            status: 200,
            headers: [
                ("Cache-Control", "no-store"), ("Content-Length", String(body.count)),
                ("Content-Type", "application/octet-stream"), ("X-Down-Cursor", cursor),
            ],
            body: body)
    }

    static func idle(cursor: String, laneClosed: String? = nil) -> CarrierResponse {
        var headers: [(name: String, value: String)] = [("Cache-Control", "no-store"), ("X-Down-Cursor", cursor)]
        if let laneClosed { headers.append(("X-Lane-Closed", laneClosed)) }
        return CarrierResponse(status: 204, headers: headers)
    }

    @Test func followsTranscript03WithAReplay() throws {
        var downlink = DownlinkCursor(channel: Self.channel)
        let poll2 = downlink.nextPoll()
        let poll = try #require(poll2)
        #expect(
            F.asRecorded(poll) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"],
                ["X-Down-Cursor", "0"],
            ])
        #expect(downlink.state == .polling)
        let poll3 = downlink.nextPoll()
        #expect(poll3 == nil)
        // The answer is lost: the retry is the identical poll with the old cursor ...
        #expect(downlink.inFlight == poll)
        // ... and the relay replays the batch (03 step 6).
        let verdict = downlink.judge(Self.batchResponse(cursor: "1"))
        #expect(verdict == .accepted(.batch(Self.batch)))
        #expect(downlink.state == .delivering)
        #expect(downlink.cursor == 0)
        let poll4 = downlink.nextPoll()
        #expect(poll4 == nil)
        downlink.markDelivered()
        #expect(downlink.cursor == 1 && downlink.state == .idle)
        // 03 step 7: the next poll carries cursor 1, which acknowledges the batch.
        let poll5 = downlink.nextPoll()
        let ackPoll = try #require(poll5)
        #expect(ackPoll.header("X-Down-Cursor") == "1")
        let verdict2 = downlink.judge(Self.idle(cursor: "1"))
        #expect(verdict2 == .accepted(.noData))
        #expect(downlink.state == .idle && downlink.cursor == 1)
        let poll6 = downlink.nextPoll()
        #expect(try #require(poll6).header("X-Down-Cursor") == "1")
    }

    @Test func markDeliveredIsIgnoredUnlessABatchAwaits() throws {
        var downlink = DownlinkCursor(channel: Self.channel)
        downlink.markDelivered()
        #expect(downlink.cursor == 0 && downlink.state == .idle)
        let poll = downlink.nextPoll()
        _ = try #require(poll)
        downlink.markDelivered()
        #expect(downlink.cursor == 0 && downlink.state == .polling)
    }

    @Test func serviceUnavailableKeepsThePollInFlight() throws {
        var downlink = DownlinkCursor(channel: Self.channel)
        let poll2 = downlink.nextPoll()
        let poll = try #require(poll2)
        let verdict = downlink.judge(F.unavailable)
        #expect(verdict == .retryLater(.seconds(1)))
        #expect(downlink.state == .polling && downlink.inFlight == poll)
    }

    @Test(arguments: [
        DownlinkCursorTests.batchResponse(cursor: "0"), DownlinkCursorTests.batchResponse(cursor: "2"),
        DownlinkCursorTests.batchResponse(cursor: "01"),
        CarrierResponse(status: 200, body: DownlinkCursorTests.batch),
        DownlinkCursorTests.batchResponse(cursor: "1", body: []),
        DownlinkCursorTests.batchResponse(cursor: "1", body: Array(repeating: 0, count: (2 << 20) + 1)),
        DownlinkCursorTests.idle(cursor: "1"), DownlinkCursorTests.idle(cursor: "00"), CarrierResponse(status: 204),
        DownlinkCursorTests.idle(cursor: "0", laneClosed: "1"),
        CarrierResponse(
            status: 200, headers: [("X-Down-Cursor", "1"), ("X-Lane-Closed", "1")], body: DownlinkCursorTests.batch),
        CarrierResponse(status: 204, headers: [("X-Down-Cursor", "0"), ("X-Down-Cursor", "0")]),
    ])
    func malformedAnswersAreFatal(response: CarrierResponse) throws {
        var downlink = DownlinkCursor(channel: Self.channel)
        let poll = downlink.nextPoll()
        _ = try #require(poll)
        let verdict = downlink.judge(response)
        #expect(verdict == .fatal(.malformedResponse))
    }

    @Test func otherStatusesAndStrayAnswersAreFatal() throws {
        for response in [F.local404, CarrierResponse(status: 500), CarrierResponse(status: 206)] {
            var downlink = DownlinkCursor(channel: Self.channel)
            let poll = downlink.nextPoll()
            _ = try #require(poll)
            let verdict = downlink.judge(response)
            #expect(verdict == .fatal(.unexpectedStatus))
        }
        var idle = DownlinkCursor(channel: Self.channel)
        let verdict2 = idle.judge(Self.idle(cursor: "0"))
        #expect(verdict2 == .fatal(.unexpectedResponse))
    }

    @Test func aBatchOfExactlyTwoMiBIsAccepted() throws {
        var downlink = DownlinkCursor(channel: Self.channel)
        let poll = downlink.nextPoll()
        _ = try #require(poll)
        let body = [UInt8](repeating: 7, count: 2 << 20)
        let verdict = downlink.judge(Self.batchResponse(cursor: "1", body: body))
        #expect(verdict == .accepted(.batch(body)))
    }

    @Test func aLaneStopsWhenTheRelayReportsItClosed() throws {
        let lane = try #require(StreamID(rawValue: 1))
        var downlink = DownlinkCursor(channel: CarrierChannel(api: F.api, session: F.lanesSession, lane: lane))
        let poll = downlink.nextPoll()
        _ = try #require(poll)
        let verdict = downlink.judge(Self.idle(cursor: "0", laneClosed: "1"))
        #expect(verdict == .accepted(.laneClosed))
        #expect(downlink.state == .closed)
        let poll2 = downlink.nextPoll()
        #expect(poll2 == nil)
        #expect(downlink.inFlight == nil)
    }

    @Test func laneClosedMustBeExactlyOneAndNeverOnLaneZero() throws {
        let lane = try #require(StreamID(rawValue: 1))
        for (channelLane, value) in [(lane, "true"), (lane, "0"), (StreamID.session, "1")] {
            var downlink = DownlinkCursor(
                channel: CarrierChannel(api: F.api, session: F.lanesSession, lane: channelLane))
            let poll = downlink.nextPoll()
            _ = try #require(poll)
            let verdict = downlink.judge(Self.idle(cursor: "0", laneClosed: value))
            #expect(verdict == .fatal(.malformedResponse))
        }
    }
}
