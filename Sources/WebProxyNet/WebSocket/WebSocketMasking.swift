/// XOR masking of frame payloads (RFC 6455 section 5.3), eight bytes at a time.
public enum WebSocketMasking {
    /// Masks (or unmasks: the operation is its own inverse) `bytes` in place with `key`,
    /// whose most significant byte is the first key byte on the wire. The payload starts
    /// at key offset 0.
    public static func apply(key: UInt32, to bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        // The key repeated twice, laid out in memory in wire order whatever the host's endianness.
        let word = ((UInt64(key) << 32) | UInt64(key)).bigEndian
        var offset = 0
        while offset + 32 <= count {
            xorWord(base, offset, word)
            xorWord(base, offset + 8, word)
            xorWord(base, offset + 16, word)
            xorWord(base, offset + 24, word)
            offset += 32
        }
        while offset + 8 <= count {
            xorWord(base, offset, word)
            offset += 8
        }
        // offset is a multiple of 8 here, so the tail starts at key byte 0.
        var shift: UInt32 = 24
        while offset < count {
            let byte = base.load(fromByteOffset: offset, as: UInt8.self)
            base.storeBytes(of: byte ^ UInt8(truncatingIfNeeded: key >> shift), toByteOffset: offset, as: UInt8.self)
            shift = shift == 0 ? 24 : shift - 8
            offset += 1
        }
    }

    /// Masks `bytes[range]` in place with `key`.
    public static func apply(key: UInt32, to bytes: inout [UInt8], range: Range<Int>) {
        bytes.withUnsafeMutableBytes { buffer in
            apply(key: key, to: UnsafeMutableRawBufferPointer(rebasing: buffer[range]))
        }
    }

    @inline(__always)
    private static func xorWord(_ base: UnsafeMutableRawPointer, _ offset: Int, _ word: UInt64) {
        let value = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        base.storeBytes(of: value ^ word, toByteOffset: offset, as: UInt64.self)
    }
}
