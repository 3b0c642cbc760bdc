#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore
import WebProxyNet
import WebProxyTestSupport

/// A tiny HTTPS relay for the `https` carrier, faithful to PROTOCOL.md as far as one echo
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
        server = try loop.submitAndWait { [self] () throws -> HTTPServer in
            try HTTPServer.start(on: .loopbackIPv4(port: 0), context: context, loop: loop) { [self] request, responder in
                handle(request, responder)
            }
        }
    }

    var port: UInt16 { (try? loop.submitAndWait { [self] in server?.localAddress?.port ?? 0 }) ?? 0 }

    var deleteCount: Int { (try? loop.submitAndWait { [self] in deletes }) ?? -1 }

    func shutdown() {
        loop.stop()
        loop.waitUntilStopped()
    }

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

/// Writes `text` to a fresh file in /tmp and returns its path.
func temporaryFile(named name: String, _ text: String) -> String {
    let path = "/tmp/webproxyd-test-\(getpid())-\(name)"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return path
}
