import WebProxyCore

/// Mints and verifies the relay's bearer tokens: 16 random nonce bytes plus a 16-byte tag
/// over the token kind and nonce, as 43 base64url characters. Tokens stay verifiable across
/// `restart()` (the key survives), so a stale token gets the relay's 404, not the public site.
struct RelayTokenAuthority: Sendable {
    enum Kind: UInt8 {
        case bootstrap = 1
        case session = 2
    }

    private let tagHigh: SipHash
    private let tagLow: SipHash
    private let bodyHigh: SipHash
    private let bodyLow: SipHash

    init(random: inout some RandomNumberGenerator) {
        func key() -> [UInt8] {
            (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        }
        tagHigh = SipHash(key: key())
        tagLow = SipHash(key: key())
        bodyHigh = SipHash(key: key())
        bodyLow = SipHash(key: key())
    }

    private static let domain = Array("tproxy-server-token-v1\0".utf8)

    /// A fresh token of `kind`.
    func mint(_ kind: Kind, random: inout some RandomNumberGenerator) -> String {
        let nonce = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        return Base64URL.encode(nonce + tag(kind, nonce: nonce))
    }

    /// The kind of an authentic token, or nil for anything this relay did not mint.
    func verify(_ token: some StringProtocol) -> Kind? {
        guard token.utf8.count == 43, let bytes = Base64URL.decode(token), bytes.count == 32 else {
            return nil
        }
        let nonce = Array(bytes[..<16])
        let presented = bytes[16...]
        for kind in [Kind.bootstrap, .session] {
            // Constant-time comparison: accumulate differences instead of returning early.
            let difference = zip(tag(kind, nonce: nonce), presented).reduce(UInt8(0)) {
                $0 | ($1.0 ^ $1.1)
            }
            if difference == 0 { return kind }
        }
        return nil
    }

    /// A 128-bit keyed fingerprint of an uplink body, to recognise byte-identical retries
    /// without keeping up to 2 MiB per lane.
    func fingerprint(_ body: [UInt8]) -> BodyFingerprint {
        BodyFingerprint(length: body.count, high: bodyHigh.hash(body), low: bodyLow.hash(body))
    }

    private func tag(_ kind: Kind, nonce: [UInt8]) -> [UInt8] {
        let message = Self.domain + [kind.rawValue] + nonce
        return Self.bytes(tagHigh.hash(message)) + Self.bytes(tagLow.hash(message))
    }

    private static func bytes(_ word: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) }
    }
}

/// See `RelayTokenAuthority.fingerprint`.
struct BodyFingerprint: Hashable, Sendable {
    let length: Int
    let high: UInt64
    let low: UInt64
}
