import CWebProxyOpenSSL
import Glibc
import Testing

@testable import WebProxyNet

@Suite("TLSEngine in memory")
struct TLSEngineTests {
    let fixture: TLSFixture

    init() throws {
        fixture = try TLSFixture()
    }

    private func pair(
        clientContext: TLSContext? = nil, serverContext: TLSContext? = nil,
        serverName: String = TLSFixture.relayName
    ) throws -> (client: TLSEngine, server: TLSEngine) {
        let client = try TLSEngine(
            clientContext: clientContext ?? fixture.clientContext(), serverName: serverName)
        let server = try TLSEngine(serverContext: serverContext ?? fixture.serverContext())
        return (client, server)
    }

    /// Runs the handshake expecting the client to fail; returns the client's error.
    private func clientFailure(
        clientContext: TLSContext? = nil, serverContext: TLSContext? = nil,
        serverName: String = TLSFixture.relayName
    ) throws -> TLSError {
        let (client, server) = try pair(
            clientContext: clientContext, serverContext: serverContext, serverName: serverName)
        do {
            try completeHandshake(client: client, server: server)
        } catch {
            return error
        }
        Issue.record("the handshake succeeded")
        return TLSError(.invalidState, "no error")
    }

    @Test func trustedHandshakeCarriesDataBothWaysAndClosesCleanly() throws {
        let (client, server) = try pair()
        try completeHandshake(client: client, server: server)

        #expect(client.negotiatedProtocolVersion == "TLSv1.3")
        #expect(server.negotiatedProtocolVersion == "TLSv1.3")
        #expect(client.negotiatedALPN == "http/1.1")
        #expect(server.negotiatedALPN == "http/1.1")
        #expect(client.negotiatedCipherSuite?.contains("GCM") == true)
        #expect(client.isSessionResumed == false)
        #expect(server.requestedServerName == TLSFixture.relayName)
        let peer = try #require(client.peerCertificate)
        #expect(peer.subjectCommonName == TLSFixture.relayName)
        #expect(peer.dnsNames == [TLSFixture.relayName])
        #expect(peer.issuerCommonName == "webproxyd Test CA")
        #expect(peer.spkiSHA256Base64 == fixture.leaf.spkiPin)

        let upstream = payload(100_000, seed: 1)
        #expect(try client.write(upstream) == upstream.count)
        transfer(from: client, to: server)
        let atServer = try readAvailable(server)
        #expect(atServer.bytes == upstream)
        #expect(atServer.end == .wantRead)

        let downstream = payload(70_000, seed: 2)
        #expect(try server.write(downstream) == downstream.count)
        transfer(from: server, to: client)
        let atClient = try readAvailable(client)
        #expect(atClient.bytes == downstream)
        #expect(atClient.end == .wantRead)

        #expect(try client.shutdown() == false)
        #expect(transfer(from: client, to: server) > 0)
        #expect(try readOnce(server) == .eof(clean: true))
        #expect(try server.shutdown() == true)
        transfer(from: server, to: client)
        #expect(try readOnce(client) == .eof(clean: true))
        #expect(throws: TLSError.self) { try client.write([1, 2, 3]) }
    }

    @Test func wrongNameIsReportedWithBothNames() throws {
        let wrong = try fixture.authority.issueLeaf(dnsNames: ["other.example"])
        let error = try clientFailure(serverContext: fixture.serverContext(wrong))
        #expect(error.kind == .certificateNameMismatch)
        #expect(error.message == "certificate for other.example does not match proxy.example.com")
        #expect(error.openSSLErrors.contains { $0.contains("certificate verify failed") })
    }

    @Test func untrustedIssuerPointsToCAFile() throws {
        let foreign = try fixture.otherAuthority.issueLeaf(dnsNames: [TLSFixture.relayName])
        let error = try clientFailure(serverContext: fixture.serverContext(foreign))
        #expect(error.kind == .untrustedIssuer)
        let expected = "issuer not trusted (use ca-file to trust a private CA)"
        #expect(error.message == expected + "; issued by \"Other Test CA\"")
    }

    @Test func expiredCertificateNamesTheDate() throws {
        // 2020-01-01 00:00:00 UTC to 2021-06-30 12:00:00 UTC.
        let expired = try fixture.authority.issueLeaf(
            dnsNames: [TLSFixture.relayName],
            validity: .custom(notBefore: 1_577_836_800, notAfter: 1_625_054_400))
        let error = try clientFailure(serverContext: fixture.serverContext(expired))
        #expect(error.kind == .certificateExpired)
        #expect(error.message == "certificate expired on 2021-06-30 12:00:00 UTC")
    }

    @Test func expiredValidityIsInThePast() throws {
        let expired = try fixture.authority.issueLeaf(
            dnsNames: [TLSFixture.relayName], validity: .expired)
        let error = try clientFailure(serverContext: fixture.serverContext(expired))
        #expect(error.kind == .certificateExpired)
        #expect(error.message.hasPrefix("certificate expired on "))
    }

    @Test func serverSeesTheClientsAlert() throws {
        let wrong = try fixture.authority.issueLeaf(dnsNames: ["other.example"])
        let (client, server) = try pair(serverContext: fixture.serverContext(wrong))
        #expect(throws: TLSError.self) { try completeHandshake(client: client, server: server) }
        transfer(from: client, to: server)  // the alert the client queued when it failed
        let error = try #require(throws: TLSError.self) { try server.handshake() }
        #expect(error.kind == .handshakeFailed)
        #expect(error.message.hasPrefix("TLS handshake with the client failed: "))
    }

    @Test("a pin on any certificate of the chain passes", arguments: ["leaf", "ca"])
    func pinMatches(which: String) throws {
        let pin = which == "leaf" ? fixture.leaf.spkiPin : fixture.authority.spkiPin
        let (client, server) = try pair(clientContext: fixture.clientContext(pins: [pin]))
        try completeHandshake(client: client, server: server)
        #expect(client.isHandshakeComplete)
    }

    @Test func pinMismatchFailsEvenWithATrustedChain() throws {
        let error = try clientFailure(
            clientContext: fixture.clientContext(pins: [fixture.otherAuthority.spkiPin]))
        #expect(error.kind == .pinMismatch)
        #expect(
            error.message
                == "certificate pin mismatch (the leaf's pin-sha256 is \(fixture.leaf.spkiPin))")
    }

    @Test func alpnIsOmittedWhenTheServerSharesNone() throws {
        let context = try TLSContext(
            client: TLSConfiguration.Client(
                trust: .caPEM(fixture.authority.certificatePEM), alpnProtocols: ["acme-tls/1"]))
        let (client, server) = try pair(clientContext: context)
        try completeHandshake(client: client, server: server)
        #expect(client.negotiatedALPN == nil)
        #expect(server.negotiatedALPN == nil)
    }

    @Test func aConnectionsOwnALPNOfferReplacesTheContexts() throws {
        let context = try fixture.clientContext()  // offers http/1.1
        let serverContext = try fixture.serverContext()  // selects h2 first
        let plain = try TLSEngine(clientContext: context, serverName: TLSFixture.relayName)
        let plainServer = try TLSEngine(serverContext: serverContext)
        try completeHandshake(client: plain, server: plainServer)
        #expect(plain.negotiatedALPN == "http/1.1")
        let offering = try TLSEngine(
            clientContext: context, serverName: TLSFixture.relayName, alpnProtocols: ["h2", "http/1.1"])
        let offeringServer = try TLSEngine(serverContext: serverContext)
        try completeHandshake(client: offering, server: offeringServer)
        #expect(offering.negotiatedALPN == "h2")
        #expect(offeringServer.negotiatedALPN == "h2")
    }

    @Test func secondConnectionOnTheSameContextResumes() throws {
        let clientContext = try fixture.clientContext()
        let serverContext = try fixture.serverContext()
        let (first, firstServer) = try pair(
            clientContext: clientContext, serverContext: serverContext)
        try completeHandshake(client: first, server: firstServer)
        #expect(try readOnce(first) == .wantRead)  // tickets
        #expect(first.isSessionResumed == false)

        let (second, secondServer) = try pair(
            clientContext: clientContext, serverContext: serverContext)
        try completeHandshake(client: second, server: secondServer)
        #expect(second.isSessionResumed)
        #expect(secondServer.isSessionResumed)
        #expect(second.peerCertificate?.subjectCommonName == TLSFixture.relayName)

        // Another context has its own cache.
        let (fresh, freshServer) = try pair(serverContext: serverContext)
        try completeHandshake(client: fresh, server: freshServer)
        #expect(fresh.isSessionResumed == false)
    }

    @Test func sessionsAreNotResumedForAnotherName() throws {
        let leaf = try fixture.authority.issueLeaf(dnsNames: [TLSFixture.relayName, "b.example"])
        let clientContext = try fixture.clientContext()
        let serverContext = try fixture.serverContext(leaf)
        let (first, firstServer) = try pair(
            clientContext: clientContext, serverContext: serverContext)
        try completeHandshake(client: first, server: firstServer)
        _ = try readOnce(first)
        let (other, otherServer) = try pair(
            clientContext: clientContext, serverContext: serverContext, serverName: "b.example")
        try completeHandshake(client: other, server: otherServer)
        #expect(other.isSessionResumed == false)
    }

    @Test func transportEOFWithoutCloseNotifyIsATruncation() throws {
        let (client, server) = try pair()
        try completeHandshake(client: client, server: server)
        let data = payload(5_000)
        _ = try server.write(data)
        transfer(from: server, to: client)
        client.feedEOF()
        let read = try readAvailable(client)
        #expect(read.bytes == data)
        #expect(read.end == .eof(clean: false))
        #expect(try readOnce(client) == .eof(clean: false))
    }

    @Test func transportEOFDuringHandshakeIsAnError() throws {
        let (client, _) = try pair()
        #expect(try client.handshake() == .wantRead)
        client.feedEOF()
        let error = try #require(throws: TLSError.self) { try client.handshake() }
        #expect(error.kind == .closedDuringHandshake)
        #expect(error.message == "the connection closed during the TLS handshake")
    }

    @Test func recordsFedOneByteAtATimeDecryptAtTheLastByte() throws {
        let (client, server) = try pair()
        try completeHandshake(client: client, server: server)
        let message = payload(300)
        _ = try client.write(message)
        let record = client.takeCiphertext()
        var received: [UInt8] = []
        for (index, byte) in record.enumerated() {
            server.feed([byte])
            let result = try server.readPlaintext(into: &received, maxCount: 1_000)
            #expect(result == (index == record.count - 1 ? .bytes(300) : .wantRead))
        }
        #expect(received == message)
    }

    @Test func handshakeSurvivesEverySplitOfTheServerFlight() throws {
        // The server's first flight (ServerHello to Finished), fed to a fresh client split at
        // each point in turn. ECDSA signatures vary by a byte or two, so every pair reads its
        // own flight's length.
        let serverContext = try fixture.serverContext()
        var split = 1
        while true {
            let (client, server) = try pair(
                clientContext: try fixture.clientContext(), serverContext: serverContext)
            _ = try client.handshake()
            transfer(from: client, to: server)
            _ = try server.handshake()
            let flight = server.takeCiphertext()
            #expect(flight.count > 100)
            guard split < flight.count else { break }
            client.feed(flight[..<split])
            #expect(try client.handshake() == .wantRead)
            client.feed(flight[split...])
            #expect(try client.handshake() == .complete)
            split += 1
        }
    }

    @Test func writeStopsAtThePendingCiphertextLimit() throws {
        let client = try TLSEngine(
            clientContext: fixture.clientContext(), serverName: TLSFixture.relayName,
            maximumPendingCiphertext: 20_000)
        let server = try TLSEngine(serverContext: fixture.serverContext())
        try completeHandshake(client: client, server: server)
        let data = payload(100_000)
        var offset = 0
        var received: [UInt8] = []
        var rounds = 0
        while offset < data.count {
            let consumed = try client.write(data[offset...])
            #expect(consumed > 0)
            #expect(consumed < data.count)
            #expect(client.pendingCiphertextCount < 20_000 + 17_000)
            offset += consumed
            transfer(from: client, to: server)
            received += try readAvailable(server).bytes
            rounds += 1
        }
        #expect(received == data)
        #expect(rounds >= 3)
    }

    @Test func writeBeforeTheHandshakeConsumesNothing() throws {
        let (client, _) = try pair()
        #expect(try client.write([1, 2, 3]) == 0)
        #expect(client.pendingCiphertextCount > 0)  // the ClientHello
    }

    @Test func readIntoAnArrayIsBounded() throws {
        let (client, server) = try pair()
        try completeHandshake(client: client, server: server)
        _ = try server.write(payload(50))
        transfer(from: server, to: client)
        var bytes: [UInt8] = [9]
        #expect(try client.readPlaintext(into: &bytes, maxCount: 20) == .bytes(20))
        #expect(bytes == [9] + payload(50).prefix(20))
        #expect(try client.readPlaintext(into: &bytes, maxCount: 100) == .bytes(30))
        #expect(bytes == [9] + payload(50))
    }

    @Test func ipAddressNamesAreVerifiedWithoutSNI() throws {
        let leaf = try fixture.authority.issueLeaf(dnsNames: [], ipAddresses: ["127.0.0.1"])
        let (client, server) = try pair(
            serverContext: fixture.serverContext(leaf), serverName: "127.0.0.1")
        try completeHandshake(client: client, server: server)
        #expect(client.peerCertificate?.ipAddresses == ["127.0.0.1"])
        #expect(server.requestedServerName == nil)
        let error = try clientFailure(
            serverContext: fixture.serverContext(leaf), serverName: "127.0.0.2")
        #expect(error.message == "certificate for 127.0.0.1 does not match 127.0.0.2")
    }

    @Test func insecureSwitchAcceptsAnUntrustedCertificate() throws {
        let foreign = try fixture.otherAuthority.issueLeaf(dnsNames: ["other.example"])
        let context = try TLSContext(
            client: TLSConfiguration.Client(insecureSkipVerificationForTesting: true))
        let (client, server) = try pair(
            clientContext: context, serverContext: fixture.serverContext(foreign))
        try completeHandshake(client: client, server: server)
        #expect(client.peerCertificate?.subjectCommonName == "other.example")
    }

    /// The system store's way: a root is found by its subject hash when the handshake needs it.
    @Test func caDirectoryTrustsWhatItsHashLinksName() throws {
        let directory = "/tmp/webproxyd-tls-test-cadir-\(getpid())"
        #expect(mkdir(directory, 0o700) == 0)
        defer { rmdir(directory) }
        let authority = try #require(TLSContext.readCertificates(fixture.authority.certificatePEM, what: "CA").first)
        defer { X509_free(authority) }
        let hash = String(X509_subject_name_hash(authority), radix: 16)
        let path = directory + "/" + String(repeating: "0", count: 8 - hash.count) + hash + ".0"
        let file = try #require(fopen(path, "w"))
        fputs(fixture.authority.certificatePEM, file)
        fclose(file)
        let context = try TLSContext(client: TLSConfiguration.Client(trust: .caDirectory(path: directory)))
        let (client, server) = try pair(clientContext: context)
        try completeHandshake(client: client, server: server)
        #expect(client.isHandshakeComplete)
        #expect(TLSContext.systemTrustDirectory(environment: { _ in nil }, defaultDirectory: directory) == directory)

        unlink(path)
        let empty = try TLSContext(client: TLSConfiguration.Client(trust: .caDirectory(path: directory)))
        #expect(try clientFailure(clientContext: empty).kind == .untrustedIssuer)
        #expect(TLSContext.systemTrustDirectory(environment: { _ in nil }, defaultDirectory: directory) == nil)
    }

    @Test func caFileIsTrusted() throws {
        let path = "/tmp/webproxyd-tls-test-ca-\(getpid()).pem"
        let file = try #require(fopen(path, "w"))
        fputs(fixture.authority.certificatePEM, file)
        fclose(file)
        defer { unlink(path) }
        let context = try TLSContext(client: TLSConfiguration.Client(trust: .caFile(path: path)))
        let (client, server) = try pair(clientContext: context)
        try completeHandshake(client: client, server: server)
        #expect(client.isHandshakeComplete)
    }
}
