import Synchronization
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct WebSocketMaskingTests {
    static func byteByByte(_ bytes: [UInt8], key: UInt32) -> [UInt8] {
        let keyBytes = [UInt8(key >> 24), UInt8(key >> 16 & 0xFF), UInt8(key >> 8 & 0xFF), UInt8(key & 0xFF)]
        return bytes.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] }
    }

    @Test func matchesTheByteLoopForEveryLengthAndAlignment() {
        var generator = SplitMix64(seed: 6455)
        let source = (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for start in 0..<8 {
            for length in 0...(source.count - start - 8) where length < 80 || length % 17 == 0 {
                let key = UInt32.random(in: 0...UInt32.max, using: &generator)
                var buffer = source
                WebSocketMasking.apply(key: key, to: &buffer, range: start..<(start + length))
                let expected =
                    Array(source[..<start]) + Self.byteByByte(Array(source[start..<(start + length)]), key: key)
                    + Array(source[(start + length)...])
                #expect(buffer == expected, "start \(start) length \(length)")
                if buffer != expected { return }
            }
        }
    }

    @Test func maskingTwiceRestores() {
        let original = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var buffer = original
        WebSocketMasking.apply(key: 0xDEAD_BEEF, to: &buffer, range: 0..<buffer.count)
        #expect(buffer != original)
        WebSocketMasking.apply(key: 0xDEAD_BEEF, to: &buffer, range: 0..<buffer.count)
        #expect(buffer == original)
    }

    final class FillLog: Sendable {
        let sizes = Mutex<[Int]>([])
    }

    @Test func maskSourceFillsManyKeysPerCall() {
        let log = FillLog()
        var source = WebSocketMaskSource(keysPerFill: 3) { buffer in
            log.sizes.withLock { $0.append(buffer.count) }
            for index in buffer.indices { buffer[index] = UInt8(index) }
        }
        let keys = (0..<7).map { _ in source.next() }
        #expect(keys == [0x0001_0203, 0x0405_0607, 0x0809_0A0B, 0x0001_0203, 0x0405_0607, 0x0809_0A0B, 0x0001_0203])
        #expect(log.sizes.withLock { $0 } == [12, 12, 12])
    }

    @Test func openSSLSourceYieldsVaryingKeys() {
        var source = WebSocketMaskSource.openSSL(keysPerFill: 4)
        let keys = (0..<16).map { _ in source.next() }
        #expect(Set(keys).count > 1)
    }

    /// Reports masking throughput; asserts only the result, never the speed.
    @Test func measureMaskingThroughput() {
        let size = 16 << 20
        let rounds = 8
        var buffer = [UInt8](repeating: 0x42, count: size)
        var expectedPrefix = [UInt8](repeating: 0x42, count: 64)
        var start = timespec()
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        for round in 0..<rounds {
            // A different key and a write between rounds keep the optimizer from folding rounds.
            let key = 0x37FA_213D &+ UInt32(round) &* 0x0101_0101
            WebSocketMasking.apply(key: key, to: &buffer, range: 0..<size)
            buffer[round] ^= 1
        }
        clock_gettime(CLOCK_MONOTONIC, &end)
        for round in 0..<rounds {
            expectedPrefix = Self.byteByByte(expectedPrefix, key: 0x37FA_213D &+ UInt32(round) &* 0x0101_0101)
            expectedPrefix[round] ^= 1
        }
        let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
        let mebibytes = Double(size * rounds) / Double(1 << 20)
        print("WebSocket masking: \(Int(mebibytes / max(seconds, 1e-9))) MiB/s (\(Int(mebibytes)) MiB in \(seconds) s)")
        #expect(Array(buffer.prefix(64)) == expectedPrefix)
        // Past the perturbed prefix, bytes repeat with the key period of 4.
        #expect((64..<size).allSatisfy { buffer[$0] == expectedPrefix[60 + $0 % 4] })
    }
}
