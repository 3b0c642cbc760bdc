/// The client side of a SOCKS5 CONNECT (RFC 1928) with no authentication or username and
/// password (RFC 1929), as a pure state machine. The target's name goes to the proxy as a
/// domain (ATYP 3) so the proxy resolves it and no DNS query leaks from here.
public struct Socks5Handshake: ProxyHandshake {
    private enum Phase {
        case idle, awaitingMethod, awaitingAuthentication, awaitingReply, established, failed
    }

    private let target: DialTarget
    private let credentials: ProxyCredentials?
    private var phase = Phase.idle
    private var buffer: [UInt8] = []

    /// A handshake that asks the proxy to connect to `target`. Throws if a credential is
    /// empty or longer than 255 bytes (RFC 1929 limits).
    public init(target: DialTarget, credentials: ProxyCredentials? = nil) throws(NetError) {
        if let credentials {
            for field in [credentials.username, credentials.password] where !(1...255).contains(field.utf8.count) {
                throw NetError(.proxy, call: "socks5", message: "username and password must be 1 to 255 bytes")
            }
        }
        self.target = target
        self.credentials = credentials
    }

    /// The greeting: version 5 and the offered methods (0 = none, 2 = username/password).
    public mutating func start() -> [UInt8] {
        guard phase == .idle else { return [] }
        phase = .awaitingMethod
        return credentials == nil ? [5, 1, 0] : [5, 2, 0, 2]
    }

    public mutating func receive(_ bytes: some Collection<UInt8>) -> ProxyHandshakeStep {
        switch phase {
        case .idle, .established, .failed:
            return .failed(Self.error("handshake is not expecting bytes"))
        case .awaitingMethod, .awaitingAuthentication, .awaitingReply:
            break
        }
        buffer.append(contentsOf: bytes)
        let step = advance()
        // Each proxy message answers one of ours, so nothing may follow a message that
        // calls for our next one.
        if case .send = step, !buffer.isEmpty {
            return fail("proxy sent bytes before our request")
        }
        return step
    }

    /// Consumes one message from `buffer` if it is complete.
    private mutating func advance() -> ProxyHandshakeStep {
        switch phase {
        case .awaitingMethod:
            guard buffer.count >= 2 else { return versionCheck(expected: [5]) }
            let method = buffer[1]
            guard buffer[0] == 5 else { return versionCheck(expected: [5]) }
            buffer.removeFirst(2)
            switch method {
            case 0:
                phase = .awaitingReply
                return .send(connectRequest())
            case 2 where credentials != nil:
                phase = .awaitingAuthentication
                return .send(authenticationRequest())
            case 0xFF:
                return fail("proxy accepts none of the offered authentication methods")
            default:
                return fail("proxy chose authentication method \(method), which was not offered")
            }
        case .awaitingAuthentication:
            // RFC 1929 says version 1; some servers answer 5. Both are read the same way.
            guard buffer.count >= 2, buffer[0] == 1 || buffer[0] == 5 else {
                return versionCheck(expected: [1, 5])
            }
            guard buffer[1] == 0 else { return fail("proxy rejected the username or password") }
            buffer.removeFirst(2)
            phase = .awaitingReply
            return .send(connectRequest())
        case .awaitingReply:
            guard buffer.count >= 2, buffer[0] == 5 else { return versionCheck(expected: [5]) }
            guard buffer[1] == 0 else { return fail(Self.replyMessage(buffer[1])) }
            guard buffer.count >= 4 else { return .needMore }
            let addressLength: Int
            switch buffer[3] {
            case 1: addressLength = 4
            case 4: addressLength = 16
            case 3:
                guard buffer.count >= 5 else { return .needMore }
                addressLength = 1 + Int(buffer[4])
            default: return fail("reply has unknown address type \(buffer[3])")
            }
            let replyLength = 4 + addressLength + 2
            guard buffer.count >= replyLength else { return .needMore }
            phase = .established
            let leftover = Array(buffer[replyLength...])
            buffer = []
            return .established(leftover: leftover)
        case .idle, .established, .failed:
            return .needMore
        }
    }

    /// Fails as soon as the first byte of a message is not a version we accept.
    private mutating func versionCheck(expected: [UInt8]) -> ProxyHandshakeStep {
        guard let first = buffer.first, !expected.contains(first) else { return .needMore }
        if phase == .awaitingAuthentication {
            return fail("malformed authentication reply (version \(first))")
        }
        return fail("proxy is not SOCKS5 (version \(first))")
    }

    private func authenticationRequest() -> [UInt8] {
        guard let credentials else { return [] }
        let user = Array(credentials.username.utf8)
        let password = Array(credentials.password.utf8)
        return [1, UInt8(user.count)] + user + [UInt8(password.count)] + password
    }

    private func connectRequest() -> [UInt8] {
        var request: [UInt8] = [5, 1, 0]
        if let address = SocketAddress(ipAddress: target.host, port: target.port) {
            request.append(address.family == .ipv4 ? 1 : 4)
            request += address.addressBytes
        } else {
            let name = Array(target.host.utf8)
            request += [3, UInt8(name.count)] + name
        }
        request += [UInt8(target.port >> 8), UInt8(target.port & 0xFF)]
        return request
    }

    private mutating func fail(_ message: String) -> ProxyHandshakeStep {
        phase = .failed
        buffer = []
        return .failed(Self.error(message))
    }

    private static func error(_ message: String) -> NetError {
        NetError(.proxy, call: "socks5", message: message)
    }

    /// RFC 1928 §6 reply codes.
    static func replyMessage(_ code: UInt8) -> String {
        let reason =
            switch code {
            case 1: "general SOCKS server failure"
            case 2: "connection not allowed by ruleset"
            case 3: "network unreachable"
            case 4: "host unreachable"
            case 5: "connection refused"
            case 6: "TTL expired"
            case 7: "command not supported"
            case 8: "address type not supported"
            default: "unassigned reply code"
            }
        return "proxy could not connect: \(reason) (REP \(code))"
    }
}
