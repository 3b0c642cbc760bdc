/// A running 64-bit FNV-1a hash: the sender and the receiver of a demo stream each hash what
/// they saw, and the two must agree. It detects corruption, loss, duplication and reordering
/// of the echo; it is not a cryptographic check.
struct DemoDigest: Equatable {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325
    /// Bytes hashed so far.
    private(set) var count = 0

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var hash = value
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        value = hash
        count += bytes.count
    }
}
