public import WebProxyCore

/// What the first 64 bytes of an MTProxy client connection (the obfuscated2 init) say when
/// read with the proxy secret: the transport and the Telegram DC the client asked for.
///
/// The client→proxy key is SHA-256(init[8..<40] + the secret's 16 key bytes) with the
/// counter starting at init[40..<56]; bytes 56..<64 of the init, decrypted, hold the
/// transport tag and the DC id (int16, little-endian). Telegram Desktop sends a negative DC
/// id for its media cluster, where file downloads go, which lets the daemon carry those
/// streams apart from chat. Reading the init never changes or holds back a byte.
public struct ObfuscatedInit: Equatable, Sendable {
    public static let length = 64

    public enum Transport: UInt32, Sendable {
        case abridged = 0xEFEF_EFEF
        case intermediate = 0xEEEE_EEEE
        case paddedIntermediate = 0xDDDD_DDDD
    }

    public let transport: Transport
    /// The DC id: negative for a DC's media cluster, 10000 + id on Telegram's test servers.
    public let dc: Int16

    public init(transport: Transport, dc: Int16) {
        self.transport = transport
        self.dc = dc
    }

    /// Whether the connection is for a media cluster (file downloads).
    public var isMediaCluster: Bool { dc < 0 }

    /// Reads the first 64 of `bytes`; nil when there are fewer, or when decrypted they name
    /// no transport (another secret, or not MTProxy at all).
    public init?(_ bytes: some Collection<UInt8>, secret: ProxySecret) {
        guard bytes.count >= Self.length else { return nil }
        let head = Array(bytes.prefix(Self.length))
        let keys = Self.directionKeys(Array(head[8..<56]), secretKey: Array(secret.bytes.suffix(16)))
        guard let cipher = AESCounterCipher(key: keys.key, iv: keys.iv) else { return nil }
        let plain = cipher.apply(head)
        let tag = plain[56..<60].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard let transport = Transport(rawValue: tag) else { return nil }
        self.transport = transport
        dc = Int16(bitPattern: UInt16(plain[60]) | UInt16(plain[61]) << 8)
    }

    /// One direction's AES key and counter from 48 bytes of init material: init[8..<56] for
    /// client→proxy, the same bytes reversed for proxy→client.
    static func directionKeys(_ material: [UInt8], secretKey: [UInt8]) -> (key: [UInt8], iv: [UInt8]) {
        (AESCounterCipher.sha256(Array(material.prefix(32)) + secretKey), Array(material.suffix(16)))
    }

    /// The init a client opens a connection with: `random` (64 bytes that
    /// `MTProxyProbe.isUsableInit` accepts) with this transport and DC written into bytes
    /// 56..<62, those 8 bytes sent encrypted. Nil when `random` is not 64 bytes.
    public func clientBytes(secret: ProxySecret, random: [UInt8]) -> [UInt8]? {
        guard random.count == Self.length else { return nil }
        var plain = random
        let tag = transport.rawValue
        plain.replaceSubrange(56..<62, with: (0..<4).map { UInt8(truncatingIfNeeded: tag >> ($0 * 8)) } + [
            UInt8(truncatingIfNeeded: dc), UInt8(truncatingIfNeeded: dc >> 8),
        ])
        let keys = Self.directionKeys(Array(plain[8..<56]), secretKey: Array(secret.bytes.suffix(16)))
        guard let cipher = AESCounterCipher(key: keys.key, iv: keys.iv) else { return nil }
        return Array(plain[0..<56]) + cipher.apply(plain)[56..<64]
    }
}
