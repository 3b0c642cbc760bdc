import Testing
import WebProxyCore
import WebProxyNet
import WebProxyTestRelay
import WebProxyTestSupport

@testable import WebProxyDaemon
@testable import WebProxySession

/// Telegram's file transfers get relay sessions of their own, so they do not share chat's TCP
/// flow: media-cluster connections (a negative DC id in the obfuscated2 init: downloads) the
/// media session, a DC's connections beside its first (uploads) the transfer session. Every
/// other connection stays on the primary session, and nothing is lost when a side session
/// cannot be had.
@Suite(.serialized) struct MediaSessionTests {
    /// The first bytes of a Telegram connection to `dc` for the harness's secret.
    static func opening(dc: Int16) throws -> [UInt8] {
        let probe = try #require(MTProxyProbe(
            secret: try ProxySecret(parsing: RelayServerHarness.secret), dc: dc, initBytes: MTProxyProbeTests.initBytes,
            nonce: MTProxyProbeTests.nonce, padding: [], messageID: MTProxyProbeTests.messageID))
        return probe.openingBytes
    }

    /// Opens a connection to `dc`, echoes `payload` behind its opening; the client, left open.
    static func echo(_ rig: EndToEndRig, dc: Int16, payload: [UInt8]) throws -> BlockingClient {
        let client = try #require(rig.connect(timeoutSeconds: 30))
        let sent = try opening(dc: dc) + payload
        #expect(client.send(sent))
        #expect(client.receive(count: sent.count) == sent, "DC \(dc): the echo differs")
        return client
    }

    @Test(arguments: [CarrierMode.websocket, .https, .httpsLanes])
    func mediaConnectionsShareASessionOfTheirOwn(mode: CarrierMode) async throws {
        let rig = try await EndToEndRig(mode: mode)
        let payloads = testPayloads(count: 3, size: 256 << 10, seed: 12)
        let chat = try Self.echo(rig, dc: 2, payload: payloads[0])
        let downloads = try [-2, -4].enumerated().map { index, dc in
            try Self.echo(rig, dc: Int16(dc), payload: payloads[index + 1])
        }
        let streams = try await rig.harness.withRelay { $0.streamsPerSession }
        #expect(streams == [1, 2], "\(mode): streams per relay session \(streams)")
        #expect(rig.lines.contains { $0.contains("media session up") })
        // The media session's requests use connections of their own: the chat's flow is not theirs.
        if TestCertificateAuthority.testServerALPN.first == "h2", mode != .websocket {
            #expect(try await rig.harness.withRelay { $0.connectionsAccepted } == 2)
        }
        for client in [chat] + downloads { client.close() }
        await rig.stop()
        rig.expectNoCredentials()
    }

    /// The relay's streams per session once they read `expected` (waited for up to 10 s: a
    /// closed stream leaves the relay a round trip later); else the last reading.
    static func streams(_ rig: EndToEndRig, becoming expected: [Int]) async throws -> [Int] {
        var streams: [Int] = []
        for _ in 0..<1000 {
            streams = try await rig.harness.withRelay { $0.streamsPerSession }
            if streams == expected { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        return streams
    }

    /// Telegram Desktop keeps one connection per DC for chat and opens more to the same DC for
    /// uploads: a DC's connection beside an open one on the primary session goes to the
    /// transfer session, and a DC whose chat closed starts on the primary session again.
    @Test(arguments: [CarrierMode.websocket, .https])
    func aDCsSecondConnectionTransfersFiles(mode: CarrierMode) async throws {
        let rig = try await EndToEndRig(mode: mode)
        let payload = Array(repeating: UInt8(7), count: 1000)
        let chat = try Self.echo(rig, dc: 2, payload: payload)
        let upload = try Self.echo(rig, dc: 2, payload: payload)
        #expect(try await Self.streams(rig, becoming: [1, 1]) == [1, 1], "\(mode): the upload shares chat's session")
        // DC 4's first connection is its chat (primary: 2 streams), its second a transfer (2).
        let otherChat = try Self.echo(rig, dc: 4, payload: payload)
        let otherUpload = try Self.echo(rig, dc: 4, payload: payload)
        #expect(try await Self.streams(rig, becoming: [2, 2]) == [2, 2], "\(mode): DC 4 is not split the same way")
        // Chat on DC 2 reconnects: once its old connection is gone, the new one is chat again.
        chat.close()
        #expect(try await Self.streams(rig, becoming: [1, 2]) == [1, 2], "\(mode): the closed chat stayed")
        let chatAgain = try Self.echo(rig, dc: 2, payload: payload)
        #expect(try await Self.streams(rig, becoming: [2, 2]) == [2, 2], "\(mode): the reconnected chat is a transfer")
        // A download has a session of its own beside both.
        let download = try Self.echo(rig, dc: -2, payload: payload)
        #expect(try await Self.streams(rig, becoming: [1, 2, 2]) == [1, 2, 2], "\(mode): the download is not apart")
        #expect(rig.lines.contains { $0.contains("transfer session up") })
        #expect(rig.daemon.relaySnapshots()?.first?.status.sideSessions == [
            .init(role: "media", state: .up, streams: 1), .init(role: "transfer", state: .up, streams: 2),
        ])
        // Each session's requests use a connection of its own: three flows, not one.
        if TestCertificateAuthority.testServerALPN.first == "h2", mode == .https {
            #expect(try await rig.harness.withRelay { $0.connectionsAccepted } == 3)
        }
        for client in [upload, otherChat, otherUpload, chatAgain, download] { client.close() }
        await rig.stop()
        rig.expectNoCredentials()
    }

    /// A lost side session closes only its own connections: chat and uploads go on while the
    /// downloads' session ends, and a new download is carried again.
    @Test(arguments: [CarrierMode.websocket, .https])
    func losingTheMediaSessionClosesOnlyDownloads(mode: CarrierMode) async throws {
        let rig = try await EndToEndRig(mode: mode)
        let payload = Array(repeating: UInt8(9), count: 1000)
        let chat = try Self.echo(rig, dc: 2, payload: payload)
        let upload = try Self.echo(rig, dc: 2, payload: payload)
        let downloads = try [Self.echo(rig, dc: -2, payload: payload), Self.echo(rig, dc: -2, payload: payload)]
        #expect(try await Self.streams(rig, becoming: [1, 1, 2]) == [1, 1, 2])
        try await rig.harness.withRelay { $0.expireSessions(carrying: 2) }
        for download in downloads { #expect(download.waitForClose(), "\(mode): a download outlived its session") }
        for client in [chat, upload] {
            #expect(client.send(payload) && client.receive(count: payload.count) == payload, "\(mode): chat or upload lost")
        }
        let again = try Self.echo(rig, dc: -2, payload: payload)
        #expect(rig.lines.contains { $0.contains("media session down") })
        for client in [chat, upload, again] + downloads { client.close() }
        await rig.stop()
        rig.expectNoCredentials()
    }

    /// What the daemon holds for a relay counts every session: a download whose reader stalls
    /// shows in the relay's queued bytes, though the primary session holds nothing.
    @Test func queuedBytesCountTheSideSessions() async throws {
        let rig = try await EndToEndRig(mode: .websocket)
        let chat = try Self.echo(rig, dc: 2, payload: [1, 2, 3])
        let download = try #require(rig.connect(timeoutSeconds: 30))
        download.setBuffers(64 << 10)
        let sent = try Self.opening(dc: -2) + testPayloads(count: 1, size: 12 << 20, seed: 21)[0]
        let sender = BackgroundWork { download.send(sent) }
        var queued = QueuedBytes()
        for _ in 0..<1000 {
            queued = try #require(rig.daemon.relaySnapshots()?.first?.queued)
            if queued.downlink > 0 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(queued.downlink > 0 && queued.peakStream >= queued.downlink, "held for the download: \(queued)")
        #expect(download.receive(count: sent.count) == sent, "the download's echo differs")
        #expect(sender.wait(within: .seconds(10)) == true)
        for client in [chat, download] { client.close() }
        await rig.stop()
    }

    @Test func websocketLanesAndTheKeyOffKeepOneSession() async throws {
        for (mode, enabled) in [(CarrierMode.websocketLanes, true), (.websocket, false)] {
            let rig = try await EndToEndRig(mode: mode) { $0.mediaSession = enabled }
            let chat = try Self.echo(rig, dc: 2, payload: Array(repeating: 1, count: 1000))
            let download = try Self.echo(rig, dc: -2, payload: Array(repeating: 2, count: 1000))
            let streams = try await rig.harness.withRelay { $0.streamsPerSession }
            #expect(streams == [2], "\(mode), media-session \(enabled): \(streams)")
            chat.close()
            download.close()
            await rig.stop()
        }
    }

    /// A relay that grants one session: the media and transfer sessions' creations are
    /// refused, and their connections are carried by the primary session after the bounded wait.
    @Test func refusedSideSessionsLeaveTransfersOnThePrimarySession() async throws {
        var limits = RelayLimits()
        limits.maxSessions = 1
        let rig = try await EndToEndRig(mode: .websocket, limits: limits)
        let chat = try Self.echo(rig, dc: 2, payload: Array(repeating: 1, count: 1000))
        let download = try Self.echo(rig, dc: -2, payload: testPayloads(count: 1, size: 128 << 10, seed: 3)[0])
        let upload = try Self.echo(rig, dc: 2, payload: testPayloads(count: 1, size: 128 << 10, seed: 4)[0])
        let streams = try await rig.harness.withRelay { $0.streamsPerSession }
        #expect(streams == [3])
        #expect(rig.daemon.relaySnapshots()?.first?.status.sideSessions.map(\.state) == [.down, .down])
        // Later transfers do not wait again while their sessions are not up.
        let clock = ContinuousClock()
        let started = clock.now
        let second = try Self.echo(rig, dc: -2, payload: Array(repeating: 3, count: 1000))
        let secondUpload = try Self.echo(rig, dc: 2, payload: Array(repeating: 5, count: 1000))
        #expect(clock.now - started < RelayService.sideSessionWait)
        for client in [chat, download, upload, second, secondUpload] { client.close() }
        await rig.stop()
    }
}
