import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore
import WebProxyNet

/// `webproxyd check` for one relay, stage by stage. Resolve, TCP, TLS, the bridge page and
/// session creation run on a private event loop, so each stage is timed and reported on its
/// own: resolve and TCP through the daemon's own `Dialer` (which reports when it has
/// resolved), then one TLS handshake and one-shot HTTP exchanges (the test session is
/// deleted at once). The carrier and
/// stream stages then start an in-process `Daemon` for the relay on an ephemeral loopback
/// listener and speak MTProxy through it (`req_pq_multi`), so they exercise exactly what
/// `webproxyd run` does. `run()` blocks: call it from a plain thread, never from a Task.
final class RelayCheck: @unchecked Sendable {
    /// What the check may vary.
    struct Options: Sendable {
        /// The DC id put in the obfuscated2 init.
        var dc: Int16 = 2
        /// The deadline of each network stage.
        var stageTimeout: Duration = .seconds(15)
    }

    private let relay: RelayConfiguration
    private let options: Options
    private let report: @Sendable (CheckResult) -> Void
    private let loop: EventLoop
    private let resolver: Resolver
    private let stagesDone = DispatchSemaphore(value: 0)

    // Loop-thread state (and, between semaphore waits, the caller's).
    private var results: [CheckResult] = []
    private var stageStart = ContinuousClock.now
    private var context: TLSContext?
    private var contextError: TLSError?
    private var dialOperation: DialOperation?
    private var handshake: TLSConnection?
    private var client: HTTPClient?

    /// A check of `relay`; `report` receives each stage's result as soon as it is known.
    init(relay: RelayConfiguration, options: Options = Options(), report: @escaping @Sendable (CheckResult) -> Void)
        throws(NetError)
    {
        self.relay = relay
        self.options = options
        self.report = report
        loop = try EventLoop(name: "webproxyd-check")
        do {
            resolver = try Resolver(name: "check-resolver")
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
        }
    }

    /// Runs every stage until one fails; returns the results in order.
    func run() -> [CheckResult] {
        defer {
            loop.stop()
            loop.waitUntilStopped()
            resolver.shutdown()
        }
        guard let endpoint = RelayTransport.endpoint(for: relay), let dialer = RelayTransport.dialer(for: relay) else {
            record(.failed(.resolve, nil, "the relay address (or its proxy) cannot be dialled"))
            return results
        }
        do {
            context = try RelayService.makeTLSContext(for: relay)
        } catch {
            contextError = error
        }
        loop.execute { [self] in startDial(endpoint: endpoint, dialer: dialer) }
        stagesDone.wait()
        if results.last?.stage == .session, results.last?.verdict == .passed {
            runThroughDaemon()
        }
        return results
    }

    // MARK: Stages on the loop

    private var elapsed: Duration { ContinuousClock.now - stageStart }

    private func begin() { stageStart = .now }

    @discardableResult
    private func record(_ result: CheckResult) -> Bool {
        results.append(result)
        report(result)
        return result.verdict != .failed
    }

    private func finish() { stagesDone.signal() }

    /// Resolve and TCP (through the proxy, if any), timed by the same `Dialer` that
    /// `webproxyd run` dials with: its `resolved` report ends the resolve stage.
    private func startDial(endpoint: SecureEndpoint, dialer: Dialer) {
        begin()
        let target = endpoint.dialTarget
        if let proxy = relay.proxy {
            record(.passed(.resolve, nil, "skipped: the relay is reached through \(proxy), which resolves it"))
        }
        var stageDialer = dialer
        stageDialer.timeout = options.stageTimeout
        dialOperation = stageDialer.dial(target, on: loop, resolver: resolver, resolved: { [self] addresses in
            guard relay.proxy == nil else { return }
            let list = addresses.map(\.ipAddress).joined(separator: ", ")
            let via = endpoint.connectTo == nil ? "" : "connect-to "
            record(.passed(.resolve, elapsed, "\(via)\(target.host): \(list)"))
            begin()
        }) { [self] result in
            dialOperation = nil
            switch (result, relay.proxy) {
            case (.failure(let error), _?):
                record(.failed(.tcp, elapsed, "\(target) through the proxy: \(error)"))
                finish()
            case (.failure(let error), nil) where results.last?.stage == .resolve:
                record(.failed(.tcp, elapsed, "\(target): \(error)"))
                finish()
            case (.failure(let error), nil):
                record(.failed(.resolve, elapsed, "\(target.host): \(error)"))
                finish()
            case (.success(let tcp), let proxy):
                record(.passed(.tcp, elapsed, proxy.map { "connected to \(target) through \($0)" } ?? "connected to \(tcp.remoteAddress)"))
                startTLS(tcp, endpoint: endpoint, dialer: dialer)
            }
        }
    }

    private func startTLS(_ tcp: TCPConnection, endpoint: SecureEndpoint, dialer: Dialer) {
        begin()
        guard let context else {
            tcp.abort()
            record(.failed(.tls, nil, "cannot set up TLS: \(contextError?.message ?? "no client context")"))
            return finish()
        }
        do {
            handshake = try TLSConnection.startClient(
                over: tcp, context: context, serverName: endpoint.origin.host,
                // What the HTTP client offers, so the report shows what the https carriers get.
                alpnProtocols: HTTPClient.Configuration(offersHTTP2: relay.http2).alpnProtocols,
                handshakeTimeout: options.stageTimeout
            ) { [self] result in
                handshake = nil
                switch result {
                case .failure(let error):
                    record(.failed(.tls, elapsed, Self.describe(error)))
                    finish()
                case .success(let tls):
                    record(.passed(.tls, elapsed, describeSecurity(tls.engine)))
                    tls.close()
                    startBridge(endpoint: endpoint, dialer: dialer, context: context)
                }
            }
        } catch {
            tcp.abort()
            record(.failed(.tls, elapsed, error.message))
            finish()
        }
    }

    /// `TLSv1.3 TLS_AES_256_GCM_SHA384, ALPN http/1.1, certificate a.example (CN …), issuer …,
    /// expires 2027-02-01 (63 days), pin …`.
    private func describeSecurity(_ engine: TLSEngine) -> String {
        var parts = ["\(engine.negotiatedProtocolVersion ?? "TLS") \(engine.negotiatedCipherSuite ?? "")"]
        parts.append("ALPN \(engine.negotiatedALPN ?? "none")")
        guard let certificate = engine.peerCertificate else { return parts.joined(separator: ", ") }
        var names = "certificate \(certificate.names.joined(separator: " "))"
        if let commonName = certificate.subjectCommonName { names += " (CN \(commonName))" }
        parts.append(names)
        parts.append("issuer \(certificate.issuerCommonName ?? "unnamed")")
        let days = (certificate.notAfter - Int64(time(nil))) / 86_400
        parts.append("expires \(certificate.notAfterDescription.prefix(10)) (\(days) day\(days == 1 ? "" : "s"))")
        parts.append(
            relay.pins.isEmpty
                ? "no pin configured (pin-sha256 of this key: \(certificate.spkiSHA256Base64))"
                : "pin matched")
        return parts.joined(separator: ", ")
    }

    /// A transport failure in plain words: TLS errors by their message, others whole.
    static func describe(_ error: TransportError) -> String {
        switch error {
        case .tls(let tls): tls.message
        default: error.description
        }
    }

    private func startBridge(endpoint: SecureEndpoint, dialer: Dialer, context: TLSContext) {
        begin()
        let client = HTTPClient(
            endpoint: endpoint, dialer: SecureDialer(dialer: dialer, context: context), resolver: resolver, loop: loop,
            configuration: HTTPClient.Configuration(offersHTTP2: relay.http2))
        self.client = client
        let capability = Capability.derive(secret: relay.secret, host: relay.host, basePath: relay.basePath)
        let api = RelayAPI(host: relay.host.name, prefix: capability.apiPathPrefix, browser: relay.browser)
        let request = api.bridgePage(basePath: relay.basePath?.pathPrefix ?? "", capability: capability.urlSafeValue)
        exchange(request, stage: .bridge) { [self] response in
            switch BridgePage.judge(response) {
            case .accepted(let page):
                let detail = "HTTP 200, carrierMode \(page.carrierMode), batchLimit \(page.batchLimit)"
                if relay.carrier != .follow, relay.carrier.rawValue != page.carrierMode.rawValue {
                    record(.failed(.bridge, elapsed, detail + "; the configuration requires carrier \(relay.carrier)"))
                    return endExchanges()
                }
                record(.passed(.bridge, elapsed, detail))
                startSession(page: page, api: api)
            case .retryLater:
                record(.failed(.bridge, elapsed, "HTTP 503: the relay is busy; try again in a moment"))
                endExchanges()
            case .fatal(let error):
                record(.failed(.bridge, elapsed, "HTTP \(response.status): \(error)"))
                endExchanges()
            }
        }
    }

    private func startSession(page: BridgePage, api: RelayAPI) {
        begin()
        let creation = SessionCreation(page: page, api: api)
        exchange(creation.request, stage: .session) { [self] response in
            switch creation.judge(response) {
            case .accepted(let session):
                record(.passed(.session, elapsed, "HTTP 200, carrier \(session.carrierMode) (token not shown)"))
                // The check's own session is not needed further: delete it, best effort.
                client?.execute(
                    RelayTransport.httpRequest(api.deleteSession(session: session.token), timeout: .seconds(5))
                ) { [self] _ in endExchanges() }
            case .retryLater:
                record(.failed(.session, elapsed, "HTTP 503: the relay is at capacity; try again in a moment"))
                endExchanges()
            case .fatal(let error):
                record(.failed(.session, elapsed, "HTTP \(response.status): \(error)"))
                endExchanges()
            }
        }
    }

    /// Sends `request`; a failure without an answer fails `stage`.
    private func exchange(
        _ request: CarrierRequest, stage: CheckStage, answered: @escaping (CarrierResponse) -> Void
    ) {
        client?.execute(RelayTransport.httpRequest(request, timeout: options.stageTimeout)) { [self] result in
            switch result {
            case .success(let response):
                answered(RelayTransport.carrierResponse(response))
            case .failure(let error):
                record(.failed(stage, elapsed, "no answer: \(error)"))
                endExchanges()
            }
        }
    }

    private func endExchanges() {
        client?.shutdown()
        client = nil
        finish()
    }

    // MARK: Carrier and stream through an in-process daemon

    private func runThroughDaemon() {
        begin()
        let started = stageStart
        guard let port = reserveLoopbackPort(), let listen = try? ListenAddress(parsing: "127.0.0.1:\(port)") else {
            record(.failed(.carrier, nil, "cannot find a free loopback port for the test listener"))
            return
        }
        var local = relay
        local.listen = listen
        let watcher = DaemonSessionWatcher()
        let logger = Logger(backend: watcher, level: .debug, rateLimiter: nil).redacting([relay.secret])
        let daemon: Daemon
        do {
            daemon = try Daemon(
                configuration: DaemonConfiguration(logLevel: .debug, relays: [local]), configurationPath: nil,
                environment: [:], logger: logger, drainLimit: .seconds(2))
            try daemon.start()
        } catch {
            record(.failed(.carrier, elapsed, "cannot start a session the way webproxyd run does: \(error)"))
            return
        }
        defer {
            daemon.requestStop()
            _ = daemon.waitUntilStopped()
        }
        let mode: String
        switch watcher.wait(timeout: options.stageTimeout) {
        case .up(let carrier):
            mode = carrier
        case .failed(let message):
            record(.failed(.carrier, elapsed, "webproxyd's session did not come up: \(message)"))
            return
        case nil:
            record(.failed(.carrier, elapsed, "webproxyd's session did not come up within \(options.stageTimeout)"))
            return
        }
        let sessionUp = elapsed
        let outcome = exchangeProbe(port: port)
        let roundTrip = outcome.firstAnswer.map { $0 - started }
        let detail =
            "webproxyd's \(mode) session up in \(CheckResult.milliseconds(sessionUp)) ms"
        guard let roundTrip, watcher.lostMessage == nil else {
            let reason = watcher.lostMessage.map { "the session was lost: \($0)" } ?? outcome.failure
            record(.failed(.carrier, elapsed, "\(detail); no round trip on the stream: \(reason ?? "no answer")"))
            return
        }
        var resumption = ""
        if let counts = daemon.relaySnapshots()?.first?.tlsConnections {
            let opened = counts.http + counts.webSocket, resumed = counts.httpResumed + counts.webSocketResumed
            let http = counts.http2 > 0 ? "h2" : "HTTP/1.1"
            resumption = "; \(opened) TLS connection\(opened == 1 ? "" : "s"), \(resumed) resumed, requests over \(http)"
        }
        record(.passed(.carrier, roundTrip, "\(detail), a stream round trip completed\(resumption)"))
        stageStart = outcome.firstAnswer ?? .now
        let streamTime = outcome.finished - stageStart
        switch outcome.answer {
        case .resPQ(let fingerprints)?:
            record(.passed(
                .stream, streamTime,
                "DC \(options.dc) answered req_pq_multi with resPQ (nonce matches, \(fingerprints) key fingerprint\(fingerprints == 1 ? "" : "s"))"))
        case .echoed?:
            record(CheckResult(
                stage: .stream, verdict: .warning, elapsed: streamTime,
                detail: "backend echoed the request (not an MTProxy)"))
        case .transportError(let code)?:
            record(.failed(.stream, streamTime, "the MTProxy answered with transport error \(code) (wrong secret or DC?)"))
        case .unexpected(let reason)?:
            record(.failed(.stream, streamTime, reason))
        case nil:
            record(.failed(.stream, streamTime, outcome.failure ?? "no answer"))
        }
    }

    /// What the probe stream brought back.
    private struct ProbeOutcome {
        var answer: MTProxyProbe.Answer?
        /// When the first bytes or the close arrived: the carrier's round trip.
        var firstAnswer: ContinuousClock.Instant?
        var finished = ContinuousClock.now
        var failure: String?
    }

    /// Connects to the daemon's listener, sends the probe and waits for its answer.
    private func exchangeProbe(port: UInt16) -> ProbeOutcome {
        var generator = SystemRandomNumberGenerator()
        let initBytes = MTProxyProbe.randomInit(using: &generator)
        let nonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let padding = (0..<Int.random(in: 0..<16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let messageID = MTProxyProbe.messageID(
            unixSeconds: UInt32(truncatingIfNeeded: now.tv_sec), fraction: UInt32(truncatingIfNeeded: now.tv_nsec << 2))
        guard
            let probe = MTProxyProbe(
                secret: relay.secret, dc: options.dc, initBytes: initBytes, nonce: nonce, padding: padding,
                messageID: messageID)
        else { return ProbeOutcome(failure: "cannot set up the obfuscated2 cipher") }
        let finished = DispatchSemaphore(value: 0)
        let stream = ProbeStream(probe: probe, loop: loop, timeout: options.stageTimeout) { finished.signal() }
        loop.execute { stream.start(port: port) }
        finished.wait()
        return stream.outcome
    }

    /// Binds an ephemeral loopback port and releases it for the daemon's listener.
    private func reserveLoopbackPort() -> UInt16? {
        let found = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var port: UInt16?
        loop.execute { [loop] in
            if let listener = try? TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop, accepted: { $0.abort() }) {
                port = listener.localAddress.port
                listener.close()
            }
            found.signal()
        }
        found.wait()
        return port
    }

    /// The probe's TCP connection to the daemon's listener, on the check's loop.
    private final class ProbeStream: ByteStreamDelegate, @unchecked Sendable {
        private var probe: MTProxyProbe
        private let loop: EventLoop
        private let timeout: Duration
        private let done: () -> Void
        private var attempt: ConnectAttempt?
        private var connection: TCPConnection?
        /// Cancels the answer deadline.
        private var cancelDeadline: (() -> Void)?
        private var finished = false
        private(set) var outcome = ProbeOutcome()

        init(probe: MTProxyProbe, loop: EventLoop, timeout: Duration, done: @escaping () -> Void) {
            self.probe = probe
            self.loop = loop
            self.timeout = timeout
            self.done = done
        }

        func start(port: UInt16) {
            let deadline = loop.scheduleTimer(after: timeout) { [self] in
                cancelDeadline = nil
                end(failure: "no answer within \(timeout)")
            }
            cancelDeadline = { [loop] in _ = loop.cancelTimer(deadline) }
            attempt = TCPConnection.connect(to: .loopbackIPv4(port: port), on: loop, timeout: timeout) { [self] result in
                attempt = nil
                switch result {
                case .failure(let error):
                    end(failure: "cannot connect to the test listener: \(error)")
                case .success(let tcp):
                    connection = tcp
                    tcp.delegate = self
                    do {
                        try tcp.write(probe.openingBytes)
                    } catch {
                        end(failure: "cannot send the MTProxy init: \(error)")
                    }
                }
            }
        }

        func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            if outcome.firstAnswer == nil { outcome.firstAnswer = .now }
            guard !finished, let answer = probe.receive(Array(bytes)) else { return }
            outcome.answer = answer
            end(failure: nil)
        }

        func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
            if outcome.firstAnswer == nil { outcome.firstAnswer = .now }
            end(failure: "the relay closed the stream without an answer: its MTProxy backend is unreachable or refused the connection")
        }

        func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
            end(failure: error.map { "the stream failed: \($0)" } ?? "the stream closed")
        }

        private func end(failure: String?) {
            guard !finished else { return }
            finished = true
            outcome.finished = .now
            outcome.failure = failure
            cancelDeadline?()
            attempt?.cancel()
            connection?.abort()
            done()
        }
    }
}
