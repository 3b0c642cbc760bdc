import Testing
import WebProxyTestSupport

@testable import WebProxyNet

/// HTTPClient against HTTPServer when ALPN selects h2: one connection for everything, and
/// each stream failing or finishing on its own.
@Suite("HTTPClient and HTTPServer over HTTP/2")
struct HTTP2ClientTests {
    @Test func everyRequestIsAStreamOfOneConnectionWithBrowserFields() async throws {
        let tls = try ClientTLS()
        let upload = payload(2 << 20, seed: 7)
        try await withLoopAndResolver { loop, resolver in
            let (requests, results, opened, http2): ([HTTPServerRequest], [ClientResult], Int, Int) =
                try await onLoop(loop) { done in
                    var seen: [HTTPServerRequest] = []
                    var parked: [HTTPResponder] = []
                    let server = try startTestServer(on: loop, context: tls.http2Server) { request, responder in
                        seen.append(request)
                        if request.head.target == "/poll" {
                            parked.append(responder)
                            guard parked.count == 8 else { return }
                            for responder in parked { responder.respond(HTTPResponseHead(status: 204, reason: "")) }
                            return
                        }
                        // A 2 MiB body each way: flow-control windows must not hold it.
                        responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: request.body)
                    }
                    let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                    var results: [ClientResult] = []
                    let upRequest = HTTPClientRequest(
                        method: "POST", target: "/up?x=1", headers: [("X-Zeta", "z"), ("Connection", "keep-alive")],
                        body: upload)
                    for index in 0..<10 {
                        let request = index < 8 ? HTTPClientRequest(method: "POST", target: "/poll", body: []) : upRequest
                        client.execute(request) { result in
                            results.append(result)
                            if results.count == 10 {
                                done((seen, results, client.connectionsOpened, client.connectionsOpenedHTTP2))
                            }
                        }
                    }
                }
            #expect(opened == 1)
            #expect(http2 == 1)
            #expect(Set(requests.map(\.connectionNumber)) == [1])
            #expect(requests.allSatisfy { $0.head.version == .http2 })
            let up = try #require(requests.first { $0.head.target == "/up?x=1" })
            // Pseudo-headers become Host; names arrive lower-case; connection fields never go.
            #expect(
                up.head.headers.fields.map { "\($0.name): \($0.value)" } == [
                    "host: proxy.example.com", "x-zeta: z", "content-length: \(upload.count)",
                ])
            #expect(up.body == upload)
            let responses = try results.map { try $0.get() }
            #expect(responses.filter { $0.status == 204 }.count == 8)
            let echoes = responses.filter { $0.status == 200 }
            #expect(echoes.count == 2)
            #expect(echoes.allSatisfy { $0.body == upload && $0.head.version == .http2 })
        }
    }

    @Test func streamsTheServerRefusedAreSentAgainUnchanged() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (bodies, results, opened, resent): ([[UInt8]], [ClientResult], Int, Int) = try await onLoop(loop) {
                done in
                var bodies: [[UInt8]] = []
                var parked: [(HTTPResponder, [UInt8])] = []
                var configuration = HTTPServer.Configuration()
                // One stream at a time: the client's first burst goes out before it hears
                // this, so the server refuses all but one (REFUSED_STREAM).
                configuration.http2Settings.maxConcurrentStreams = 1
                let server = try startTestServer(on: loop, context: tls.http2Server, configuration: configuration) {
                    request, responder in
                    bodies.append(request.body)
                    parked.append((responder, request.body))
                    // Held until all four arrived: one connection cannot carry them all.
                    guard parked.count == 4 else { return }
                    for (responder, body) in parked { responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: body) }
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                var results: [ClientResult] = []
                for index in 0..<4 {
                    let body = payload(1000 + index, seed: UInt8(index))
                    client.execute(HTTPClientRequest(method: "POST", target: "/up", body: body)) { result in
                        results.append(result)
                        if results.count == 4 { done((bodies, results, client.connectionsOpened, client.requestsResent)) }
                    }
                }
            }
            #expect(resent >= 1)
            // At its limit a connection has no room: the waiting requests open another.
            #expect(opened > 1)
            // Each request reached the server exactly once, byte for byte.
            #expect(bodies.sorted { $0.count < $1.count } == (0..<4).map { payload(1000 + $0, seed: UInt8($0)) })
            #expect(try results.map { try $0.get().body.count }.sorted() == [1000, 1001, 1002, 1003])
        }
    }

    @Test func afterGoAwayOpenStreamsFinishAndNewRequestsUseANewConnection() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (connections, results, opened): ([String: Int], [ClientResult], Int) = try await onLoop(loop) { done in
                var connections: [String: Int] = [:]
                var parked: [HTTPResponder] = []
                var results: [ClientResult] = []
                var server: HTTPServer?
                var client: HTTPClient?
                func finish(_ result: ClientResult) {
                    results.append(result)
                    if results.count == 3, let client { done((connections, results, client.connectionsOpened)) }
                }
                server = try startTestServer(on: loop, context: tls.http2Server) { request, responder in
                    connections[request.head.target] = request.connectionNumber
                    guard request.head.target != "/after" else {
                        responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: [3])
                        return
                    }
                    parked.append(responder)
                    guard parked.count == 2 else { return }
                    server?.goAwayHTTP2Connections()
                    // Once the client has had the GOAWAY, a new request must go elsewhere.
                    loop.scheduleTimer(after: .milliseconds(50)) {
                        client?.execute(HTTPClientRequest(target: "/after"), completion: finish)
                        for responder in parked { responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: [1]) }
                    }
                }
                client = makeClient(for: server!, loop: loop, resolver: resolver, context: tls.client)
                client?.execute(HTTPClientRequest(target: "/a"), completion: finish)
                client?.execute(HTTPClientRequest(target: "/b"), completion: finish)
            }
            #expect(connections == ["/a": 1, "/b": 1, "/after": 2])
            #expect(opened == 2)
            #expect(try results.map { try $0.get().status } == [200, 200, 200])
        }
    }

    @Test func aResetStreamFailsAloneAndTheConnectionCarriesOn() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (results, opened): ([String: ClientResult], Int) = try await onLoop(loop) { done in
                var results: [String: ClientResult] = [:]
                let server = try startTestServer(on: loop, context: tls.http2Server) { request, responder in
                    switch request.head.target {
                    case "/reset": responder.abortConnection()
                    case "/big": responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: payload(5000))
                    default: responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: [1])
                    }
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                for target in ["/reset", "/big", "/fine"] {
                    let request = HTTPClientRequest(target: target, maxResponseBodyBytes: 4096)
                    client.execute(request) { result in
                        results[target] = result
                        guard results.count == 3 else { return }
                        client.execute(HTTPClientRequest(target: "/again")) { result in
                            results["/again"] = result
                            done((results, client.connectionsOpened))
                        }
                    }
                }
            }
            #expect(results["/reset"]?.failure?.kind == .noResponse)
            #expect(results["/big"]?.failure?.kind == .badResponse)
            #expect(try results["/fine"]?.get().body == [1])
            #expect(try results["/again"]?.get().body == [1])
            #expect(opened == 1)
        }
    }

    @Test func aRequestBodyPastTheServersCapIsAnswered413AndOneAtTheCapIsServed() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (results, handled): ([String: ClientResult], [String]) = try await onLoop(loop) { done in
                var results: [String: ClientResult] = [:]
                var handled: [String] = []
                var configuration = HTTPServer.Configuration()
                configuration.parserLimits.maxBodyBytes = 1000
                let server = try startTestServer(on: loop, context: tls.http2Server, configuration: configuration) {
                    request, responder in
                    handled.append(request.head.target)
                    responder.respond(HTTPResponseHead(status: 200, reason: "OK"), body: request.body)
                }
                let client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                for (target, size) in [("/over", 1001), ("/at", 1000)] {
                    client.execute(HTTPClientRequest(method: "POST", target: target, body: payload(size))) { result in
                        results[target] = result
                        if results.count == 2 { done((results, handled)) }
                    }
                }
            }
            #expect(try results["/over"]?.get().status == 413)
            #expect(try results["/at"]?.get().body == payload(1000))
            #expect(handled == ["/at"])
        }
    }

    @Test func aCancelledOrTimedOutStreamIsResetAndTheConnectionKept() async throws {
        let tls = try ClientTLS()
        try await withLoopAndResolver { loop, resolver in
            let (cancelledRan, closes, timedOut, next, opened): (Bool, Int, HTTPClientError?, ClientResult?, Int) =
                try await onLoop(loop) { done in
                    var cancelledRan = false
                    var closes = 0
                    var timedOut: HTTPClientError?
                    var client: HTTPClient?
                    var task: HTTPClientTask?
                    let server = try startTestServer(on: loop, context: tls.http2Server) { request, responder in
                        guard request.head.target != "/after" else {
                            responder.respond(HTTPResponseHead(status: 204, reason: ""))
                            return
                        }
                        // The client resets the stream: the server hears of it per stream.
                        responder.onConnectionClosed = {
                            closes += 1
                            guard closes == 2, let client else { return }
                            client.execute(HTTPClientRequest(target: "/after")) { result in
                                done((cancelledRan, closes, timedOut, result, client.connectionsOpened))
                            }
                        }
                        if request.head.target == "/cancel" { task?.cancel() }
                    }
                    client = makeClient(for: server, loop: loop, resolver: resolver, context: tls.client)
                    // A parked poll keeps a stream open: the timeout pings the connection
                    // instead of closing it as idle, and the answered PING keeps it.
                    client?.execute(HTTPClientRequest(target: "/hold")) { _ in }
                    task = client?.execute(HTTPClientRequest(target: "/cancel")) { _ in cancelledRan = true }
                    client?.execute(HTTPClientRequest(target: "/slow", timeout: .milliseconds(200))) { result in
                        timedOut = result.failure
                    }
                }
            #expect(!cancelledRan)
            #expect(closes == 2)
            #expect(timedOut?.kind == .timedOut)
            #expect(try next?.get().status == 204)
            #expect(opened == 1)
        }
    }
}
