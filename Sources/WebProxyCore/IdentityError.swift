/// Why a secret, relay hostname, base path or proxy link was refused.
///
/// The message says what is wrong and what to do about it; it never repeats the input,
/// because the input may be (or contain) an MTProxy secret.
public struct IdentityError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of problem, for callers that branch on it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidSecret, fakeTLSSecret, invalidHost, insecureScheme, ipAddressHost
            case invalidBasePath, invalidLink, unsupportedPort
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The secret is not 16 bytes or 17 bytes starting with 0xdd, in hex or base64.
        public static let invalidSecret = Code(.invalidSecret)
        /// The secret is an `ee` (FakeTLS) secret, which WEB relays do not accept.
        public static let fakeTLSSecret = Code(.fakeTLSSecret)
        /// The relay hostname breaks the canonicalization rules.
        public static let invalidHost = Code(.invalidHost)
        /// The relay was given with `http://`; WEB relays are HTTPS only.
        public static let insecureScheme = Code(.insecureScheme)
        /// The relay hostname is an IP address (or WHATWG numeric shorthand for one).
        public static let ipAddressHost = Code(.ipAddressHost)
        /// The base path breaks the base-path rules.
        public static let invalidBasePath = Code(.invalidBasePath)
        /// The proxy link is not a well-formed WEB proxy link.
        public static let invalidLink = Code(.invalidLink)
        /// A port other than 443 was given; WEB relays always use HTTPS on 443.
        public static let unsupportedPort = Code(.unsupportedPort)

        public var description: String { base.rawValue }
    }

    /// The kind of problem.
    public let code: Code
    /// A human-readable explanation that says what to do; never contains the input.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension StringProtocol {
    /// The text without leading and trailing Unicode white space (what users paste around
    /// hostnames, paths, secrets and links).
    var trimmingWhitespace: Substring {
        let scalars = Substring(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return Substring(scalars[first...last])
    }
}
