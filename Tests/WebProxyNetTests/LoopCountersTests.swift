import Testing
import WebProxyTestSupport

@testable import WebProxyNet

@Suite struct LoopCountersTests {
    /// Records of assorted lengths (an empty one, one over 16 KiB), as TLS frames them.
    static let records: [[UInt8]] = [0, 1, 5, 300, 16_640, 7].map { length in
        [0x17, 0x03, 0x03, UInt8(length >> 8), UInt8(length & 0xFF)] + payload(length, seed: UInt8(length & 0xFF))
    }

    @Test func recordCounterFindsEveryRecordWhereverTheStreamIsSplit() {
        let stream = Self.records.flatMap { $0 }
        for split in 0...stream.count {
            var counter = TLSRecordCounter()
            let counted = stream[..<split].withUnsafeBytes { counter.count($0) }
                + stream[split...].withUnsafeBytes { counter.count($0) }
            #expect(counted == Self.records.count, "split at \(split)")
        }
        var counter = TLSRecordCounter()
        var byteByByte = 0
        for byte in stream { byteByByte += [byte].withUnsafeBytes { counter.count($0) } }
        #expect(byteByByte == Self.records.count)
    }

    /// A 2 MiB response over real TLS on one loop: both ends count on that loop, and a TLS
    /// record holds at most 16 KiB, so at least 128 records went each way of the count.
    @Test func aTLSExchangeIsCountedInSocketCallsRecordsAndWakeups() async throws {
        let tls = try ClientTLS()
        let body = payload(2 << 20, seed: 9)
        try await withLoopAndResolver { loop, resolver in
            let counters: LoopCounters = try await onLoop(loop, timeout: .seconds(30)) { done in
                let server = try startTestServer(on: loop, context: tls.server) { _, responder in
                    responder.respond(HTTPResponseHead(status: 200, reason: "OK", headers: [("Connection", "close")]), body: body)
                }
                let request = Array("GET / HTTP/1.1\r\nHost: proxy.example.com\r\n\r\n".utf8)
                _ = SecureDialer(context: tls.client).connect(to: endpoint(of: server), on: loop, resolver: resolver) {
                    result in
                    guard case .success(let connection) = result else { return done(loop.counters) }
                    let recorder = PlaintextRecorder()
                    recorder.onClose = { done(loop.counters) }
                    connection.delegate = recorder
                    try? connection.write(request)
                }
            }
            #expect(counters.tlsRecordsReceived >= 128)
            #expect(counters.tlsRecordsSent >= 128)
            #expect(counters.socketReads >= 128 * 16_384 / EventLoop.readChunkSize)
            #expect(counters.socketWrites > 0)
            #expect(counters.wakeups > 0)
        }
    }

    /// A 14-byte head and a 40,000-byte body (a WebSocket frame) make the 3 records one
    /// write of 40,014 bytes makes, not a record of 14 bytes and 3 more.
    @Test func aHeadAndBodyShareTheirFirstRecord() async throws {
        let tls = try ClientTLS()
        try await withLoop("server-loop") { serverLoop in
            let server = try await onLoop(serverLoop) { done in
                done(LoopBound(try startTestServer(on: serverLoop, context: tls.server) { _, _ in }, loop: serverLoop))
            }
            let serverEndpoint: SecureEndpoint = try await onLoop(serverLoop) { done in done(endpoint(of: server.value)) }
            try await withLoopAndResolver { loop, resolver in
                let records: Int = try await onLoop(loop) { done in
                    _ = SecureDialer(context: tls.client).connect(to: serverEndpoint, on: loop, resolver: resolver) {
                        result in
                        guard case .success(let connection) = result else { return done(-1) }
                        let before = loop.counters.tlsRecordsSent
                        try? connection.write([UInt8](repeating: 0x82, count: 14), payload(40_000))
                        done(loop.counters.tlsRecordsSent - before)
                        connection.abort()
                    }
                }
                #expect(records == 3)
            }
        }
    }
}
