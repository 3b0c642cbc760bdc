import Testing
import WebProxyTestSupport

@testable import WebProxyNet

/// Certificates shared by the TLS tests: one trusted authority, one the client never trusts.
struct TLSFixture {
    static let relayName = "proxy.example.com"

    let authority: TestCertificateAuthority
    let otherAuthority: TestCertificateAuthority
    let leaf: TestCertificateAuthority.IssuedCertificate

    init() throws {
        authority = try TestCertificateAuthority(commonName: "webproxyd Test CA")
        otherAuthority = try TestCertificateAuthority(commonName: "Other Test CA")
        leaf = try authority.issueLeaf(dnsNames: [Self.relayName])
    }

    /// Client settings trusting only `authority`.
    func clientConfiguration(pins: [String] = []) -> TLSConfiguration.Client {
        TLSConfiguration.Client(trust: .caPEM(authority.certificatePEM), spkiPins: pins)
    }

    func clientContext(pins: [String] = []) throws -> TLSContext {
        try TLSContext(client: clientConfiguration(pins: pins))
    }

    func serverContext(
        _ certificate: TestCertificateAuthority.IssuedCertificate? = nil
    ) throws -> TLSContext {
        try TLSContext(server: (certificate ?? leaf).serverConfiguration)
    }
}

/// Moves pending ciphertext from one engine into the other; returns how many bytes moved.
@discardableResult
func transfer(from source: TLSEngine, to destination: TLSEngine) -> Int {
    let bytes = source.takeCiphertext()
    destination.feed(bytes)
    return bytes.count
}

/// Runs both handshakes in memory until both are complete, forwarding everything each side
/// writes (including TLS 1.3 tickets sent after the server finishes). Throws the first error.
func completeHandshake(client: TLSEngine, server: TLSEngine) throws(TLSError) {
    for _ in 0..<10 {
        let clientProgress = try client.handshake()
        transfer(from: client, to: server)
        let serverProgress = try server.handshake()
        transfer(from: server, to: client)
        if clientProgress == .complete && serverProgress == .complete { return }
    }
    throw TLSError(.invalidState, "handshake did not finish in 10 round trips")
}

/// Reads plaintext until OpenSSL wants more ciphertext or the stream ends.
func readAvailable(_ engine: TLSEngine) throws(TLSError) -> (
    bytes: [UInt8], end: TLSEngine.ReadResult
) {
    var bytes: [UInt8] = []
    while true {
        let result = try engine.readPlaintext(into: &bytes, maxCount: 64 * 1024)
        if case .bytes = result { continue }
        return (bytes, result)
    }
}

/// One bounded read, discarding plaintext: for checking what a read reports.
func readOnce(_ engine: TLSEngine) throws(TLSError) -> TLSEngine.ReadResult {
    var sink: [UInt8] = []
    return try engine.readPlaintext(into: &sink, maxCount: 16)
}

/// Deterministic test payload.
func payload(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}
