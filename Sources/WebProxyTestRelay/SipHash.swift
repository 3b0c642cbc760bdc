/// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit PRF. The test relay uses it to
/// authenticate its own tokens and to fingerprint uplink bodies, so it needs no crypto library.
struct SipHash: Sendable {
    let k0: UInt64
    let k1: UInt64

    /// A key from 16 bytes, read little-endian as in the reference implementation.
    init(key: [UInt8]) {
        precondition(key.count == 16, "SipHash needs a 16-byte key")
        k0 = Self.littleEndianWord(key, at: 0)
        k1 = Self.littleEndianWord(key, at: 8)
    }

    /// The 64-bit tag of `message`.
    func hash(_ message: [UInt8]) -> UInt64 {
        var state = State(k0: k0, k1: k1)
        message.withUnsafeBytes { raw in
            let words = raw.count / 8
            for index in 0..<words {
                state.compress(
                    UInt64(
                        littleEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
                )
            }
            var last = UInt64(truncatingIfNeeded: raw.count) << 56
            for index in 0..<(raw.count % 8) {
                last |= UInt64(raw[words * 8 + index]) << (8 * UInt64(index))
            }
            state.compress(last)
        }
        return state.finish()
    }

    private struct State {
        var v0: UInt64
        var v1: UInt64
        var v2: UInt64
        var v3: UInt64

        init(k0: UInt64, k1: UInt64) {
            v0 = 0x736f_6d65_7073_6575 ^ k0
            v1 = 0x646f_7261_6e64_6f6d ^ k1
            v2 = 0x6c79_6765_6e65_7261 ^ k0
            v3 = 0x7465_6462_7974_6573 ^ k1
        }

        mutating func round() {
            v0 &+= v1
            v1 = rotate(v1, 13)
            v1 ^= v0
            v0 = rotate(v0, 32)
            v2 &+= v3
            v3 = rotate(v3, 16)
            v3 ^= v2
            v0 &+= v3
            v3 = rotate(v3, 21)
            v3 ^= v0
            v2 &+= v1
            v1 = rotate(v1, 17)
            v1 ^= v2
            v2 = rotate(v2, 32)
        }

        mutating func compress(_ word: UInt64) {
            v3 ^= word
            round()
            round()
            v0 ^= word
        }

        mutating func finish() -> UInt64 {
            v2 ^= 0xff
            round()
            round()
            round()
            round()
            return v0 ^ v1 ^ v2 ^ v3
        }

        private func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
            (value << count) | (value >> (64 - count))
        }
    }

    private static func littleEndianWord(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }
}
