internal import CWebProxyOpenSSL

/// The bridge capability of a relay profile (PROTOCOL.md §2.2):
/// `base64url_nopad(HMAC-SHA256(key: S, message: context))`, always 43 characters, where
/// the context is `"tdesktop-web-proxy-bridge-v1\n" + H` at the root and
/// `"tdesktop-web-proxy-bridge-v2\n" + H + "\n" + P` under a base path.
///
/// The value is a secret: it is only reachable through `urlSafeValue` and `bridgePath`;
/// `description` and the mirror hide it, and equality is constant-time.
public struct Capability: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The 43-character base64url capability. Secret: never log it.
    public let urlSafeValue: String
    /// The base path the capability was derived for; nil for a root relay.
    public let basePath: BasePath?

    /// Length of every capability: 32 MAC bytes in unpadded base64url.
    static let encodedLength = 43
    private static let digestLength = 32

    /// Derives the capability a relay expects for `secret` at `host`, under `basePath`
    /// (nil: root relay, v1 context).
    public static func derive(secret: ProxySecret, host: RelayHost, basePath: BasePath?) -> Capability {
        var context = "tdesktop-web-proxy-bridge-v1\n" + host.name
        if let basePath {
            context = "tdesktop-web-proxy-bridge-v2\n" + host.name + "\n" + basePath.value
        }
        let value = withHMACSHA256(key: secret.bytes, message: Array(context.utf8)) { mac in
            Base64URL.encode(mac)
        }
        return Capability(urlSafeValue: value, basePath: basePath)
    }

    private init(urlSafeValue: String, basePath: BasePath?) {
        self.urlSafeValue = urlSafeValue
        self.basePath = basePath
    }

    /// `/?bridge=<capability>` or `/P/?bridge=<capability>`: the request target of the bridge
    /// page. Secret: never log it.
    public var bridgePath: String {
        (basePath?.pathPrefix ?? "") + "/?bridge=" + urlSafeValue
    }

    /// `/api/v1` or `/P/api/v1`: the prefix of the session, up, down and ws endpoints.
    public var apiPathPrefix: String {
        (basePath?.pathPrefix ?? "") + "/api/v1"
    }

    /// Constant-time check of a presented capability (e.g. a relay's `bridge=` value).
    /// Only the length (43 for any valid capability) can be learnt from timing.
    public func matches(_ presented: some StringProtocol) -> Bool {
        let expected = Array(urlSafeValue.utf8)
        var candidate = Array(presented.utf8)
        defer { Self.cleanse(&candidate) }
        guard candidate.count == expected.count else { return false }
        return expected.withUnsafeBytes { left in
            candidate.withUnsafeBytes { right in
                CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }

    /// Constant-time equality of the values; base paths must match too.
    public static func == (lhs: Capability, rhs: Capability) -> Bool {
        lhs.basePath == rhs.basePath && lhs.matches(rhs.urlSafeValue)
    }

    public var description: String {
        basePath == nil ? "Capability(root)" : "Capability(base path)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// Runs HMAC-SHA256 (OpenSSL) and hands the 32-byte MAC to `body`; the MAC buffer is
    /// zeroed afterwards. The key is read in place, never copied.
    static func withHMACSHA256<Result>(
        key: [UInt8], message: [UInt8], _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        let mac = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Int(EVP_MAX_MD_SIZE))
        mac.initialize(repeating: 0)
        defer {
            OPENSSL_cleanse(mac.baseAddress, mac.count)
            mac.deallocate()
        }
        var macLength: UInt32 = 0
        let produced = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                     messageBytes.baseAddress, messageBytes.count, mac.baseAddress, &macLength)
            }
        }
        // HMAC-SHA256 only fails on allocation failure inside OpenSSL; no input can cause it.
        precondition(produced != nil && Int(macLength) == digestLength, "HMAC-SHA256 failed")
        return body(UnsafeBufferPointer(rebasing: mac[..<digestLength]))
    }

    private static func cleanse(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
    }
}
