/// Why a secure connection could not be opened or ended badly, by the stage that failed.
/// Messages name hosts and carry OpenSSL's text, never payload bytes or credentials.
public enum TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Name resolution of the dial target (or of the proxy) failed.
    case resolve(NetError)
    /// TCP to the dial target failed or timed out.
    case connect(NetError)
    /// The upstream proxy could not be reached, refused, or broke its protocol.
    case proxy(NetError)
    /// The TLS handshake or the TLS record layer failed (certificate, alert, timeout).
    case tls(TLSError)
    /// The socket failed after it was connected (reset, write queue overflow).
    case io(NetError)

    public var description: String {
        switch self {
        case .resolve(let error): "resolve failed: \(error)"
        case .connect(let error): "connect failed: \(error)"
        case .proxy(let error): "proxy failed: \(error)"
        case .tls(let error): "TLS failed: \(error)"
        case .io(let error): "connection failed: \(error)"
        }
    }

    /// Sorts a `Dialer` failure into the stage it came from: `Dialer` prefixes the calls of
    /// the proxy leg with "proxy" and reports proxy protocol failures with the `.proxy` code.
    static func classifyDial(_ error: NetError) -> TransportError {
        if error.code == .proxy || error.call.hasPrefix("proxy") { return .proxy(error) }
        if error.code == .resolution || error.call == "getaddrinfo" { return .resolve(error) }
        return .connect(error)
    }
}
