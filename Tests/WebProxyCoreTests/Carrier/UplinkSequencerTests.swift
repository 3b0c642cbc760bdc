import Testing

@testable import WebProxyCore

@Suite struct UplinkSequencerTests {
    typealias F = CarrierFixtures

    static let channel = CarrierChannel(api: F.api, session: F.httpsSession, lane: nil)
    /// 03 step 3: OPEN(1) + DATA(1, "0123456789abcdef").
    static let firstBody = F.bytes(hex: "0100000100000000020000010000001030313233343536373839616263646566")

    static func ack(_ value: String) -> CarrierResponse {
        CarrierResponse(status: 204, headers: [("Cache-Control", "no-store"), ("X-Up-Ack", value)])
    }

    @Test func followsTranscript03() throws {
        var uplink = UplinkSequencer(channel: Self.channel)
        #expect(uplink.isIdle && uplink.nextSequence == 1)
        let request2 = uplink.nextRequest(body: Self.firstBody)
        let request = try #require(request2)
        #expect(
            F.asRecorded(request) == [
                ["Host", "proxy.example.com"], ["Authorization", "Bearer VKYb2JK-I-uUukfRbXN06Qwf_N50YiJ3HXlSDhhOQDU"],
                ["X-Up-Seq", "1"], ["Content-Type", "application/octet-stream"],
            ])
        #expect(request.body == Self.firstBody)
        #expect(uplink.inFlight == request)
        let verdict = uplink.judge(Self.ack("1"))
        #expect(verdict == .accepted(1))
        #expect(uplink.isIdle && uplink.nextSequence == 2)
        let request3 = uplink.nextRequest(body: F.bytes(hex: "020000010000000178"))
        let second = try #require(request3)
        #expect(second.header("X-Up-Seq") == "2")
    }

    @Test func onlyOneRequestIsInFlight() throws {
        var uplink = UplinkSequencer(channel: Self.channel)
        let request = uplink.nextRequest(body: Self.firstBody)
        let first = try #require(request)
        let request2 = uplink.nextRequest(body: [0x03, 0, 0, 1, 0, 0, 0, 0])
        #expect(request2 == nil)
        #expect(uplink.inFlight == first)
        #expect(uplink.nextSequence == 1)
    }

    @Test func aRetryKeepsSequenceAndBytes() throws {
        var uplink = UplinkSequencer(channel: Self.channel)
        let request = uplink.nextRequest(body: Self.firstBody)
        let first = try #require(request)
        let verdict = uplink.judge(F.unavailable)
        #expect(verdict == .retryLater(.seconds(1)))
        #expect(uplink.inFlight == first)
        let verdict2 = uplink.judge(CarrierResponse(status: 503))
        #expect(verdict2 == .retryLater(nil))
        // 03 step 4: the identical retry is acknowledged again.
        #expect(uplink.inFlight == first)
        let verdict3 = uplink.judge(Self.ack("1"))
        #expect(verdict3 == .accepted(1))
    }

    @Test(arguments: [
        CarrierResponse(status: 204), CarrierResponse(status: 204, headers: [("X-Up-Ack", "2")]),
        CarrierResponse(status: 204, headers: [("X-Up-Ack", "0")]),
        CarrierResponse(status: 204, headers: [("X-Up-Ack", "01")]),
        CarrierResponse(status: 204, headers: [("X-Up-Ack", " 1")]),
        CarrierResponse(status: 204, headers: [("X-Up-Ack", "1"), ("X-Up-Ack", "1")]),
    ])
    func aMissingOrWrongAckIsFatal(response: CarrierResponse) throws {
        var uplink = UplinkSequencer(channel: Self.channel)
        let request = uplink.nextRequest(body: Self.firstBody)
        _ = try #require(request)
        let verdict = uplink.judge(response)
        #expect(verdict == .fatal(.malformedResponse))
    }

    @Test func otherStatusesAreFatal() throws {
        for response in [
            F.local404, CarrierResponse(status: 200, headers: [("X-Up-Ack", "1")]), CarrierResponse(status: 502),
        ] {
            var uplink = UplinkSequencer(channel: Self.channel)
            let request = uplink.nextRequest(body: Self.firstBody)
            _ = try #require(request)
            let verdict = uplink.judge(response)
            #expect(verdict == .fatal(.unexpectedStatus))
        }
        var uplink = UplinkSequencer(channel: Self.channel)
        _ = uplink.nextRequest(body: Self.firstBody)
        guard case .fatal(let error) = uplink.judge(F.local404) else { return }
        #expect(
            error.description
                == "the relay answered /up on the session with 404: the session or bootstrap is gone or the request was refused"
        )
    }

    @Test func anAnswerWithNothingInFlightIsFatal() {
        var uplink = UplinkSequencer(channel: Self.channel)
        let verdict = uplink.judge(Self.ack("1"))
        #expect(verdict == .fatal(.unexpectedResponse))
    }

    @Test func lanesNumberFromOneEach() throws {
        let lane = try #require(StreamID(rawValue: 3))
        var uplink = UplinkSequencer(channel: CarrierChannel(api: F.api, session: F.lanesSession, lane: lane))
        let request2 = uplink.nextRequest(body: [1, 0, 0, 3, 0, 0, 0, 0])
        let request = try #require(request2)
        #expect(request.header("X-Up-Seq") == "1")
        #expect(request.header("X-Lane-ID") == "3")
        guard case .fatal(let error) = uplink.judge(Self.ack("2")) else { return }
        #expect(error.description == "/up 1 on lane 3 was answered with a different X-Up-Ack")
    }
}
