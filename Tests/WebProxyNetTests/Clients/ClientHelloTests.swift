import Testing
import WebProxyTestSupport

@testable import WebProxyNet

/// What a censor sees of our TLS: the ClientHello, captured from a real client handshake
/// against a listener that only records it.
@Suite("the ClientHello is shaped like Chromium's")
struct ClientHelloTests {
    /// The parts of a ClientHello a fingerprint (JA3, JA4) is made of.
    struct ClientHello {
        var cipherSuites: [UInt16] = []
        var extensions: [UInt16: [UInt8]] = [:]
        var extensionOrder: [UInt16] = []

        /// Parses the first TLS record of a connection; nil unless it is a whole ClientHello.
        init?(record bytes: [UInt8]) {
            var reader = Reader(bytes: bytes[...])
            guard reader.byte() == 0x16, reader.skip(2), let recordLength = reader.number(2),
                reader.remaining >= recordLength, reader.byte() == 0x01, reader.skip(3),
                reader.skip(2 + 32), let sessionIDLength = reader.number(1), reader.skip(sessionIDLength),
                let suitesLength = reader.number(2), let suites = reader.bytes(suitesLength),
                let compressionLength = reader.number(1), reader.skip(compressionLength),
                let extensionsLength = reader.number(2), var extensions = reader.bytes(extensionsLength).map({ Reader(bytes: $0[...]) })
            else { return nil }
            var suiteReader = Reader(bytes: suites[...])
            while let suite = suiteReader.number(2) { cipherSuites.append(UInt16(suite)) }
            while extensions.remaining > 0 {
                guard let type = extensions.number(2), let length = extensions.number(2), let body = extensions.bytes(length)
                else { return nil }
                self.extensions[UInt16(type)] = body
                extensionOrder.append(UInt16(type))
            }
        }

        /// A list extension's 16-bit entries after its 2-byte length.
        func list(_ type: UInt16) -> [UInt16] {
            guard let body = extensions[type] else { return [] }
            var reader = Reader(bytes: body[...])
            guard reader.skip(2) else { return [] }
            var entries: [UInt16] = []
            while let entry = reader.number(2) { entries.append(UInt16(entry)) }
            return entries
        }
    }

    struct Reader {
        var bytes: ArraySlice<UInt8>
        var remaining: Int { bytes.count }
        mutating func byte() -> UInt8? { bytes.popFirst() }
        mutating func skip(_ count: Int) -> Bool {
            guard bytes.count >= count else { return false }
            bytes = bytes.dropFirst(count)
            return true
        }
        mutating func number(_ width: Int) -> Int? {
            guard bytes.count >= width else { return nil }
            let value = bytes.prefix(width).reduce(0) { $0 << 8 | Int($1) }
            bytes = bytes.dropFirst(width)
            return value
        }
        mutating func bytes(_ count: Int) -> [UInt8]? {
            guard bytes.count >= count else { return nil }
            defer { bytes = bytes.dropFirst(count) }
            return Array(bytes.prefix(count))
        }
    }

    /// Chromium's cipher suites in its order (GREASE aside).
    static let chromiumSuites: [UInt16] = [
        0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8, 0xC013, 0xC014, 0x009C, 0x009D,
        0x002F, 0x0035,
    ]

    func capturedClientHello() async throws -> ClientHello? {
        let tls = try ClientTLS()
        return try await withLoopAndResolver { loop, resolver in
            let record: [UInt8] = try await onLoop(loop) { done in
                var held: [TCPConnection] = []
                var listener: TCPListener?
                listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                    let recorder = RecordingDelegate()
                    recorder.onRead = { connection, _ in
                        let bytes = recorder.received
                        guard bytes.count >= 5, bytes.count >= 5 + (Int(bytes[3]) << 8 | Int(bytes[4])) else { return }
                        // One ClientHello is all we want: the dial then fails, which is expected.
                        connection.abort()
                        held.removeAll()
                        listener?.close()
                        done(bytes)
                    }
                    connection.delegate = recorder
                    held.append(connection)
                }
                let target = SecureEndpoint(
                    origin: testOrigin, connectTo: DialTarget(host: "127.0.0.1", port: listener!.localAddress.port)!)
                _ = SecureDialer(context: tls.client).connect(to: target, on: loop, resolver: resolver) { _ in }
            }
            return ClientHello(record: record)
        }
    }

    @Test func chromiumsSuitesGroupsAndSignatureAlgorithmsInItsOrder() async throws {
        let hello = try #require(try await capturedClientHello())
        // OpenSSL adds the renegotiation SCSV (0x00FF) where Chromium sends the extension.
        #expect(hello.cipherSuites.filter { $0 != 0x00FF } == Self.chromiumSuites)
        #expect(hello.list(0x000A) == [0x001D, 0x0017, 0x0018])  // x25519, P-256, P-384
        #expect(
            hello.list(0x000D) == [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601])
    }

    @Test func asksForStapledOCSPAndSCTsAndNeverEncryptThenMAC() async throws {
        let hello = try #require(try await capturedClientHello())
        #expect(hello.extensions[0x0005] != nil)  // status_request
        #expect(hello.extensions[0x0012] != nil)  // signed_certificate_timestamp
        #expect(hello.extensions[0x0016] == nil)  // encrypt_then_mac
        #expect(hello.extensions[0x0023] != nil)  // session_ticket
        #expect(hello.extensions[0x0000] != nil)  // server_name
    }
}
