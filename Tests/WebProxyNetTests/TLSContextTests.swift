import CWebProxyOpenSSL
import Glibc
import Testing
import WebProxyTestSupport

@testable import WebProxyNet

@Suite("TLSContext configuration")
struct TLSContextTests {
    @Test func systemTrustStoreLoads() throws {
        let context = try TLSContext(client: TLSConfiguration.Client())
        #expect(context.role == .client)
    }

    /// The system's hash directory is used only where OpenSSL's environment overrides are
    /// unset and it holds hash links; otherwise (or with no directory at all) the default paths.
    @Test func systemTrustDirectoryHonoursOpenSSLsOverrides() throws {
        let directory = "/tmp/webproxyd-tls-test-hashdir-\(getpid())"
        #expect(mkdir(directory, 0o700) == 0)
        defer { rmdir(directory) }
        #expect(TLSContext.systemTrustDirectory(environment: { _ in nil }, defaultDirectory: directory) == nil)
        let link = directory + "/5ad8a5d6.0"
        let file = try #require(fopen(link, "w"))
        fclose(file)
        defer { unlink(link) }
        #expect(TLSContext.systemTrustDirectory(environment: { _ in nil }, defaultDirectory: directory) == directory)
        for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            #expect(
                TLSContext.systemTrustDirectory(
                    environment: { $0 == variable ? "/etc/my-roots" : nil }, defaultDirectory: directory) == nil)
        }
        #expect(TLSContext.systemTrustDirectory(environment: { _ in nil }, defaultDirectory: "/nonexistent") == nil)
    }

    @Test(arguments: [
        ("5ad8a5d6.0", true), ("0123ABCD.12", true), ("5ad8a5d6.r0", false), ("5ad8a5d.0", false),
        ("5ad8a5d6", false), ("ca-certificates.crt", false), ("5ad8a5dg.0", false), ("5ad8a5d6.", false),
    ])
    func hashLinkNames(name: String, isHashLink: Bool) {
        #expect(TLSContext.isHashLinkName(name) == isHashLink)
    }

    @Test(arguments: [
        "", "abc", "not base64 at all!", "AAAA",
        String(repeating: "A", count: 42) + "==",  // 31 bytes
        String(repeating: "A", count: 44) + "AAAA",  // 36 bytes
    ])
    func malformedPinsAreRejected(pin: String) throws {
        let configuration = TLSConfiguration.Client(spkiPins: [pin])
        let error = try #require(throws: TLSError.self) { try TLSContext(client: configuration) }
        #expect(error.kind == .configuration)
        #expect(error.message.contains("is not the base64 of a SHA-256 hash"))
    }

    @Test func pinsCannotBeCombinedWithTheInsecureSwitch() throws {
        let configuration = TLSConfiguration.Client(
            spkiPins: [String(repeating: "A", count: 43) + "="],
            insecureSkipVerificationForTesting: true)
        let error = try #require(throws: TLSError.self) { try TLSContext(client: configuration) }
        #expect(
            error.message
                == "certificate pins cannot be combined with insecureSkipVerificationForTesting")
    }

    @Test func missingCAFileIsReported() throws {
        let configuration = TLSConfiguration.Client(trust: .caFile(path: "/nonexistent/ca.pem"))
        let error = try #require(throws: TLSError.self) { try TLSContext(client: configuration) }
        #expect(error.kind == .configuration)
        #expect(error.message == "cannot load CA certificates from ca-file /nonexistent/ca.pem")
        #expect(!error.openSSLErrors.isEmpty)
    }

    @Test func serverKeyMustMatchItsCertificate() throws {
        let authority = try TestCertificateAuthority()
        let one = try authority.issueLeaf(dnsNames: ["a.example"])
        let two = try authority.issueLeaf(dnsNames: ["b.example"])
        let configuration = TLSConfiguration.Server(
            certificateChainPEM: one.certificatePEM, privateKeyPEM: two.privateKeyPEM)
        let error = try #require(throws: TLSError.self) { try TLSContext(server: configuration) }
        #expect(error.message == "the private key does not match the server certificate")
        #expect(!String(describing: configuration).contains("PRIVATE KEY"))
    }

    @Test func enginesCheckTheirContextsRole() throws {
        let client = try TLSContext(client: TLSConfiguration.Client())
        #expect(throws: TLSError.self) { try TLSEngine(serverContext: client) }
        #expect(throws: TLSError.self) { try TLSEngine(clientContext: client, serverName: "") }
    }
}

@Suite("TestCertificateAuthority")
struct TestCertificateAuthorityTests {
    @Test func leafCarriesTheRequestedNamesAndDates() throws {
        let authority = try TestCertificateAuthority(commonName: "Demo CA")
        let leaf = try authority.issueLeaf(
            dnsNames: ["a.example", "b.example"], ipAddresses: ["::1"],
            validity: .custom(notBefore: 1_700_000_000, notAfter: 1_800_000_000))
        #expect(leaf.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(leaf.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(authority.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(leaf.spkiPin.utf8.count == 44)
        #expect(leaf.spkiPin != authority.spkiPin)
        #expect(!String(describing: leaf).contains("PRIVATE KEY"))

        let certificates = try TLSContext.readCertificates(leaf.certificatePEM, what: "leaf")
        defer { certificates.forEach { X509_free($0) } }
        let info = TLSCertificateInfo(certificate: certificates[0])
        #expect(info.subjectCommonName == "a.example")
        #expect(info.dnsNames == ["a.example", "b.example"])
        #expect(info.ipAddresses == ["::1"])
        #expect(info.issuerCommonName == "Demo CA")
        #expect(info.notBefore == 1_700_000_000)
        #expect(info.notAfter == 1_800_000_000)
        #expect(info.notAfterDescription == "2027-01-15 08:00:00 UTC")
        #expect(info.spkiSHA256Base64 == leaf.spkiPin)
    }

    @Test func aLeafNeedsAName() throws {
        let authority = try TestCertificateAuthority()
        #expect(throws: TLSError.self) { try authority.issueLeaf(dnsNames: []) }
        #expect(throws: TLSError.self) { try authority.issueLeaf(dnsNames: ["a,b"]) }
    }
}
