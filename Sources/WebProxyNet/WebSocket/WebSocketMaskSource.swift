internal import CWebProxyOpenSSL

/// Supplies client masking keys, drawing random bytes in bulk (one call fills many keys)
/// so each frame does not pay for a call into the random generator.
public struct WebSocketMaskSource: Sendable {
    private let fill: @Sendable (UnsafeMutableRawBufferPointer) -> Void
    private let keysPerFill: Int
    private var pool: [UInt32] = []
    private var nextIndex = 0

    /// `fill` must write random bytes over the whole buffer it is given; it is called for
    /// `keysPerFill` keys (4 bytes each) at a time.
    public init(keysPerFill: Int = 256, fill: @escaping @Sendable (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(keysPerFill > 0, "keysPerFill must be positive")
        self.keysPerFill = keysPerFill
        self.fill = fill
    }

    /// Keys from OpenSSL's CSPRNG (`RAND_bytes`). A generator failure traps: sending
    /// predictable masks is worse than stopping.
    public static func openSSL(keysPerFill: Int = 256) -> WebSocketMaskSource {
        WebSocketMaskSource(keysPerFill: keysPerFill) { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            let status = RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count))
            precondition(status == 1, "RAND_bytes failed")
        }
    }

    /// The next masking key; its most significant byte goes on the wire first.
    public mutating func next() -> UInt32 {
        if nextIndex == pool.count {
            let count = keysPerFill
            let fill = self.fill
            pool = [UInt32](unsafeUninitializedCapacity: count) { buffer, initialized in
                let raw = UnsafeMutableRawBufferPointer(buffer)
                raw.initializeMemory(as: UInt8.self, repeating: 0)
                fill(raw)
                initialized = count
            }
            nextIndex = 0
        }
        defer { nextIndex += 1 }
        // Read in wire order so a source of known bytes yields the key those bytes spell.
        return UInt32(bigEndian: pool[nextIndex])
    }
}
