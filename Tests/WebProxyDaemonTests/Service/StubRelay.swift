#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import WebProxyCore
import WebProxyNet

/// A tiny HTTPS relay for the `https` carrier, faithful to the contract as far as one echo
/// goes: a bridge page, session creation, `/up` (DATA echoed back with a WINDOW returning its
/// credit), `/down` long polls with cursors, DELETE. Test scaffolding only; the real test
/// relay replaces it.
final class StubRelay: @unchecked Sendable {
    static let host = "proxy.example.com"
    static let bootstrap = String(repeating: "B", count: 42) + "A"
    static let sessionToken = String(repeating: "C", count: 42) + "E"

    let loop: EventLoop
    let authority: TestCertificateAuthority
    private var server: HTTPServer?
    // Loop-thread state.
    private var pending: [Frame] = []
    private var cursor: UInt64 = 0
    private var parked: (responder: HTTPResponder, cursor: UInt64)?
    private(set) var deletes = 0

    init() throws {
        loop = try EventLoop(name: "stub-relay")
        authority = try TestCertificateAuthority()
        let leaf = try authority.issueLeaf(dnsNames: [Self.host])
        let context = try TLSContext(server: leaf.serverConfiguration)
        server = try onLoop { [self] () throws -> HTTPServer in
            try HTTPServer.start(on: .loopbackIPv4(port: 0), context: context, loop: loop) { [self] request, responder in
                handle(request, responder)
            }
        }
    }

    var port: UInt16 { (try? onLoop { [self] in server?.localAddress?.port ?? 0 }) ?? 0 }

    var deleteCount: Int { (try? onLoop { [self] in deletes }) ?? -1 }

    func shutdown() {
        loop.stop()
        loop.waitUntilStopped()
    }

    private func onLoop<T>(_ body: @escaping () throws -> T) throws -> T {
        nonisolated(unsafe) var result: Result<T, any Error>?
        nonisolated(unsafe) let body = body
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            result = Result { try body() }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(10)) == .success, let result else {
            throw StubError.loopStopped
        }
        return try result.get()
    }

    private enum StubError: Error { case loopStopped }

    private func handle(_ request: HTTPServerRequest, _ responder: HTTPResponder) {
        let head = request.head
        switch (head.method, head.target) {
        case ("GET", let target) where target.hasPrefix("/?bridge="):
            let page = """
                <html><script>const relayOrigin="https://\(Self.host)",bootstrap="\(Self.bootstrap)",\
                carrierMode="https";const batchLimit=2097152;</script></html>
                """
            respond(responder, 200, body: Array(page.utf8))
        case ("POST", "/api/v1/session"):
            respond(
                responder, 200,
                headers: [
                    ("X-Session-Token", Self.sessionToken), ("X-Carrier-Mode", "https"), ("X-Down-Cursor", "0"),
                ],
                body: Frame.welcome.encoded)
        case ("POST", "/api/v1/up"):
            guard let frames = try? FrameBatch.decode(request.body[...], direction: .clientToRelay) else {
                respond(responder, 404)
                return
            }
            for case .data(let stream, let payload) in frames {
                pending.append(.window(stream: stream, delta: UInt32(payload.count)))
                pending.append(.data(stream: stream, payload: payload))
            }
            respond(responder, 204, headers: [("X-Up-Ack", head.headers.first("X-Up-Seq") ?? "0")])
            answerParkedPoll()
        case ("POST", "/api/v1/down"):
            guard let text = head.headers.first("X-Down-Cursor"), let polled = UInt64(text) else {
                respond(responder, 404)
                return
            }
            parked = (responder, polled)
            answerParkedPoll()
            if parked != nil {
                // The long poll ends empty after a while, as the relay's does.
                loop.scheduleTimer(after: .seconds(2)) { [self] in
                    guard let current = parked, current.responder === responder else { return }
                    parked = nil
                    respond(responder, 204, headers: [("X-Down-Cursor", String(current.cursor))])
                }
            }
        case ("DELETE", "/api/v1/session"):
            deletes += 1
            respond(responder, 204)
        default:
            respond(responder, 404)
        }
    }

    private func answerParkedPoll() {
        guard let (responder, polled) = parked, !pending.isEmpty else { return }
        parked = nil
        cursor = polled + 1
        let batch = pending.encodedBatch()
        pending = []
        respond(responder, 200, headers: [("X-Down-Cursor", String(cursor))], body: batch)
    }

    private func respond(
        _ responder: HTTPResponder, _ status: Int, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) {
        let head = HTTPResponseHead(status: status, reason: status < 300 ? "OK" : "Not Found", headers: HTTPHeaders(headers))
        responder.respond(head, body: status == 204 ? nil : (body ?? []))
    }
}

/// A blocking loopback client with bounded waits, for talking to the daemon's listener.
struct BlockingClient {
    let fd: Int32

    init?(port: UInt16, timeoutSeconds: Int = 5) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            return nil
        }
    }

    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads until `count` bytes arrived, the peer closed, or the timeout passed.
    func receive(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            received += buffer[..<n]
        }
        return received
    }

    /// Whether the peer closed (EOF or reset) within the timeout, with no data first.
    func waitForClose() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    func close() { Glibc.close(fd) }
}

/// A loopback port nothing listens on right now (bound to port 0, then released).
func unusedLoopbackPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 ? getsockname(fd, pointer, &length) : -1
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// Writes `text` to a fresh file in /tmp and returns its path.
func temporaryFile(named name: String, _ text: String) -> String {
    let path = "/tmp/webproxyd-test-\(getpid())-\(name)"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return path
}
