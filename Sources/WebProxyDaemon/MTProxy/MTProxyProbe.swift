import WebProxyCore

/// The client side of one MTProxy probe: the obfuscated2 init for a secret and a DC,
/// AES-256-CTR in both directions, and an unencrypted MTProto `req_pq_multi` whose answer
/// tells whether a Telegram DC is behind the proxy. Pure: randomness and time are inputs.
///
/// Mirrors `Tests/MTProxyClient/mtproxy_backend.py`: the client→server key is
/// SHA-256(init[8..<40] + secret key) with iv init[40..<56]; server→client uses the same
/// over init[8..<56] reversed. The whole init goes through the client cipher and bytes
/// 56..<64 (protocol tag, DC id, two random bytes) are sent encrypted.
struct MTProxyProbe {
    /// What came back on the stream.
    enum Answer: Equatable, Sendable {
        /// A `resPQ` for our nonce: a DC answered.
        case resPQ(keyFingerprints: Int)
        /// Our own `req_pq_multi` came back (raw, or re-encrypted as an echoing MTProxy
        /// server does): the backend is an echo server, not an MTProxy.
        case echoed
        /// A 4-byte packet: the proxy's transport error code (e.g. -404).
        case transportError(Int32)
        /// Anything else, described without payload bytes.
        case unexpected(String)
    }

    /// Longest answer packet read; a resPQ is under 100 bytes.
    static let maxAnswerBytes = 64 << 10
    static let reqPQMultiConstructor: UInt32 = 0xBE7E_8EF1
    static let resPQConstructor: UInt32 = 0x0516_2463
    static let vectorConstructor: UInt32 = 0x1CB5_C415
    /// First words of an init that a proxy would take for another protocol.
    static let reservedFirstWords: Set<UInt32> = [
        0x4441_4548, 0x5453_4F50, 0x2054_4547, 0x4954_504F, 0x0201_0316, 0xDDDD_DDDD, 0xEEEE_EEEE,
    ]

    /// The nonce of our `req_pq_multi`.
    let nonce: [UInt8]
    /// The bytes to send first: the init, then the encrypted `req_pq_multi` packet.
    let openingBytes: [UInt8]
    private let decryptor: AESCounterCipher
    /// Decrypted answer bytes.
    private var received: [UInt8] = []
    /// Raw bytes held while they could still be our own opening echoed unchanged.
    private var heldRaw: [UInt8]? = []

    /// Builds the probe from 64 random `initBytes` (see `isUsableInit`; bytes 56..<62 are
    /// replaced by the tag and `dc`), a 16-byte `nonce`, `padding` (0–15 bytes, appended
    /// to the packet for a dd secret only) and an MTProto `messageID`. Nil when a length is wrong.
    init?(secret: ProxySecret, dc: Int16, initBytes: [UInt8], nonce: [UInt8], padding: [UInt8], messageID: UInt64) {
        guard initBytes.count == ObfuscatedInit.length, nonce.count == 16, padding.count < 16 else { return nil }
        let header = ObfuscatedInit(transport: secret.isPadded ? .paddedIntermediate : .intermediate, dc: dc)
        guard let wireInit = header.clientBytes(secret: secret, random: initBytes) else { return nil }
        // Bytes 8..<56 go out in the clear and carry both directions' key material.
        let key = Array(secret.bytes.suffix(16))
        let material = Array(wireInit[8..<56])
        let up = ObfuscatedInit.directionKeys(material, secretKey: key)
        let down = ObfuscatedInit.directionKeys(material.reversed(), secretKey: key)
        guard let encryptor = AESCounterCipher(key: up.key, iv: up.iv),
            let decryptor = AESCounterCipher(key: down.key, iv: down.iv)
        else { return nil }
        _ = encryptor.apply(wireInit)  // the counter runs on past the init
        let message = Self.reqPQMulti(nonce: nonce, messageID: messageID)
        let body = message + (secret.isPadded ? padding : [])
        let packet = Self.littleEndian(UInt32(body.count)) + body
        self.nonce = nonce
        self.decryptor = decryptor
        openingBytes = wireInit + encryptor.apply(packet)
    }

    /// Whether random init bytes can open a connection: the first byte is not 0xef
    /// (abridged), the first word names no other protocol and the second word is not zero.
    static func isUsableInit(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == ObfuscatedInit.length, bytes[0] != 0xEF else { return false }
        return !reservedFirstWords.contains(readUInt32(bytes[0..<4])) && bytes[4..<8].contains { $0 != 0 }
    }

    /// 64 usable random init bytes.
    static func randomInit(using generator: inout some RandomNumberGenerator) -> [UInt8] {
        while true {
            let bytes = (0..<ObfuscatedInit.length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            if isUsableInit(bytes) { return bytes }
        }
    }

    /// An MTProto message id for `unixSeconds`: the time in the high word, divisible by 4.
    static func messageID(unixSeconds: UInt32, fraction: UInt32) -> UInt64 {
        UInt64(unixSeconds) << 32 | UInt64(fraction & ~3)
    }

    /// The unencrypted message `req_pq_multi nonce:int128`: auth_key_id 0, message id, length.
    static func reqPQMulti(nonce: [UInt8], messageID: UInt64) -> [UInt8] {
        let data = littleEndian(reqPQMultiConstructor) + nonce
        return [UInt8](repeating: 0, count: 8) + littleEndian(messageID) + littleEndian(UInt32(data.count)) + data
    }

    /// Takes stream bytes from the proxy; returns the answer once a whole packet arrived.
    mutating func receive(_ bytes: [UInt8]) -> Answer? {
        if var raw = heldRaw {
            raw += bytes
            if openingBytes.starts(with: raw.prefix(openingBytes.count)) {
                guard raw.count < openingBytes.count else { return .echoed }
                heldRaw = raw
                return nil
            }
            heldRaw = nil
            received += decryptor.apply(raw)
        } else {
            received += decryptor.apply(bytes)
        }
        guard received.count >= 4 else { return nil }
        let length = Int(Self.readUInt32(received[0..<4]))
        guard length > 0, length <= Self.maxAnswerBytes else {
            return .unexpected("the answer announces a \(length)-byte packet, not an MTProto message")
        }
        guard received.count >= 4 + length else { return nil }
        return Self.parseAnswer(Array(received[4..<4 + length]), nonce: nonce)
    }

    /// Reads one answer packet body (padding after the message is allowed).
    static func parseAnswer(_ packet: [UInt8], nonce: [UInt8]) -> Answer {
        if packet.count == 4 { return .transportError(Int32(bitPattern: readUInt32(packet[0..<4]))) }
        guard packet.count >= 24 else {
            return .unexpected("a \(packet.count)-byte answer is too short for an MTProto message")
        }
        guard packet[0..<8].allSatisfy({ $0 == 0 }) else {
            return .unexpected("the answer is not an unencrypted MTProto message (auth_key_id is not 0)")
        }
        let dataLength = Int(readUInt32(packet[16..<20]))
        guard dataLength >= 4, dataLength <= packet.count - 20 else {
            return .unexpected("the answer's message length \(dataLength) does not fit its \(packet.count)-byte packet")
        }
        let data = Array(packet[20..<20 + dataLength])
        let constructor = readUInt32(data[0..<4])
        switch constructor {
        case reqPQMultiConstructor where data.count == 20 && Array(data[4..<20]) == nonce:
            return .echoed
        case resPQConstructor:
            guard data.count >= 36 else { return .unexpected("the resPQ is truncated") }
            guard Array(data[4..<20]) == nonce else { return .unexpected("the resPQ answers another nonce") }
            guard let fingerprints = keyFingerprintCount(data[36...]) else {
                return .unexpected("the resPQ's pq or key fingerprints are malformed")
            }
            return .resPQ(keyFingerprints: fingerprints)
        default:
            let hex = String(constructor, radix: 16)
            return .unexpected("the answer is constructor 0x\(String(repeating: "0", count: 8 - hex.count) + hex), not resPQ")
        }
    }

    /// Skips the TL `bytes` pq and reads `Vector<long>`'s count; nil when malformed.
    private static func keyFingerprintCount(_ tail: ArraySlice<UInt8>) -> Int? {
        guard let first = tail.first else { return nil }
        var offset = tail.startIndex
        let length: Int
        let header: Int
        if first < 254 {
            length = Int(first)
            header = 1
        } else {
            guard tail.count >= 4 else { return nil }
            length = Int(tail[offset + 1]) | Int(tail[offset + 2]) << 8 | Int(tail[offset + 3]) << 16
            header = 4
        }
        offset += (header + length + 3) / 4 * 4
        guard tail.endIndex - offset >= 8, readUInt32(tail[offset..<offset + 4]) == vectorConstructor else {
            return nil
        }
        let count = Int(readUInt32(tail[offset + 4..<offset + 8]))
        guard count <= (tail.endIndex - offset - 8) / 8 else { return nil }
        return count
    }

    static func readUInt32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<T.bitWidth / 8).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }
}
