internal import CWebProxyOpenSSL

/// A TLS failure with a message a person can act on and OpenSSL's drained error stack.
///
/// Messages name hosts and certificate fields only; they never carry payload bytes,
/// keys or other secrets.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for code that reacts differently (retry, report, give up).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The configuration (CA file, pins, certificate or key) could not be used.
        public static let configuration = Kind("configuration")
        /// The certificate does not name the host we connected to.
        public static let certificateNameMismatch = Kind("certificateNameMismatch")
        /// A certificate in the chain is past its notAfter date.
        public static let certificateExpired = Kind("certificateExpired")
        /// A certificate in the chain is not valid yet.
        public static let certificateNotYetValid = Kind("certificateNotYetValid")
        /// The chain does not lead to a trusted root.
        public static let untrustedIssuer = Kind("untrustedIssuer")
        /// The chain verified but no certificate in it matches a configured pin.
        public static let pinMismatch = Kind("pinMismatch")
        /// Any other certificate verification failure.
        public static let certificateInvalid = Kind("certificateInvalid")
        /// The handshake failed for a reason other than the certificate (alert, version, ALPN).
        public static let handshakeFailed = Kind("handshakeFailed")
        /// The peer or transport broke the TLS protocol after the handshake.
        public static let protocolError = Kind("protocolError")
        /// The transport closed before the handshake finished.
        public static let closedDuringHandshake = Kind("closedDuringHandshake")
        /// The engine was used in a way its state does not allow.
        public static let invalidState = Kind("invalidState")
    }

    /// The class of failure.
    public let kind: Kind
    /// A sentence for a person: "certificate for a.example does not match b.example".
    public let message: String
    /// OpenSSL's error queue at the time of failure, oldest first (library and reason text).
    public let openSSLErrors: [String]

    /// Creates an error; `openSSLErrors` is usually `TLSError.drainOpenSSLErrors()`.
    public init(_ kind: Kind, _ message: String, openSSLErrors: [String] = []) {
        self.kind = kind
        self.message = message
        self.openSSLErrors = openSSLErrors
    }

    public var description: String {
        openSSLErrors.isEmpty
            ? message : "\(message) (OpenSSL: \(openSSLErrors.joined(separator: "; ")))"
    }

    /// Most entries kept from one drain; the queue is bounded but a broken peer should not
    /// make an error description grow long.
    static let maximumDrainedErrors = 8

    /// Empties this thread's OpenSSL error queue into readable strings.
    package static func drainOpenSSLErrors() -> [String] {
        var entries: [String] = []
        var data: UnsafePointer<CChar>?
        var flags: Int32 = 0
        while true {
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            if code == 0 { break }
            guard entries.count < maximumDrainedErrors else { continue }
            var text = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
                ERR_error_string_n(code, buffer.baseAddress, buffer.count)
                return String(cString: buffer.baseAddress!)
            }
            if flags & ERR_TXT_STRING != 0, let data, data.pointee != 0 {
                text += " (\(String(cString: data)))"
            }
            entries.append(text)
        }
        return entries
    }
}
