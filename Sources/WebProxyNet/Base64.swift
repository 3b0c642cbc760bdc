/// Standard base64 with padding (RFC 4648 section 4): WebSocket handshake keys and Basic
/// proxy credentials.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            let group = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(alphabet[Int(group >> 18 & 0x3F)])
            out.append(alphabet[Int(group >> 12 & 0x3F)])
            out.append(b == nil ? UInt8(ascii: "=") : alphabet[Int(group >> 6 & 0x3F)])
            out.append(c == nil ? UInt8(ascii: "=") : alphabet[Int(group & 0x3F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes canonical padded base64 only: nil for any other character, bad padding, or
    /// non-zero bits left over in the last group.
    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        for groupStart in stride(from: 0, to: chars.count, by: 4) {
            let isLast = groupStart + 4 == chars.count
            var group: UInt32 = 0
            var padding = 0
            for char in chars[groupStart..<(groupStart + 4)] {
                if char == UInt8(ascii: "=") {
                    guard isLast else { return nil }
                    padding += 1
                    group <<= 6
                } else {
                    guard padding == 0, let value = alphabet.firstIndex(of: char) else { return nil }
                    group = group << 6 | UInt32(value)
                }
            }
            guard padding <= 2 else { return nil }
            let leftover: UInt32 = padding == 2 ? 0xFFFF : padding == 1 ? 0xFF : 0
            guard group & leftover == 0 else { return nil }
            out.append(UInt8(truncatingIfNeeded: group >> 16))
            if padding < 2 { out.append(UInt8(truncatingIfNeeded: group >> 8)) }
            if padding < 1 { out.append(UInt8(truncatingIfNeeded: group)) }
        }
        return out
    }
}
