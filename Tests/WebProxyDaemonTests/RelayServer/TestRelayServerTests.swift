import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay

/// The relay shell over real TLS and sockets: bridge page, session, echo through the backend.
@Suite struct TestRelayServerTests {
    /// Fetches the bridge page and creates a session of `mode`.
    static func establish(_ harness: RelayServerHarness, mode: CarrierMode) async throws
        -> EstablishedSession
    {
        let pageResponse = try await harness.send(
            BridgePage.request(
                host: RelayServerHarness.host, basePath: "",
                capability: harness.capability.urlSafeValue))
        #expect(pageResponse.status == 200)
        guard case .accepted(let page) = BridgePage.judge(pageResponse) else {
            Issue.record("the bridge page was not accepted")
            throw RelayServerTimeout()
        }
        #expect(page.carrierMode == mode)
        let creation = SessionCreation(page: page, api: harness.api)
        let created = try await harness.send(creation.request)
        #expect(created.status == 200)
        guard case .accepted(let session) = creation.judge(created) else {
            Issue.record("the session was not created")
            throw RelayServerTimeout()
        }
        #expect(session.carrierMode == mode)
        return session
    }

    @Test func httpsSessionEchoesThroughTheBackend() async throws {
        let harness = try await RelayServerHarness(mode: .https)
        do {
            let session = try await Self.establish(harness, mode: .https)
            #expect(try await harness.withRelay { $0.sessionCount } == 1)

            let stream = StreamID.first
            let payload = Array("hello relay".utf8)
            let upBody = [Frame.open(stream: stream), Frame.data(stream: stream, payload: payload[...])]
                .encodedBatch()
            let up = try await harness.send(
                harness.api.up(session: session.token, sequence: 1, lane: nil, body: upBody))
            #expect(up.status == 204)

            // Poll until the echo came back (the relay parks the poll until frames are ready).
            var echoed: [UInt8] = []
            var windowCredit: UInt64 = 0
            var cursor: UInt64 = 0
            var polls = 0
            while echoed.count < payload.count, polls < 10 {
                polls += 1
                let down = try await harness.send(
                    harness.api.down(session: session.token, cursor: cursor, lane: nil))
                if down.status == 204 { continue }
                #expect(down.status == 200)
                #expect(down.header("Content-Length") == String(down.body.count))
                if let next = down.header("X-Down-Cursor").flatMap({ UInt64($0) }) { cursor = next }
                for frame in try FrameBatch.decode(down.body[...], direction: .relayToClient) {
                    switch frame {
                    case .data(let id, let bytes):
                        #expect(id == stream)
                        echoed += bytes
                    case .window(let id, let delta):
                        #expect(id == stream)
                        windowCredit += UInt64(delta)
                    default:
                        Issue.record("unexpected frame \(frame.type)")
                    }
                }
            }
            #expect(echoed == payload)
            #expect(windowCredit == UInt64(payload.count))

            let deleted = try await harness.send(harness.api.deleteSession(session: session.token))
            #expect(deleted.status == 204)
            #expect(try await harness.withRelay { $0.sessionCount } == 0)
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }
}
