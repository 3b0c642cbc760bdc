/// Settings for a `TLSContext`: one per relay (client) or per listening certificate (server).
public enum TLSConfiguration {
    /// Client settings: how the relay's certificate is verified and what is offered.
    public struct Client: Sendable, Equatable {
        /// Where trusted root certificates come from.
        public enum Trust: Sendable, Equatable {
            /// The system store: its directory of certificates named by subject hash
            /// (`/etc/ssl/certs`), each read when a handshake first needs it, or OpenSSL's
            /// default paths (the whole bundle, parsed up front) where that directory has no
            /// hash links or `SSL_CERT_FILE` or `SSL_CERT_DIR` is set
            /// (`TLSContext.systemTrustDirectory`).
            case system
            /// A PEM file holding one or more CA certificates (the `ca-file` option); only
            /// these are trusted.
            case caFile(path: String)
            /// A directory of PEM certificates named by subject hash (`openssl rehash`), each
            /// read when a handshake first needs it; only these are trusted.
            case caDirectory(path: String)
            /// PEM text holding one or more CA certificates; only these are trusted.
            case caPEM(String)
        }

        /// Trusted roots; the system store unless set.
        public var trust: Trust
        /// SHA-256 hashes of SubjectPublicKeyInfo, base64 (HPKP `pin-sha256` form). When not
        /// empty, a certificate of the verified chain (leaf, intermediate or root) must match one.
        public var spkiPins: [String]
        /// ALPN protocols offered, most preferred first.
        public var alpnProtocols: [String]
        /// Turns off chain, date and hostname verification. For tests against a throwaway
        /// certificate only: no configuration key or command-line flag of the daemon sets it
        /// (relays use `ca-file` for a private CA), and it cannot be combined with pins.
        public var insecureSkipVerificationForTesting: Bool

        /// Creates client settings; by default the system store, no pins, ALPN `http/1.1`.
        public init(
            trust: Trust = .system,
            spkiPins: [String] = [],
            alpnProtocols: [String] = ["http/1.1"],
            insecureSkipVerificationForTesting: Bool = false
        ) {
            self.trust = trust
            self.spkiPins = spkiPins
            self.alpnProtocols = alpnProtocols
            self.insecureSkipVerificationForTesting = insecureSkipVerificationForTesting
        }
    }

    /// Server settings for the test relay: a certificate chain and its key, PEM in memory.
    public struct Server: Sendable, Equatable {
        /// Leaf certificate first, then any intermediates, PEM.
        public var certificateChainPEM: String
        /// The leaf's private key, PEM (unencrypted).
        public var privateKeyPEM: String
        /// ALPN protocols the server selects from, most preferred first.
        public var alpnProtocols: [String]

        /// Creates server settings selecting ALPN `http/1.1` by default.
        public init(
            certificateChainPEM: String, privateKeyPEM: String,
            alpnProtocols: [String] = ["http/1.1"]
        ) {
            self.certificateChainPEM = certificateChainPEM
            self.privateKeyPEM = privateKeyPEM
            self.alpnProtocols = alpnProtocols
        }
    }
}

extension TLSConfiguration.Server: CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    // The private key must never reach a log line, a `dump` or a test failure message.
    public var description: String {
        "TLSConfiguration.Server(chain: \(certificateChainPEM.utf8.count) bytes PEM, "
            + "privateKey: <redacted>, alpn: \(alpnProtocols))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["alpnProtocols": alpnProtocols], displayStyle: .struct)
    }
}
