import Synchronization
import Testing
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
        var generator = SeededGenerator(seed: 6455)
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
        let size = 4 << 20
        var buffer = [UInt8](repeating: 0x42, count: size)
        let rounds = 16
        var start = timespec()
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        for _ in 0..<rounds { WebSocketMasking.apply(key: 0x37FA_213D, to: &buffer, range: 0..<size) }
        clock_gettime(CLOCK_MONOTONIC, &end)
        let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
        let mebibytes = Double(size * rounds) / Double(1 << 20)
        print("WebSocket masking: \(Int(mebibytes / max(seconds, 1e-9))) MiB/s over \(Int(mebibytes)) MiB")
        // An even number of rounds restores the input.
        #expect(buffer.allSatisfy { $0 == 0x42 })
    }
}
