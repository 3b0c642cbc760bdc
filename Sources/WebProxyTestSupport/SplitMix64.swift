/// SplitMix64 (Steele, Lea, Flood 2014): a small deterministic generator, so a seeded run
/// replays exactly. Not for secrets.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose first draw follows `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64-bit draw.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Overwrites `buffer` with the little-endian bytes of the next draws.
    public mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            let word = next().littleEndian
            let count = min(8, buffer.count - offset)
            withUnsafeBytes(of: word) { bytes in
                for index in 0..<count { buffer[offset + index] = bytes[index] }
            }
            offset += count
        }
    }
}
