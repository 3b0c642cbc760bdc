public import WebProxyCore

/// The daemon's relay session, start to stop: derives the capability, fetches the bridge
/// page, creates the session (retrying the identical request), runs it with
/// `SessionDriver`, and after any fatal error closes the session's local connections and
/// rebuilds with `ReconnectPolicy` backoff. A session is kept up from start-up on, with or
/// without local connections.
///
/// Local connections that arrive while no session is up wait (unread) for up to
/// `ReconnectSettings.localConnectionWait`, then are closed; beyond `maxStreams` a new
/// connection is closed at once. Both are counted in `refusedConnections`.
///
/// websocket-lanes idle expiry: the relay forgets a session that has had no lane socket
/// for 2 minutes, and the next lane upgrade would then fail. The supervisor recreates such
/// a session proactively after `laneIdleRecycle` (90 s) without a lane: a quiet rebuild,
/// with no `sessionDown` and no backoff, plus a best-effort DELETE of the old session.
///
/// A pure value: the I/O shell feeds it events with the monotonic time and performs the
/// returned actions in order. Randomness (jitter) comes from the injected generator.
public struct SessionSupervisor: Sendable {
    private enum Phase: Sendable {
        /// Waiting for `.start`.
        case idle
        /// Waiting for the `.rebuild` timer.
        case backingOff
        case fetchingPage
        case creatingSession(SessionCreation, batchLimit: Int)
        case running
        /// Waiting for the shutdown DELETE.
        case stopping(RequestID)
        case stopped
    }

    public let settings: SessionSettings
    private let secret: ProxySecret
    private let host: RelayHost
    private let basePath: BasePath?
    /// The browser whose requests the relay sees.
    private let browser: BrowserHeaders
    private var phase = Phase.idle
    private var driver: SessionDriver?
    private var api: RelayAPI?
    private var exchanges: HTTPExchanges
    private var reconnect: ReconnectPolicy<MonotonicInstant>
    /// Connections waiting for a session, in arrival order.
    private var waiting: [ConnectionID] = []
    private var ids: IdentifierSource
    private var random: RandomSource
    /// Local connections closed without reaching the relay (limit or admission wait).
    public private(set) var refusedConnections = 0
    /// Relay frames sent and received by every session so far.
    public private(set) var frameCounts = FrameCounts()
    /// What the current session holds for its streams, with peaks since the relay started.
    public private(set) var queued = QueuedBytes()

    /// A supervisor for the relay at `host` (under `basePath`) with proxy secret `secret`.
    /// Its request and socket ids start above `identifierBase`.
    public init(
        secret: ProxySecret, host: RelayHost, basePath: BasePath?, browser: BrowserHeaders = .chromium,
        settings: SessionSettings = SessionSettings(), identifierBase: UInt64 = 0,
        random: some RandomNumberGenerator & Sendable
    ) {
        ids = IdentifierSource(base: identifierBase)
        self.secret = secret
        self.host = host
        self.basePath = basePath
        self.browser = browser
        self.settings = settings
        self.random = RandomSource(base: random)
        exchanges = HTTPExchanges(policy: settings.retry, silenceBound: settings.requestSilence)
        reconnect = ReconnectPolicy(settings: settings.reconnect)
    }

    /// The carrier of the session that is up, nil while none is.
    public var sessionMode: CarrierMode? { driver?.mode }

    /// The current session's state in counts (see `SessionDriver.stateSummary`), or the phase.
    public var stateSummary: String { driver?.stateSummary ?? "no session (\(phase))" }

    /// Local connections the current session carries.
    public var carriedConnections: Int { driver?.connectionCount ?? 0 }

    /// Bytes the shell may read from `connection` now (0: do not read it).
    public func readAllowance(for connection: ConnectionID) -> Int {
        driver?.readAllowance(for: connection) ?? 0
    }

    /// Handles one event observed at `now`; returns the actions to perform, in order.
    public mutating func handle(_ event: SessionEvent, at now: MonotonicInstant) -> [SessionAction] {
        var step = SessionStep(now: now, ids: ids, random: random)
        dispatch(event, step: &step)
        frameCounts.add(step.frames)
        queued.follow(driver?.queued)
        ids = step.ids
        random = step.random
        return step.actions
    }

    private mutating func dispatch(_ event: SessionEvent, step: inout SessionStep) {
        switch event {
        case .start:
            guard case .idle = phase else { return }
            bootstrap(step: &step)
        case .shutdown:
            shutDown(step: &step)
        case .localAccepted(let connection):
            accept(connection, step: &step)
        case .localRead(let connection, _) where waiting.contains(connection):
            stopWaiting(connection, step: &step)
            refuse(connection, .readOverrun, step: &step)
        case .localEOF(let connection) where waiting.contains(connection),
            .localError(let connection) where waiting.contains(connection):
            stopWaiting(connection, step: &step)
        case .httpResponse(let id, let response, let wallClock) where exchanges.isInFlight(id):
            guard let exchange = exchanges.take(id) else { return }
            answered(exchange, id: id, response, wallClockSeconds: wallClock, step: &step)
        case .httpFailed(let id) where exchanges.isInFlight(id):
            guard let exchange = exchanges.take(id) else { return }
            attemptFailed(exchange, id: id, .noResponse, wallClockSeconds: 0, step: &step)
        case .timerFired(.retry(let id)) where exchanges.isWaiting(id):
            _ = exchanges.retryTimerFired(id, step: &step)
        case .timerFired(.rebuild):
            guard case .backingOff = phase else { return }
            bootstrap(step: &step)
        case .timerFired(.admission(let connection)):
            guard waiting.contains(connection) else { return }
            waiting.removeAll { $0 == connection }
            refuse(connection, .sessionUnavailable, step: &step)
        default:
            driver?.handle(event, step: &step)
            checkDriver(step: &step)
        }
    }

    // MARK: Bootstrap

    /// Derives the capability again and fetches a fresh bridge page (never cached: the
    /// bootstrap in it lives 2 minutes and is single-use).
    private mutating func bootstrap(step: inout SessionStep) {
        phase = .fetchingPage
        step.emit(.log(.bootstrapping(consecutiveFailures: reconnect.consecutiveFailures)))
        let capability = Capability.derive(secret: secret, host: host, basePath: basePath)
        let api = RelayAPI(host: host.name, prefix: capability.apiPathPrefix, browser: browser)
        self.api = api
        let request = api.bridgePage(basePath: basePath?.pathPrefix ?? "", capability: capability.urlSafeValue)
        exchanges.send(.bridgePage, request, deadline: settings.requestDeadline, step: &step)
    }

    private mutating func answered(
        _ exchange: HTTPExchanges.Exchange, id: RequestID, _ response: CarrierResponse, wallClockSeconds: Int64,
        step: inout SessionStep
    ) {
        switch exchange.operation {
        case .bridgePage:
            guard case .fetchingPage = phase, let api else { return }
            switch BridgePage.judge(response) {
            case .accepted(let page):
                step.emit(.log(.bridgePageParsed(page.carrierMode, batchLimit: page.batchLimit)))
                // A pinned carrier is never traded for the relay's choice: no session at all.
                if let required = settings.requiredCarrier, page.carrierMode != required {
                    bootstrapFailed(
                        SessionFailure(
                            .carrierModeMismatch,
                            "the relay selects carrier \(page.carrierMode) but this relay is pinned to \(required)"),
                        step: &step)
                    return
                }
                let creation = SessionCreation(page: page, api: api)
                phase = .creatingSession(creation, batchLimit: page.batchLimit)
                exchanges.send(.createSession, creation.request, deadline: settings.requestDeadline, step: &step)
                step.frames.sent += 1  // HELLO
            case .retryLater(let after):
                attemptFailed(exchange, id: id, .serviceUnavailable(after), wallClockSeconds: wallClockSeconds, step: &step)
            case .fatal(let error):
                bootstrapFailed(SessionFailure(error), step: &step)
            }
        case .createSession:
            guard case .creatingSession(let creation, let batchLimit) = phase else { return }
            switch creation.judge(response) {
            case .accepted(let session):
                step.frames.received += 1  // WELCOME
                establish(session, batchLimit: batchLimit, step: &step)
            case .retryLater(let after):
                attemptFailed(exchange, id: id, .serviceUnavailable(after), wallClockSeconds: wallClockSeconds, step: &step)
            case .fatal(let error):
                bootstrapFailed(SessionFailure(error), step: &step)
            }
        case .deleteSession:
            deleteFinished(id, status: response.status, step: &step)
        case .up, .down:
            return
        }
    }

    private mutating func attemptFailed(
        _ exchange: HTTPExchanges.Exchange, id: RequestID, _ failure: RequestFailure, wallClockSeconds: Int64,
        step: inout SessionStep
    ) {
        // A DELETE is best effort: it is never retried.
        guard exchange.operation != .deleteSession else {
            deleteFinished(id, status: nil, step: &step)
            return
        }
        if let error = exchanges.failed(exchange, id: id, failure, wallClockSeconds: wallClockSeconds, step: &step) {
            bootstrapFailed(SessionFailure(error), step: &step)
        }
    }

    private mutating func establish(_ session: EstablishedSession, batchLimit: Int, step: inout SessionStep) {
        guard let api else { return }
        reconnect.sessionEstablished(at: step.now)
        phase = .running
        var driver = SessionDriver(session: session, api: api, batchLimit: batchLimit, settings: settings)
        step.emit(.sessionUp(session.carrierMode))
        driver.start(step: &step)
        let admitted = waiting
        waiting = []
        for connection in admitted {
            step.emit(.cancelTimer(.admission(connection)))
            driver.admit(connection, reading: false, step: &step)
        }
        self.driver = driver
        checkDriver(step: &step)
    }

    private mutating func bootstrapFailed(_ failure: SessionFailure, step: inout SessionStep) {
        exchanges.cancelAll(step: &step)
        step.emit(.sessionDown(failure))
        scheduleRebuild(step: &step)
    }

    private mutating func scheduleRebuild(step: inout SessionStep) {
        phase = .backingOff
        let delay = reconnect.sessionFailed(at: step.now, using: &step.random)
        step.emit(.log(.rebuildScheduled(after: delay)))
        step.emit(.schedule(.rebuild, at: step.now.advanced(by: delay)))
    }

    /// Acts on the end of the running session.
    private mutating func checkDriver(step: inout SessionStep) {
        guard let outcome = driver?.outcome else { return }
        switch outcome {
        case .running:
            return
        case .failed(let failure):
            driver = nil
            step.emit(.sessionDown(failure))
            scheduleRebuild(step: &step)
        case .idleExpired:
            if let old = driver, let api {
                exchanges.send(
                    .deleteSession, api.deleteSession(session: old.session.token), deadline: settings.requestDeadline,
                    step: &step)
            }
            driver = nil
            step.emit(.log(.idleSessionRecycled))
            bootstrap(step: &step)
        }
    }

    // MARK: Local connections

    private mutating func accept(_ connection: ConnectionID, step: inout SessionStep) {
        switch phase {
        case .running:
            guard var driver, driver.connectionCount < settings.maxStreams else {
                refuse(connection, .streamLimit, step: &step)
                return
            }
            self.driver = nil  // edit the driver in place, not a copy
            driver.admit(connection, reading: true, step: &step)
            self.driver = driver
            checkDriver(step: &step)
        case .stopping, .stopped:
            refuse(connection, .shutdown, step: &step)
        case .idle, .backingOff, .fetchingPage, .creatingSession:
            guard waiting.count < settings.maxStreams else {
                refuse(connection, .streamLimit, step: &step)
                return
            }
            waiting.append(connection)
            step.emit(.pauseLocalRead(connection))
            step.emit(.schedule(.admission(connection), at: reconnect.localConnectionDeadline(arrivedAt: step.now)))
        }
    }

    private mutating func stopWaiting(_ connection: ConnectionID, step: inout SessionStep) {
        waiting.removeAll { $0 == connection }
        step.emit(.cancelTimer(.admission(connection)))
    }

    private mutating func refuse(_ connection: ConnectionID, _ reason: LocalCloseReason, step: inout SessionStep) {
        refusedConnections += 1
        step.emit(.closeLocal(connection, reason))
        step.emit(.log(.localConnectionRefused(reason, total: refusedConnections)))
    }

    // MARK: Shutdown

    private mutating func shutDown(step: inout SessionStep) {
        switch phase {
        case .stopping, .stopped: return
        default: break
        }
        for connection in waiting {
            step.emit(.cancelTimer(.admission(connection)))
            step.emit(.closeLocal(connection, .shutdown))
        }
        waiting = []
        if case .backingOff = phase { step.emit(.cancelTimer(.rebuild)) }
        exchanges.cancelAll(step: &step)
        if var driver, let api {
            self.driver = nil
            driver.shutDown(step: &step)
            let id = exchanges.send(
                .deleteSession, api.deleteSession(session: driver.session.token), deadline: settings.shutdownWait,
                step: &step)
            phase = .stopping(id)
        } else {
            driver = nil
            phase = .stopped
            step.emit(.stopped)
        }
    }

    private mutating func deleteFinished(_ id: RequestID, status: Int?, step: inout SessionStep) {
        guard case .stopping(let deleting) = phase, deleting == id else { return }
        phase = .stopped
        step.emit(.log(.sessionDeleted(status: status)))
        step.emit(.stopped)
    }
}
