import Testing
import WebProxyTestSupport

@testable import WebProxyNet

typealias ClientResult = Result<HTTPClientResponse, HTTPClientError>

@Suite("HTTPClient and HTTPServer over loopback TLS")
struct HTTPClientTests {
    @Test func keepAliveCarriesTwoRequestsOnOneConnectionWithHeadersAsGiven() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (requests, results, opened): ([HTTPServerRequest], [ClientResult], Int) = try await onLoop(loop) {
                done in
                var seen: [HTTPServerRequest] = []
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    seen.append(request)
                    let (head, body) = ok("reply \(seen.count)", headers: [("X-Count", "\(seen.count)")])
                    responder.respond(head, body: body)
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                let request = HTTPClientRequest(
                    method: "POST", target: "/api/poll?lane=1", headers: [("X-Zeta", "z"), ("x-alpha", "a")],
                    body: [1, 2, 3])
                client.execute(request) { first in
                    client.execute(request) { second in
                        done((seen, [first, second], client.connectionsOpened))
                    }
                }
            }
            #expect(opened == 1)
            #expect(requests.map(\.connectionNumber) == [1, 1])
            #expect(requests.map(\.requestNumberOnConnection) == [1, 2])
            let head = try #require(requests.first).head
            #expect(head.method == "POST")
            #expect(head.target == "/api/poll?lane=1")
            #expect(
                head.headers.fields.map { "\($0.name): \($0.value)" } == [
                    "Host: proxy.example.com", "X-Zeta: z", "x-alpha: a", "Content-Length: 3",
                ])
            #expect(requests.map(\.body) == [[1, 2, 3], [1, 2, 3]])
            #expect(requests.first?.serverName == TLSFixture.relayName)
            let responses = try results.map { try $0.get() }
            #expect(responses.map(\.status) == [200, 200])
            #expect(responses.map { String(decoding: $0.body, as: UTF8.self) } == ["reply 1", "reply 2"])
            #expect(responses.map { $0.headers.first("X-Count") } == ["1", "2"])
        }
    }

    @Test func aWarmHTTP1PoolOpensItsSecondConnectionWithTheFirst() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (openedBefore, connection, openedAfter): (Int, Int, Int) = try await onLoop(loop) { done in
                var parked: [HTTPResponder] = []
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    if request.head.target == "/park" { return parked.append(responder) }
                    let number = Array(String(request.connectionNumber).utf8)
                    responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: number)
                }
                var configuration = HTTPClient.Configuration()
                configuration.http1WarmConnections = 2
                let client = makeClient(
                    for: server, loop: loop, resolver: resolver, context: tls.client, configuration: configuration)
                client.execute(HTTPClientRequest(method: "GET", target: "/park")) { _ in }
                // Only one request was made: the second connection comes from the warm-up.
                when(loop, { client.openConnectionCount == 2 }) {
                    let openedBefore = client.connectionsOpened
                    client.execute(HTTPClientRequest(method: "GET", target: "/now")) { result in
                        let connection = (try? result.get()).flatMap { Int(String(decoding: $0.body, as: UTF8.self)) } ?? 0
                        done((openedBefore, connection, client.connectionsOpened))
                    }
                }
            }
            #expect(openedBefore == 2)
            // The second request took the warm connection instead of dialling.
            #expect(connection == 2)
            #expect(openedAfter == 2)
        }
    }

    @Test func connectionCloseFromEitherSideIsHonoured() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let connections: [Int] = try await onLoop(loop) { done in
                var numbers: [Int] = []
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    numbers.append(request.connectionNumber)
                    let headers: HTTPHeaders = request.head.target == "/server-closes" ? [("Connection", "close")] : []
                    responder.respond(HTTPResponseHead(status: 200, reason: "OK", headers: headers), body: [])
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                let clientCloses = HTTPClientRequest(target: "/client-closes", headers: [("Connection", "close")])
                client.execute(clientCloses) { _ in
                    client.execute(HTTPClientRequest(target: "/server-closes")) { _ in
                        client.execute(HTTPClientRequest(target: "/plain")) { _ in
                            client.execute(HTTPClientRequest(target: "/plain")) { _ in done(numbers) }
                        }
                    }
                }
            }
            #expect(connections == [1, 2, 3, 3])
        }
    }

    @Test func chunkedAndContentLengthBodiesAndTheBodyCap() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let results: [ClientResult] = try await onLoop(loop) { done in
                // Over the 4 MiB write queue limit in both directions.
                let big = payload(5 << 20, seed: 9)
                let server = try startTestServer(
                    on: loop, context: tls.server,
                    configuration: HTTPServer.Configuration(parserLimits: HTTPParserLimits(maxBodyBytes: 8 << 20))
                ) { request, responder in
                    switch request.head.target {
                    case "/chunked":
                        responder.respond(
                            rawBytes: Array(
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
                                    .utf8), keepAlive: true)
                    case "/echo-reversed":
                        responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: request.body.reversed())
                    default:
                        responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: payload(10_000))
                    }
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                var results: [ClientResult] = []
                client.execute(HTTPClientRequest(target: "/chunked")) { result in
                    results.append(result)
                    client.execute(
                        HTTPClientRequest(
                            method: "POST", target: "/echo-reversed", body: big, maxResponseBodyBytes: 6 << 20)
                    ) { result in
                        results.append(
                            result.map { response in
                                HTTPClientResponse(
                                    head: response.head, body: response.body == big.reversed() ? [1] : [0])
                            })
                        client.execute(HTTPClientRequest(target: "/ten-thousand", maxResponseBodyBytes: 9_999)) {
                            result in
                            results.append(result)
                            done(results)
                        }
                    }
                }
            }
            #expect(try results[0].get().body == Array("hello world".utf8))
            #expect(try results[1].get().body == [1])
            let capped = try #require(results[2].failure)
            #expect(capped.kind == .badResponse)
            #expect(capped.http == .bodyTooLarge)
            #expect(!capped.isNoResponse)
        }
    }

    @Test func parkedLongPollsFillThePoolAndQueueTheRest() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (results, opened, connections): ([ClientResult], Int, Set<Int>) = try await onLoop(loop) { done in
                var parked: [HTTPResponder] = []
                var connections: Set<Int> = []
                var results: [ClientResult] = []
                var client: HTTPClient?
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    connections.insert(request.connectionNumber)
                    if request.head.target == "/quick" {
                        responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: [2])
                        return
                    }
                    parked.append(responder)
                    // Answer only once every pooled connection holds a parked poll.
                    guard parked.count == 8 else { return }
                    #expect(client?.queuedRequestCount == 2)
                    for responder in parked {
                        responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: [1])
                    }
                }
                let pool = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                client = pool
                for index in 0..<10 {
                    pool.execute(HTTPClientRequest(target: index < 8 ? "/poll" : "/quick")) { result in
                        results.append(result)
                        if results.count == 10 { done((results, pool.connectionsOpened, connections)) }
                    }
                }
            }
            #expect(opened == 8)
            #expect(connections.count == 8)
            #expect(
                try results.map { try $0.get().body }.sorted { $0[0] < $1[0] } == Array(repeating: [1], count: 8) + [
                    [2], [2],
                ])
        }
    }

    @Test func aRequestPastItsDeadlineFailsAndItsConnectionIsClosed() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (result, serverSawClose, next): (ClientResult, Bool, Int) = try await onLoop(loop) { done in
                var closed = false
                var result: ClientResult?
                var numbers: [Int] = []
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    numbers.append(request.connectionNumber)
                    if request.head.target == "/park" {
                        responder.onConnectionClosed = { closed = true }
                    } else {
                        responder.respond(HTTPResponseHead(status: 204, reason: "No Content"))
                    }
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                client.execute(HTTPClientRequest(target: "/park", timeout: .milliseconds(300))) { first in
                    result = first
                    client.execute(HTTPClientRequest(target: "/after")) { _ in
                        done((result!, closed, numbers.last ?? 0))
                    }
                }
            }
            let error = try #require(result.failure)
            #expect(error.kind == .timedOut)
            #expect(error.message.contains("no response arrived"))
            #expect(serverSawClose)
            #expect(next == 2)
        }
    }

    /// A server that takes the request and never answers, on a path that moves nothing: the
    /// silence bound fails it long before its deadline, and the idle connections go with it.
    @Test func aRequestWhoseConnectionMovesNothingFailsAtItsSilenceBound() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (result, elapsed, next): (ClientResult, Duration, Int) = try await onLoop(loop) { done in
                var numbers: [Int] = []
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    numbers.append(request.connectionNumber)
                    if request.head.target != "/park" {
                        responder.respond(HTTPResponseHead(status: 204, reason: "No Content"))
                    }
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                let started = loop.now
                let parked = HTTPClientRequest(
                    method: "POST", target: "/park", body: [UInt8](repeating: 7, count: 100_000),
                    timeout: .seconds(60), silenceTimeout: .milliseconds(400))
                client.execute(parked) { first in
                    let elapsed = loop.now - started
                    client.execute(HTTPClientRequest(target: "/after")) { _ in
                        done((first, elapsed, numbers.last ?? 0))
                    }
                }
            }
            let error = try #require(result.failure)
            #expect(error.kind == .timedOut)
            #expect(error.message.contains("moved nothing for"))
            // Not a timing test: only that the silence bound, not the 60 s deadline, ended it.
            #expect(elapsed < .seconds(30))
            #expect(next == 2)
        }
    }

    /// A loopback port whose listener takes connections and never answers, as a path gone
    /// silent does, until `stopListening()`; and a client of the port whose dials get a
    /// second one beside them after 300 ms, and whose handshakes get 60 s.
    final class SilentPort {
        let port: UInt16
        let client: HTTPClient
        private var listener: TCPListener?
        private let held = Held()

        final class Held { var connections: [TCPConnection] = [] }

        init(loop: EventLoop, resolver: Resolver, tls: ClientTLS) throws {
            let held = held
            let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
                connection.delegate = RecordingDelegate()
                held.connections.append(connection)
            }
            self.listener = listener
            port = listener.localAddress.port
            var configuration = HTTPClient.Configuration(requestTimeout: .seconds(20))
            configuration.dialPatience = .milliseconds(300)
            client = HTTPClient(
                endpoint: SecureEndpoint(origin: testOrigin, connectTo: DialTarget(host: "127.0.0.1", port: port)!),
                dialer: SecureDialer(context: tls.client, handshakeTimeout: .seconds(60)),
                resolver: resolver, loop: loop, configuration: configuration)
        }

        /// Closes the listener; the silent connections it took stay open until `release()`.
        func stopListening() {
            listener?.close()
            listener = nil
        }

        func release() { held.connections.removeAll() }
    }

    /// The first dial reaches a port that takes the connection and never answers, as a dial
    /// made during a silent outage does; then the server is back on the same port. The
    /// waiting request dials again after `dialPatience` and is served, instead of waiting
    /// out the silent handshake (60 s) and failing at its 20 s deadline.
    @Test func aRequestWaitingOnASilentDialDialsAgainBesideIt() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (result, elapsed): (ClientResult, Duration) = try await onLoop(loop) { done in
                let silent = try SilentPort(loop: loop, resolver: resolver, tls: tls)
                var server: HTTPServer?
                let started = loop.now
                silent.client.execute(HTTPClientRequest(target: "/first")) { result in
                    silent.release()
                    server?.close()
                    done((result, loop.now - started))
                }
                loop.scheduleTimer(after: .milliseconds(100)) {
                    silent.stopListening()
                    do {
                        server = try HTTPServer.start(
                            on: .loopbackIPv4(port: silent.port), context: tls.server, loop: loop
                        ) { _, responder in
                            responder.respond(HTTPResponseHead(status: 204, reason: "No Content"))
                        }
                    } catch {
                        Issue.record("cannot listen again on port \(silent.port): \(error)")
                    }
                }
            }
            #expect((try? result.get())?.head.status == 204, "\(result)")
            // Not a timing test: only that the second dial, not the deadline, ended it.
            #expect(elapsed < .seconds(15))
        }
    }

    /// The first dial goes silent, then the port refuses. The dial beside it is refused and
    /// fails the request at once: a dial past its patience does not keep the request
    /// waiting, and so does not make the client redial a refusing port in a loop.
    @Test func aRefusedDialBesideASilentOneFailsTheRequest() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (result, opened): (ClientResult, Int) = try await onLoop(loop) { done in
                let silent = try SilentPort(loop: loop, resolver: resolver, tls: tls)
                silent.client.execute(HTTPClientRequest(target: "/first")) { result in
                    silent.release()
                    done((result, silent.client.connectionsOpened))
                }
                loop.scheduleTimer(after: .milliseconds(100)) { silent.stopListening() }
            }
            #expect(result.failure?.kind == .connectFailed, "\(result)")
            #expect(opened == 0)
        }
    }

    @Test func aCancelledRequestNeverCompletesAndItsConnectionIsNotReused() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (cancelledRan, serverSawClose, next): (Bool, Bool, Int) = try await onLoop(loop) { done in
                var cancelledRan = false
                var numbers: [Int] = []
                var client: HTTPClient?
                var task: HTTPClientTask?
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    numbers.append(request.connectionNumber)
                    guard request.head.target == "/park" else {
                        responder.respond(HTTPResponseHead(status: 204, reason: "No Content"))
                        return
                    }
                    responder.onConnectionClosed = {
                        client?.execute(HTTPClientRequest(target: "/after")) { _ in
                            done((cancelledRan, true, numbers.last ?? 0))
                        }
                    }
                    task?.cancel()
                }
                client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                task = client?.execute(HTTPClientRequest(target: "/park")) { _ in cancelledRan = true }
            }
            #expect(!cancelledRan)
            #expect(serverSawClose)
            #expect(next == 2)
        }
    }

    @Test func aResetBeforeAnyResponseByteIsNoResponseAfterOneIsABadResponse() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let results: [ClientResult] = try await onLoop(loop) { done in
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    switch request.head.target {
                    case "/reset":
                        responder.abortConnection()
                    case "/drop":
                        responder.dropConnection()
                    default:
                        // Part of the body, then the server closes.
                        responder.respond(
                            rawBytes: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial".utf8),
                            keepAlive: false)
                    }
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                var results: [ClientResult] = []
                client.execute(HTTPClientRequest(target: "/reset")) { result in
                    results.append(result)
                    client.execute(HTTPClientRequest(target: "/drop")) { result in
                        results.append(result)
                        client.execute(HTTPClientRequest(target: "/partial")) { result in
                            results.append(result)
                            done(results)
                        }
                    }
                }
            }
            let reset = try #require(results[0].failure)
            #expect(reset.kind == .noResponse)
            #expect(reset.isNoResponse)
            let dropped = try #require(results[1].failure)
            #expect(dropped.kind == .noResponse)
            let partial = try #require(results[2].failure)
            #expect(partial.kind == .badResponse)
            #expect(!partial.isNoResponse)
        }
    }

    @Test func untrustedAndMisnamedCertificatesReportTheTLSErrorText() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let errors: [HTTPClientError?] = try await onLoop(loop) { done in
                let server = try startTestServer(on: loop, context: tls.server) { _, responder in
                    responder.respond(HTTPResponseHead(status: 204, reason: "No Content"))
                }
                let untrusting = makeClient(for: server, loop: loop, resolver: resolver, context: tls.untrustingClient)
                let misnamed = HTTPClient(
                    endpoint: endpoint(of: server, origin: DialTarget(host: "other.example.com", port: 443)!),
                    dialer: SecureDialer(context: tls.client), resolver: resolver, loop: loop)
                untrusting.execute(HTTPClientRequest(target: "/")) { first in
                    misnamed.execute(HTTPClientRequest(target: "/")) { second in
                        done([first.failure, second.failure])
                    }
                }
            }
            let untrusted = try #require(errors[0])
            #expect(untrusted.kind == .connectFailed)
            #expect(untrusted.isNoResponse)
            guard case .tls(let tlsError) = untrusted.transport else {
                Issue.record("expected a TLS error, got \(untrusted)")
                return
            }
            #expect(tlsError.kind == .untrustedIssuer)
            #expect(untrusted.description.contains(tlsError.message))
            let misnamed = try #require(errors[1])
            guard case .tls(let nameError) = misnamed.transport else {
                Issue.record("expected a TLS error, got \(misnamed)")
                return
            }
            #expect(nameError.kind == .certificateNameMismatch)
            #expect(nameError.message.contains("other.example.com"))
        }
    }

    @Test func aRefusedConnectionIsAConnectStageFailure() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let error: HTTPClientError? = try await onLoop(loop) { done in
                // Bind a port, then close it: connecting there is refused.
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { $0.abort() }
                let port = listener.localAddress.port
                listener.close()
                let client = HTTPClient(
                    endpoint: SecureEndpoint(origin: testOrigin, connectTo: DialTarget(host: "127.0.0.1", port: port)),
                    dialer: SecureDialer(context: tls.client), resolver: resolver, loop: loop)
                client.execute(HTTPClientRequest(target: "/")) { done($0.failure) }
            }
            let failure = try #require(error)
            #expect(failure.kind == .connectFailed)
            guard case .connect(let netError) = failure.transport else {
                Issue.record("expected a connect-stage error, got \(failure)")
                return
            }
            #expect(netError.errno == 111)  // ECONNREFUSED
        }
    }

    @Test func requestsGoThroughASocks5ProxyWithTheNameUnresolved() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (result, asked): (ClientResult, [[UInt8]]) = try await onLoop(loop) { done in
                let server = try startTestServer(on: loop, context: tls.server) { request, responder in
                    responder.respond(
                        HTTPResponseHead(status: 200, reason: "OK"), body: Array(request.head.target.utf8))
                }
                let proxy = try TestProxy(
                    loop: loop, upstream: server.localAddress!, behaviour: .socks5(credentials: nil, reply: 0))
                let client = HTTPClient(
                    endpoint: SecureEndpoint(origin: DialTarget(host: TLSFixture.relayName, port: 8443)!),
                    dialer: SecureDialer(
                        dialer: Dialer(
                            proxy: .socks5(DialTarget(host: "127.0.0.1", port: proxy.address.port)!, credentials: nil),
                            timeout: .seconds(5)),
                        context: tls.client),
                    resolver: resolver, loop: loop)
                client.execute(HTTPClientRequest(target: "/via-proxy")) { result in done((result, proxy.requests)) }
            }
            #expect(try result.get().body == Array("/via-proxy".utf8))
            let name = Array(TLSFixture.relayName.utf8)
            #expect(asked == [[5, 1, 0, 3, UInt8(name.count)] + name + [0x20, 0xFB]])
        }
    }
}
