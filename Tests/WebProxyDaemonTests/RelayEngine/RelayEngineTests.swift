import Testing
import WebProxyCore
import WebProxyTestSupport

@testable import WebProxyTestRelay

/// Behaviour the transcripts do not record: capacity, expiry, faults, budgets, base paths.
@Suite struct RelayEngineTests {
    static let host = "proxy.example.com"
    static let secret = "000102030405060708090a0b0c0d0e0f"

    /// A one-profile relay driven step by step.
    struct Relay {
        var engine: RelayEngine
        var now = RelayInstant.milliseconds(1000)
        var nextConnection: UInt64 = 1

        init(
            mode: CarrierMode = .https, basePath: String? = nil,
            limits: (inout RelayLimits) -> Void = { _ in }
        ) throws {
            var relayLimits = RelayLimits()
            limits(&relayLimits)
            let profile = RelayProfile(
                secret: try ProxySecret(parsing: RelayEngineTests.secret),
                basePath: try basePath.map { try BasePath($0) }, carrierMode: mode)
            engine = RelayEngine(
                configuration: TestRelayConfiguration(
                    host: try RelayHost(RelayEngineTests.host), profiles: [profile],
                    limits: relayLimits),
                random: SplitMix64(seed: 7))
        }

        var capability: Capability {
            Capability.derive(
                secret: engine.configuration.profiles[0].secret,
                host: engine.configuration.host, basePath: engine.configuration.profiles[0].basePath
            )
        }

        mutating func request(
            _ method: String, _ target: String, bearer: String? = nil,
            headers: [(name: String, value: String)] = [],
            body: [UInt8] = []
        ) -> (RelayConnectionID, [RelayAction]) {
            let connection = RelayConnectionID(nextConnection)
            nextConnection += 1
            var fields = [(name: "Host", value: RelayEngineTests.host)]
            if let bearer { fields.append((name: "Authorization", value: "Bearer " + bearer)) }
            let request = RelayRequest(
                method: method, rawTarget: target, headers: fields + headers, body: body)
            return (connection, engine.handle(request, connection: connection, now: now))
        }

        /// The single response of a request answered at once.
        mutating func respond(
            _ method: String, _ target: String, bearer: String? = nil,
            headers: [(name: String, value: String)] = [],
            body: [UInt8] = []
        ) -> RelayResponse? {
            let (connection, actions) = request(
                method, target, bearer: bearer, headers: headers, body: body)
            for case .respond(connection, let response) in actions { return response }
            return nil
        }

        mutating func bootstrap() -> String? {
            let page =
                respond("GET", capability.bridgePath).map {
                    String(decoding: $0.body, as: UTF8.self)
                } ?? ""
            return page.firstRange(of: "bootstrap=\"").map {
                String(page[$0.upperBound...].prefix(43))
            }
        }

        static let hello: [UInt8] = [0x10, 0, 0, 0, 0, 0, 0, 1, 1]
        static let octets = [(name: "Content-Type", value: "application/octet-stream")]

        mutating func create(_ bootstrap: String) -> RelayResponse? {
            respond(
                "POST", capability.apiPathPrefix + "/session", bearer: bootstrap,
                headers: Self.octets, body: Self.hello)
        }

        mutating func session() -> String? {
            guard let bootstrap = bootstrap() else { return nil }
            return create(bootstrap)?.value(of: "X-Session-Token")
        }

        mutating func up(_ token: String, _ sequence: Int, _ frames: [Frame]) -> RelayResponse? {
            respond(
                "POST", capability.apiPathPrefix + "/up", bearer: token,
                headers: Self.octets + [(name: "X-Up-Seq", value: String(sequence))],
                body: frames.encodedBatch())
        }

        mutating func down(_ token: String, _ cursor: Int) -> (RelayConnectionID, [RelayAction]) {
            request(
                "POST", capability.apiPathPrefix + "/down", bearer: token,
                headers: [(name: "X-Down-Cursor", value: String(cursor))])
        }

        mutating func advance(milliseconds: UInt64) -> [RelayAction] {
            now = RelayInstant(nanoseconds: now.nanoseconds + milliseconds * 1_000_000)
            return engine.tick(now: now)
        }
    }

    static let first = BackendID(session: SessionID(rawValue: 1), stream: .first)

    @Test func sipHashMatchesTheReferenceVector() {
        // SipHash-2-4 paper, appendix A: key 00..0f, message 00..0e.
        let hash = SipHash(key: (0..<16).map { UInt8($0) })
        #expect(hash.hash((0..<15).map { UInt8($0) }) == 0xa129_ca61_49be_45e5)
        #expect(hash.hash([]) == 0x726f_db47_dd0e_0e31)
    }

    @Test func bridgePageDeclaresTheStatementsAClientParses() throws {
        var relay = try Relay(mode: .websocketLanes)
        let responseResult = relay.respond("GET", relay.capability.bridgePath)
        let response = try #require(responseResult)
        let page = String(decoding: response.body, as: UTF8.self)
        let tokenResult = relay.bootstrap()
        let token = try #require(tokenResult)
        #expect(response.status == 200)
        #expect(response.value(of: "Cache-Control") == "no-store")
        #expect(response.value(of: "Content-Type") == "text/html; charset=utf-8")
        #expect(page.contains("<title>Connection</title>"))
        #expect(
            page.contains("const laneQueueLimit=8388608,laneItemLimit=1024,batchLimit=2097152;"))
        #expect(page.contains(#"const relayOrigin="https://proxy.example.com",bootstrap=""#))
        #expect(page.contains(#"",carrierMode="websocket-lanes";"#))
        #expect(token.count == 43 && Base64URL.decode(token)?.count == 32)
    }

    @Test func basePathProfileServesItsOwnPaths() throws {
        var relay = try Relay(basePath: "dobry-cola-super-app")
        #expect(relay.capability.bridgePath.hasPrefix("/dobry-cola-super-app/?bridge="))
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        #expect(relay.up(token, 1, [.pong(token: [])])?.status == 204)
        let rootPath = relay.respond(
            "POST", "/api/v1/up", bearer: token,
            headers: Relay.octets + [(name: "X-Up-Seq", value: "2")],
            body: [Frame.pong(token: [])].encodedBatch())
        #expect(rootPath?.status == 404)
        #expect(rootPath?.value(of: "Content-Type") == "text/plain; charset=utf-8")
        let rootBridge = relay.respond("GET", "/?bridge=" + relay.capability.urlSafeValue)
        #expect(rootBridge?.status == 404 && rootBridge?.value(of: "Cache-Control") == "no-store")
    }

    @Test func fullRelayAnswers503AndKeepsTheBootstrap() throws {
        var relay = try Relay { $0.maxSessions = 1 }
        let firstResult = relay.session()
        let first = try #require(firstResult)
        let bootstrapResult = relay.bootstrap()
        let bootstrap = try #require(bootstrapResult)
        let refusedResult = relay.create(bootstrap)
        let refused = try #require(refusedResult)
        #expect(refused.status == 503)
        #expect(refused.value(of: "Retry-After") == "1")
        #expect(refused.body.isEmpty)
        #expect(relay.respond("DELETE", "/api/v1/session", bearer: first)?.status == 204)
        let createdResult = relay.create(bootstrap)
        let created = try #require(createdResult)
        #expect(created.status == 200)
        #expect(created.value(of: "X-Session-Token") != first)
    }

    @Test func bootstrapsExpireAfterTheirLifetime() throws {
        var relay = try Relay()
        let bootstrapResult = relay.bootstrap()
        let bootstrap = try #require(bootstrapResult)
        _ = relay.advance(milliseconds: 120_000)
        let lateResult = relay.create(bootstrap)
        let late = try #require(lateResult)
        #expect(late.status == 404)
        #expect(late.value(of: "Content-Type") == "text/plain; charset=utf-8")
    }

    @Test func idleSessionExpiresAfterTheGraceAndDeleteStaysIdempotentForALifetime() throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        #expect(relay.engine.nextDeadline != nil)
        _ = relay.advance(milliseconds: 119_999)
        #expect(relay.engine.sessionCount == 1)
        _ = relay.advance(milliseconds: 1)
        #expect(relay.engine.sessionCount == 0)
        #expect(
            relay.down(token, 0).1 == [
                .respond(RelayConnectionID(relay.nextConnection - 1), .localNotFound)
            ])
        #expect(relay.respond("DELETE", "/api/v1/session", bearer: token)?.status == 204)
        _ = relay.advance(milliseconds: 120_000)
        #expect(relay.respond("DELETE", "/api/v1/session", bearer: token)?.status == 404)
    }

    @Test func injected503sApplyNothing() throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        relay.engine.faults.unavailableResponses = 1
        #expect(relay.up(token, 1, [.open(stream: .first)])?.status == 503)
        #expect(relay.engine.faults.unavailableResponses == 0)
        #expect(relay.up(token, 1, [.open(stream: .first)])?.value(of: "X-Up-Ack") == "1")
    }

    @Test func droppedResponseIsAppliedAndItsBatchReplays() throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        let opened = relay.request(
            "POST", "/api/v1/up", bearer: token,
            headers: Relay.octets + [(name: "X-Up-Seq", value: "1")],
            body: [Frame.open(stream: .first)].encodedBatch())
        #expect(
            opened.1 == [
                .dialBackend(Self.first, profile: 0),
                .respond(opened.0, .noContent([(name: "X-Up-Ack", value: "1")])),
            ])
        _ = relay.engine.backendConnected(Self.first, now: relay.now)
        _ = relay.engine.backendReceived(Array("hi".utf8), from: Self.first, now: relay.now)
        relay.engine.faults.dropResponses = 1
        let (lost, lostActions) = relay.down(token, 0)
        #expect(lostActions == [.resetConnection(lost)])
        let (again, replay) = relay.down(token, 0)
        let batch = [Frame.data(stream: .first, payload: Array("hi".utf8)[...])].encodedBatch()
        #expect(replay == [.respond(again, .frames(batch, [(name: "X-Down-Cursor", value: "1")]))])
    }

    @Test(arguments: [RelayFaults.DownlinkCorruption.truncatedFrame, .oversizedFrame])
    func corruptedDownlinkFailsToDecode(corruption: RelayFaults.DownlinkCorruption) throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        _ = relay.up(token, 1, [.open(stream: .first)])
        _ = relay.engine.backendConnected(Self.first, now: relay.now)
        relay.engine.faults.corruptNextDownlink = corruption
        _ = relay.engine.backendReceived([1, 2, 3], from: Self.first, now: relay.now)
        let (connection, actions) = relay.down(token, 0)
        guard case .respond(connection, let response)? = actions.first else {
            Issue.record("no response")
            return
        }
        #expect(throws: FrameError.self) {
            try FrameBatch.decode(response.body[...], direction: .relayToClient)
        }
        #expect(relay.engine.faults.corruptNextDownlink == nil)
    }

    @Test func restartForgetsSessionsButTokensStayTheRelays() throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        _ = relay.up(token, 1, [.open(stream: .first)])
        let (parked, parkActions) = relay.down(token, 0)
        #expect(parkActions.count == 1)
        let actions = relay.engine.restart(now: relay.now)
        #expect(actions == [.closeBackend(Self.first), .respond(parked, .localNotFound)])
        #expect(relay.engine.sessionCount == 0)
        let afterResult = relay.down(token, 0).1.first
        let after = try #require(afterResult)
        guard case .respond(_, let response) = after else {
            Issue.record("no response")
            return
        }
        #expect(response == .localNotFound)
    }

    @Test func expireSessionNowEndsIt() throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        _ = relay.engine.expireSession(token: token, now: relay.now)
        #expect(relay.engine.sessionCount == 0)
        #expect(relay.up(token, 1, [.pong(token: [])])?.status == 404)
    }

    @Test func uplinkBeyondThePendingBudgetIs503AndNotCommitted() throws {
        var relay = try Relay { $0.maxPendingBytes = 4096 }
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        #expect(relay.up(token, 1, [.open(stream: .first)])?.status == 204)
        let big = [Frame.data(stream: .first, payload: [UInt8](repeating: 7, count: 3000)[...])]
        #expect(relay.up(token, 2, big)?.status == 204)
        #expect(relay.up(token, 3, big)?.status == 503)
        _ = relay.engine.backendConnected(Self.first, now: relay.now)
        _ = relay.engine.backendDrained(3000, backend: Self.first, now: relay.now)
        #expect(relay.up(token, 3, big)?.value(of: "X-Up-Ack") == "3")
    }

    @Test func relayStopsReadingAtZeroCreditAndResumesOnWindow() throws {
        var relay = try Relay { $0.streamWindow = 100 }
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        _ = relay.up(token, 1, [.open(stream: .first)])
        _ = relay.engine.backendConnected(Self.first, now: relay.now)
        let full = relay.engine.backendReceived(
            [UInt8](repeating: 1, count: 150), from: Self.first, now: relay.now)
        #expect(full == [.pauseBackend(Self.first)])
        let (poll, first) = relay.down(token, 0)
        let hundred = [Frame.data(stream: .first, payload: [UInt8](repeating: 1, count: 100)[...])]
            .encodedBatch()
        #expect(first == [.respond(poll, .frames(hundred, [(name: "X-Down-Cursor", value: "1")]))])
        #expect(relay.up(token, 2, [.window(stream: .first, delta: 60)])?.status == 204)
        let (next, second) = relay.down(token, 1)
        let fifty = [Frame.data(stream: .first, payload: [UInt8](repeating: 1, count: 50)[...])]
            .encodedBatch()
        #expect(second == [.respond(next, .frames(fifty, [(name: "X-Down-Cursor", value: "2")]))])
        let resumed = relay.engine.backendReceived([2], from: Self.first, now: relay.now)
        #expect(resumed.isEmpty)
    }

    @Test func failedDialAnswersClose() throws {
        var relay = try Relay()
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        _ = relay.up(token, 1, [.open(stream: .first), .data(stream: .first, payload: [9][...])])
        _ = relay.engine.backendDialFailed(Self.first, now: relay.now)
        let (poll, actions) = relay.down(token, 0)
        #expect(
            actions == [
                .respond(
                    poll,
                    .frames(
                        Frame.close(stream: .first).encoded, [(name: "X-Down-Cursor", value: "1")]))
            ])
        #expect(relay.up(token, 2, [.data(stream: .first, payload: [1][...])])?.status == 204)
    }

    @Test func evictedTombstonesMakeLateFramesFatal() throws {
        var relay = try Relay { $0.maxTombstones = 1 }
        let tokenResult = relay.session()
        let token = try #require(tokenResult)
        let two = try #require(StreamID(rawValue: 2))
        #expect(
            relay.up(
                token, 1,
                [
                    .open(stream: .first), .close(stream: .first), .open(stream: two),
                    .close(stream: two),
                ])?.status == 204)
        #expect(relay.up(token, 2, [.window(stream: two, delta: 1)])?.status == 204)
        #expect(relay.up(token, 3, [.window(stream: .first, delta: 1)])?.status == 404)
        #expect(relay.engine.sessionCount == 0)
    }
}
