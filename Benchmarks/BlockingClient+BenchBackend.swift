import WebProxyTestSupport

/// `BenchBackend`'s one-byte protocol over the shared blocking client.
extension BlockingClient {
    /// A load client of `port`: Nagle off, both timeouts `timeoutSeconds`; nil if it cannot connect.
    static func load(port: UInt16, timeoutSeconds: Int = 30) -> BlockingClient? {
        BlockingClient(port: port, timeoutSeconds: timeoutSeconds, noDelay: true)
    }

    /// Sends the mode byte (and the count for upload/download).
    func begin(_ mode: BenchBackend.Mode, count: UInt64 = 0) -> Bool {
        var header = [mode.rawValue]
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
