import WebProxyCore
import WebProxyDaemon
import WebProxyTestSupport

/// `BenchBackend`'s one-byte protocol over the shared blocking client, behind the
/// obfuscated2 init a Telegram client opens with.
extension BlockingClient {
    /// A load client of `port`: Nagle off, both timeouts `timeoutSeconds`; nil if it cannot connect.
    static func load(port: UInt16, timeoutSeconds: Int = 30) -> BlockingClient? {
        BlockingClient(port: port, timeoutSeconds: timeoutSeconds, noDelay: true)
    }

    /// Sends the init for `dc` (Telegram Desktop's downloads use the media cluster, a
    /// negative id), then the mode byte (and the count for upload/download).
    func begin(_ mode: BenchBackend.Mode, count: UInt64 = 0, dc: Int16 = 2) -> Bool {
        var header = telegramInit(dc: dc) + [mode.rawValue]
        if mode != .echo { header += (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> (8 * $0)) } }
        return send(header)
    }

    /// Sends `count` bytes of a fixed pattern.
    func sendBulk(_ count: Int) -> Bool {
        var left = count
        return bulkPattern.withUnsafeBytes { pattern in
            while left > 0 {
                let piece = min(left, pattern.count)
                guard send(UnsafeRawBufferPointer(rebasing: pattern[..<piece])) else { return false }
                left -= piece
            }
            return true
        }
    }
}

private let bulkPattern = [UInt8]((0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })

/// The init of a Telegram connection to `dc` with the benchmark's secret; the backend skips it.
private func telegramInit(dc: Int16) -> [UInt8] {
    let secret = try! ProxySecret(parsing: BenchWorld.secret)
    // Any 64 bytes whose first word names no other protocol will do.
    let random = (0..<ObfuscatedInit.length).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
    return ObfuscatedInit(transport: .intermediate, dc: dc).clientBytes(secret: secret, random: random)!
}
