/// The client side of an HTTP/1.1 CONNECT tunnel (RFC 9110 §9.3.6) as a pure state machine:
/// sends `CONNECT host:port`, reads a bounded response head, and succeeds on any 2xx.
public struct HTTPConnectHandshake: ProxyHandshake {
    /// The longest response head read before giving up.
    public static let maxResponseHeadLength = 16 * 1024

    private enum Phase {
        case idle, awaitingResponse, established, failed
    }

    private let target: DialTarget
    private let credentials: ProxyCredentials?
    private var phase = Phase.idle
    private var buffer: [UInt8] = []

    /// A handshake that asks the proxy to tunnel to `target`, with Basic proxy authorization
    /// if `credentials` are given. Throws if the username contains `:` (RFC 7617).
    public init(target: DialTarget, credentials: ProxyCredentials? = nil) throws(NetError) {
        if let credentials, credentials.username.contains(":") {
            throw NetError(.proxy, call: "http-connect", message: "a Basic username cannot contain ':'")
        }
        if let credentials,
            (credentials.username + credentials.password).utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
        {
            throw NetError(.proxy, call: "http-connect", message: "credentials contain control characters")
        }
        self.target = target
        self.credentials = credentials
    }

    /// The CONNECT request head.
    public mutating func start() -> [UInt8] {
        guard phase == .idle else { return [] }
        phase = .awaitingResponse
        let authority = target.description
        var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let credentials {
            let token = Base64.encode(Array("\(credentials.username):\(credentials.password)".utf8))
            head += "Proxy-Authorization: Basic \(token)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8)
    }

    public mutating func receive(_ bytes: some Collection<UInt8>) -> ProxyHandshakeStep {
        guard phase == .awaitingResponse else {
            return .failed(Self.error("handshake is not expecting bytes"))
        }
        let searchFrom = max(0, buffer.count - 3)
        buffer.append(contentsOf: bytes)
        guard let headEnd = Self.endOfHead(in: buffer, from: searchFrom) else {
            if buffer.count > Self.maxResponseHeadLength {
                return fail("response head longer than \(Self.maxResponseHeadLength) bytes")
            }
            return .needMore
        }
        guard headEnd <= Self.maxResponseHeadLength else {
            return fail("response head longer than \(Self.maxResponseHeadLength) bytes")
        }
        guard let status = Self.statusCode(in: buffer[..<headEnd]) else {
            return fail("malformed response status line")
        }
        switch status {
        case 200...299:
            phase = .established
            let leftover = Array(buffer[headEnd...])
            buffer = []
            return .established(leftover: leftover)
        case 407:
            return fail(
                credentials == nil
                    ? "proxy requires authentication (status 407)"
                    : "proxy rejected the credentials (status 407)")
        default:
            return fail("proxy refused CONNECT with status \(status)")
        }
    }

    /// The index just past the first CRLFCRLF at or after `start`.
    private static func endOfHead(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 3 < bytes.count {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                return index + 4
            }
            index += 1
        }
        return nil
    }

    /// Reads `HTTP/1.x SSS` from the first line of the head.
    private static func statusCode(in head: ArraySlice<UInt8>) -> Int? {
        let line = head.prefix { $0 != 13 }
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.starts(with: prefix) else { return nil }
        let start = line.startIndex
        guard let minor = line.dropFirst(prefix.count).first, (48...57).contains(minor),
            line[start + 8] == 32
        else { return nil }
        let digits = line[(start + 9)..<(start + 12)]
        guard digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        if line.count > 12 && line[start + 12] != 32 { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    private mutating func fail(_ message: String) -> ProxyHandshakeStep {
        phase = .failed
        buffer = []
        return .failed(Self.error(message))
    }

    private static func error(_ message: String) -> NetError {
        NetError(.proxy, call: "http-connect", message: message)
    }
}
