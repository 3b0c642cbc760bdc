#if canImport(Glibc)
import Glibc
#endif
import WebProxyCore
import WebProxySession
import WebProxyNet

/// One relay, running on the daemon's event loop: the loopback listener, the local
/// connections, the `SessionSupervisor`s that decide everything (one per `SessionRole`), and
/// the HTTP clients, WebSockets and timers that carry out their actions. Every method runs on
/// the loop thread.
///
/// A new local connection is admitted once its first read (the obfuscated2 init) is in, and
/// goes to one of up to three sessions (`SessionRole`): a media-cluster connection (file
/// downloads) to the media session, a DC's connection while another to that DC is open on the
/// primary session (uploads) to the transfer session, every other one to the primary session.
/// A side session is built when its first connection arrives, and that connection waits for
/// its first build (at most `sideSessionWait`); whenever a side session is not up, its
/// connections go to the primary session instead.
///
/// Events are handled one at a time: an action that causes another event (a write the kernel
/// took, a connection that failed) queues it, and the queue drains before control returns
/// to the loop. Local bytes reach the session only within `readAllowance`, measured when
/// they are handed over, so the session never sees an overrun.
final class RelayService {
    /// Where the relay is in its life; `status`, `STATUS=` and the metrics show it in the
    /// operator's terms (`RelayStatusEntry.State`).
    enum State {
        case starting, connecting, up, down, stopping, stopped
    }

    let configuration: RelayConfiguration
    private let loop: EventLoop
    private let resolver: Resolver
    private let logger: Logger
    /// Keeps the relay's secret out of the failure messages `status` shows.
    private let redactor: SecretRedactor
    private let dialer: SecureDialer
    private let endpoint: SecureEndpoint
    /// One HTTP client per role, so no two sessions' requests share a connection (a TCP flow).
    private let clients: [HTTPClient]
    /// Per role, a TLS connection dialled while a websocket carrier's session is built, for
    /// its first upgrade (`prepareConnection`).
    private let preparedConnections: [PreparedConnection]
    /// The carrier the relay's last bridge page named (either session's: one relay, one mode).
    private var lastPageMode: CarrierMode?
    /// The supervisors, by `SessionRole.rawValue`.
    private var supervisors: [SessionSupervisor]
    /// The side sessions' state, by role; a role absent was never needed.
    private var sideSessions: [SessionRole: SideSessionState] = [:]
    /// The loop time that is `MonotonicInstant.start` for the supervisor.
    private let origin: MonotonicTime

    private var listener: TCPListener?
    private var locals: [ConnectionID: LocalSocket] = [:]
    /// The session each admitted local connection belongs to.
    private var roles: [ConnectionID: SessionRole] = [:]
    /// Accepted connections whose first read has not come yet, with the timer that admits
    /// one anyway (to the primary session) if it stays silent.
    private var unadmitted: [ConnectionID: () -> Void] = [:]
    /// Connections waiting for their side session's first build, with the timer that gives
    /// up on it.
    private var awaitingSide: [ConnectionID: (role: SessionRole, cancel: () -> Void)] = [:]
    private var nextConnection: UInt64 = 1
    private var requests: [RequestID: HTTPClientTask] = [:]
    private var sockets: [SocketID: CarrierWebSocket] = [:]
    /// WebSockets upgraded over the relay's life, and how many of them resumed a TLS session
    /// (the HTTP client counts its own connections).
    private var webSocketsOpened = 0
    private var webSocketsResumed = 0
    /// Cancels each scheduled session timer.
    private var timers: [RoleTimer: () -> Void] = [:]

    private struct RoleTimer: Hashable {
        let role: SessionRole
        let timer: SessionTimer
    }

    private enum SideSessionState {
        /// Its first build is under way: its connections wait for it.
        case firstBuild
        case up
        /// Lost or never built; its supervisor rebuilds it, its connections go primary.
        case down
    }

    /// How long a silent new connection waits before it is admitted without its first bytes.
    static let firstReadWait = Duration.milliseconds(250)
    /// How long a connection waits for its side session's first build.
    static let sideSessionWait = Duration.seconds(3)

    private enum Work {
        case event(SessionEvent, SessionRole)
        /// Hand a local connection's held bytes (and then its EOF) to the session.
        case pumpLocal(ConnectionID)
    }

    private var work: [Work] = []
    private var working = false
    private var stopCompletion: (() -> Void)?
    /// The roles whose supervisors said `stopped`.
    private var stoppedRoles: Set<SessionRole> = []

    private var state = State.starting
    private(set) var carrier: CarrierMode?
    /// Bytes read from local connections and handed to the session.
    private(set) var bytesUp = 0
    /// Relay bytes written to local connections.
    private(set) var bytesDown = 0
    /// Sessions, rebuilds, failures and request durations, for `status` and the metrics.
    private(set) var counters = RelayCounters()
    /// A session build (bridge page, creation) is under way.
    private var building = false
    /// Cancels the stall watchdog's next tick.
    private var cancelProgressCheck: (() -> Void)?
    /// `counters.localCloses` at the last tick, for the summary of what was closed since.
    private var reportedCloses: [String: Int] = [:]
    /// Lines about single local connections (closed, refused, aborted) still allowed in this
    /// watchdog tick; the tick's summary counts the rest, so a burst cannot flood the journal.
    private var connectionLinesLeft = RelayService.connectionLinesPerTick
    private static let connectionLinesPerTick = 5
    /// Called after anything `status` shows may have changed.
    var onStatusChange: (() -> Void)?

    /// Builds the relay's network parts. `context` is the relay's client TLS context, built
    /// off the loop (it reads the CA file).
    init(
        configuration: RelayConfiguration, context: TLSContext, loop: EventLoop, resolver: Resolver, logger: Logger,
        settings: SessionSettings? = nil
    ) throws(RelayServiceError) {
        guard let endpoint = RelayTransport.endpoint(for: configuration) else {
            throw RelayServiceError("the relay address of '\(configuration.name)' cannot be dialled")
        }
        // A configured proxy is never bypassed: one that cannot be used stops the relay.
        guard let tcpDialer = RelayTransport.dialer(for: configuration) else {
            throw RelayServiceError("the proxy of '\(configuration.name)' cannot be dialled")
        }
        self.configuration = configuration
        self.loop = loop
        self.resolver = resolver
        self.logger = logger.with(relay: configuration.name).redacting([configuration.secret])
        redactor = SecretRedactor(secrets: [configuration.secret])
        self.endpoint = endpoint
        var settings = settings ?? SessionSettings()
        // A handshake on a path that went silent fails at the silence bound, so a dial made
        // during an outage does not hold the requests queued behind it for 10 s.
        dialer = SecureDialer(dialer: tcpDialer, context: context, handshakeSilence: settings.requestSilence)
        settings.requiredCarrier = CarrierMode(rawValue: configuration.carrier.rawValue)
        settings.maxStreams = min(settings.maxStreams, configuration.maxStreams)
        settings.pacesUplink = settings.pacesUplink || configuration.paceUploads
        // Long polls each hold a connection: https-lanes needs one per lane plus uplinks. Over
        // HTTP/1.1 a session needs two from its first carrier request on (the parked poll and
        // an /up): the second is dialled while the bootstrap runs.
        let clientConfiguration = HTTPClient.Configuration(
            maxConnections: min(HTTPClient.Configuration.connectionCeiling, 2 * settings.maxStreams + 4),
            parserLimits: HTTPParserLimits(maxBodyBytes: RelayTransport.maxResponseBodyBytes),
            offersHTTP2: configuration.http2, http1WarmConnections: 2)
        clients = SessionRole.allCases.map { [dialer] _ in
            HTTPClient(endpoint: endpoint, dialer: dialer, resolver: resolver, loop: loop, configuration: clientConfiguration)
        }
        preparedConnections = SessionRole.allCases.map { _ in PreparedConnection(loop: loop) }
        supervisors = SessionRole.allCases.map { [settings] role in
            SessionSupervisor(
                secret: configuration.secret, host: configuration.host, basePath: configuration.basePath,
                browser: configuration.browser, settings: settings, identifierBase: role.identifierBase,
                random: SystemRandomNumberGenerator())
        }
        origin = loop.now
    }

    /// The client TLS context of a relay. Reads the CA file: call it off the loop.
    static func makeTLSContext(for configuration: RelayConfiguration) throws(TLSError) -> TLSContext {
        try TLSContext(client: RelayTransport.tlsConfiguration(for: configuration))
    }

    /// The bound listener address (with the kernel's port).
    var listenAddress: SocketAddress? { listener?.localAddress }

    /// Open local connections.
    var connectionCount: Int { locals.count }

    /// Connections closed at once (limit) or after waiting for a session.
    var refusedConnections: Int { supervisors.reduce(0) { $0 + $1.refusedConnections } }

    private var primary: SessionSupervisor { supervisors[SessionRole.primary.rawValue] }

    /// The roles whose supervisors run.
    private var activeRoles: [SessionRole] { SessionRole.allCases.filter { $0 == .primary || sideSessions[$0] != nil } }

    /// The sessions' state in counts, for stall reports.
    var stateSummary: String {
        activeRoles.map { role in
            let client = clients[role.rawValue]
            return (role == .primary ? "" : "\(role) session: ") + supervisors[role.rawValue].stateSummary
                + "; queued \(client.queuedRequestCount), connections \(client.openConnectionCount) (\(client.idleConnectionCount) idle)"
        }.joined(separator: " | ") + "; http tasks \(requests.count)"
    }

    /// The relay as `status` and the metrics show it; `wallClockSeconds` is now (time(2)).
    func snapshot(wallClockSeconds: Int64) -> RelaySnapshot {
        let elapsed = loop.now - origin
        let lastError = counters.lastError.map { record in
            let ago = max(0, (elapsed - record.monotonic).components.seconds)
            return RelayStatusEntry.LastError(
                class: record.errorClass, message: record.message, secondsAgo: Int(ago),
                at: RFC3339Time.format(epochSeconds: record.wallClockSeconds))
        }
        let status = RelayStatusEntry(
            name: configuration.name, listen: listenAddress?.description ?? configuration.listen.description,
            state: statusState, carrier: carrier?.rawValue, streams: connectionCount,
            refusedConnections: refusedConnections, bytesUp: bytesUp, bytesDown: bytesDown,
            sessionsEstablished: counters.sessionsEstablished, reconnects: counters.reconnects, lastError: lastError,
            sideSessions: sideSessionEntries)
        let tlsConnections = TLSConnectionCounts(
            http: clients.reduce(0) { $0 + $1.connectionsOpened },
            httpResumed: clients.reduce(0) { $0 + $1.connectionsResumed },
            http2: clients.reduce(0) { $0 + $1.connectionsOpenedHTTP2 }, webSocket: webSocketsOpened,
            webSocketResumed: webSocketsResumed,
            open: clients.reduce(0) { $0 + $1.openConnectionCount } + sockets.values.filter { $0.endpoint != nil }.count)
        var frames = FrameCounts()
        for supervisor in supervisors { frames.add(supervisor.frameCounts) }
        return RelaySnapshot(
            status: status, counters: counters, frames: frames, queued: QueuedBytes(sessions: supervisors.map(\.queued)), tlsConnections: tlsConnections)
    }

    /// The side sessions in the operator's terms, with the connections each carries.
    private var sideSessionEntries: [RelayStatusEntry.SideSession] {
        SessionRole.allCases.compactMap { role in
            let state: RelayStatusEntry.State
            switch sideSessions[role] {
            case nil: return nil
            case .firstBuild: state = .starting
            case .up: state = .up
            case .down: state = .down
            }
            return RelayStatusEntry.SideSession(
                role: role.description, state: state, streams: roles.values.filter { $0 == role }.count)
        }
    }

    /// `state` in the operator's terms: is a session up, being built, or awaited.
    private var statusState: RelayStatusEntry.State {
        switch state {
        case .up: .up
        case .stopping, .stopped: .stopping
        case .starting, .connecting, .down:
            if counters.lastError == nil && counters.sessionsEstablished == 0 { .starting }
            else if building { .rebuilding }
            else { .down }
        }
    }

    /// Binds the listener, or takes over `activatedSocket` (a listening socket systemd
    /// passed, which must be bound to the configured `listen`), and starts building the
    /// first session. The activated descriptor stays the caller's: the listener uses a copy.
    func start(activatedSocket: Int32? = nil) throws(RelayServiceError) {
        let listen = configuration.listen
        guard let address = SocketAddress(ipAddress: listen.host, port: listen.port) else {
            throw RelayServiceError("cannot listen on \(listen): not an IP address")
        }
        let accepted: (TCPConnection) -> Void = { [weak self] tcp in self?.accepted(tcp) }
        let acceptFailed: (NetError) -> Void = { [weak self] error in
            self?.logger.warning("cannot accept a local connection", LogFields(stage: "listen", error: "\(error)"))
        }
        if let activatedSocket {
            let copy = fcntl(activatedSocket, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else {
                throw RelayServiceError("cannot use the socket systemd passed: \(NetError.syscall("fcntl", errno: errno))")
            }
            let adopted: TCPListener
            do {
                adopted = try TCPListener.adopt(fd: copy, loop: loop, accepted: accepted, acceptFailed: acceptFailed)
            } catch {
                throw RelayServiceError("cannot use the socket systemd passed: \(error)")
            }
            guard adopted.localAddress == address else {
                adopted.close()
                throw RelayServiceError(
                    "the socket systemd passed as '\(configuration.name)' is bound to \(adopted.localAddress), "
                        + "but listen = \(listen); make ListenStream= in the socket unit and listen agree")
            }
            listener = adopted
            logger.info("listening on \(listen) (socket passed by systemd)", LogFields(stage: "listen"))
        } else {
            do {
                listener = try TCPListener.listen(on: address, loop: loop, accepted: accepted, acceptFailed: acceptFailed)
            } catch {
                throw RelayServiceError("cannot listen on \(listen): \(error)")
            }
            logger.info("listening on \(listen)", LogFields(stage: "listen"))
        }
        state = .connecting
        handle(.start, .primary)
        scheduleProgressCheck()
    }

    /// Ticks the session's stall watchdog a few times per `stallBound`, for as long as the
    /// relay runs.
    private func scheduleProgressCheck() {
        let tick = loop.scheduleTimer(after: primary.settings.stallBound / 3) { [weak self] in
            guard let self, state != .stopping, state != .stopped else { return }
            for role in activeRoles { handle(.progressCheck, role) }
            reportLocalCloses()
            connectionLinesLeft = Self.connectionLinesPerTick
            scheduleProgressCheck()
        }
        cancelProgressCheck = { [loop] in loop.cancelTimer(tick) }
    }

    /// Stops: closes the listener and local connections, deletes the session (bounded by the
    /// session settings), then calls `completion` once everything is released.
    func stop(completion: @escaping () -> Void) {
        guard state != .stopped else {
            completion()
            return
        }
        stopCompletion = completion
        listener?.close()
        listener = nil
        state = .stopping
        onStatusChange?()
        for role in activeRoles { handle(.shutdown, role) }
    }

    /// Releases everything at once (the drain deadline passed).
    func forceStop() {
        guard state != .stopped else { return }
        finishStopping()
    }

    /// Writes one line about a single local connection, within this tick's allowance; the
    /// first line past it says that the rest are summed at the end of the tick.
    private func logConnectionEvent(_ write: () -> Void) {
        if connectionLinesLeft > 0 {
            write()
        } else if connectionLinesLeft == 0 {
            logger.info(
                "more local connection events; the next summary counts them",
                LogFields(stage: "listen"))
        }
        connectionLinesLeft = max(connectionLinesLeft - 1, -1)
    }

    /// Says at info level, at most once a tick, how many local connections were closed since
    /// the last tick and why, so the journal explains "Telegram keeps reconnecting" without a
    /// line per connection.
    private func reportLocalCloses() {
        let since = counters.localCloses.compactMap { reason, total -> (String, Int)? in
            let count = total - reportedCloses[reason, default: 0]
            return count > 0 ? (reason, count) : nil
        }.sorted { $0.0 < $1.0 }
        reportedCloses = counters.localCloses
        guard !since.isEmpty else { return }
        let total = since.reduce(0) { $0 + $1.1 }
        let reasons = since.map { "\($0.1) \($0.0)" }.joined(separator: ", ")
        logger.info(
            "closed \(total) local connection\(total == 1 ? "" : "s") in the last \(primary.settings.stallBound / 3): \(reasons)",
            LogFields(stage: "listen"))
    }

    // MARK: Events

    private var now: MonotonicInstant { MonotonicInstant(sinceStart: loop.now - origin) }

    private func handle(_ event: SessionEvent, _ role: SessionRole) {
        work.append(.event(event, role))
        drain()
    }

    private func drain() {
        guard !working else { return }
        working = true
        defer { working = false }
        while !work.isEmpty {
            switch work.removeFirst() {
            case .event(let event, let role):
                perform(supervisors[role.rawValue].handle(event, at: now), role)
            case .pumpLocal(let id):
                pump(id)
            }
        }
    }

    /// Hands what the connection holds to its session, within its allowance; then its EOF.
    private func pump(_ id: ConnectionID) {
        guard let local = locals[id], let role = roles[id] else { return }
        let allowance = supervisors[role.rawValue].readAllowance(for: id)
        let count = min(allowance, local.inbox.count)
        if count > 0 {
            // Hand the whole inbox over without copying; a held slice would make
            // `removeFirst` copy the array.
            let bytes: ArraySlice<UInt8>
            if count == local.inbox.count {
                bytes = local.inbox[...]
                local.inbox = []
            } else {
                bytes = local.inbox[..<count]
                local.inbox = Array(local.inbox[count...])
            }
            bytesUp += count
            perform(supervisors[role.rawValue].handle(.localRead(id, bytes), at: now), role)
        }
        guard let local = locals[id] else { return }
        if local.inbox.isEmpty, local.eofPending {
            local.eofPending = false
            perform(supervisors[role.rawValue].handle(.localEOF(id), at: now), role)
            // The session no longer carries it: finish the connection (queued writes go first).
            if let local = locals.removeValue(forKey: id) { local.tcp.close() }
            roles[id] = nil
            onStatusChange?()
            return
        }
        local.updateReading()
    }

    // MARK: Local connections

    private func accepted(_ tcp: TCPConnection) {
        let id = ConnectionID(nextConnection)
        nextConnection += 1
        let local = LocalSocket(id: id, tcp: tcp, owner: self)
        locals[id] = local
        tcp.delegate = local
        unadmitted[id] = schedule(after: Self.firstReadWait) { [weak self] in self?.admit(id, to: .primary) }
        local.updateReading()
        onStatusChange?()
    }

    /// Picks the session for a connection whose first read came (the init complete in that
    /// read). Telegram Desktop keeps one connection per DC for chat and opens more to the same
    /// DC for uploads (and for downloads where the DC has no media cluster): a DC's connection
    /// beside one open on the primary session is a transfer.
    private func classify(_ id: ConnectionID, _ local: LocalSocket) {
        let opening = ObfuscatedInit(local.inbox, secret: configuration.secret)
        let role: SessionRole =
            switch opening {
            case .some(let opening) where opening.isMediaCluster: .media
            case .some(let opening) where locals.values.contains(where: { $0.primaryDC == opening.dc }): .transfer
            default: .primary
            }
        guard role != .primary, configuration.mediaSession, primary.sessionMode.map({ $0 != .websocketLanes }) ?? true
        else {
            local.primaryDC = opening?.dc
            admit(id, to: .primary)
            return
        }
        switch sideSessions[role] {
        case .up:
            admit(id, to: role)
        case .down:
            admit(id, to: .primary)
        case nil, .firstBuild:
            unadmitted.removeValue(forKey: id)?()
            let cancel = schedule(after: Self.sideSessionWait) { [weak self] in
                // Slow to build: count it as down until it comes up, so nothing else waits.
                guard let self else { return }
                if sideSessions[role] == .firstBuild { sideSessions[role] = .down }
                admitAwaiting(role, to: .primary)
            }
            awaitingSide[id] = (role, cancel)
            if sideSessions[role] == nil {
                sideSessions[role] = .firstBuild
                logger.info("building a \(role) session for \(role.carried)", LogFields(stage: "bootstrap"))
                handle(.start, role)
            }
        }
    }

    /// Hands a connection to a session; its held bytes follow.
    private func admit(_ id: ConnectionID, to role: SessionRole) {
        unadmitted.removeValue(forKey: id)?()
        awaitingSide.removeValue(forKey: id)?.cancel()
        guard locals[id] != nil, roles[id] == nil else { return }
        roles[id] = role
        handle(.localAccepted(id), role)
        work.append(.pumpLocal(id))
        drain()
    }

    /// Admits the connections waiting for `side`'s first build to `role`.
    private func admitAwaiting(_ side: SessionRole, to role: SessionRole) {
        for (id, _) in awaitingSide.filter({ $0.value.role == side }).sorted(by: { $0.key < $1.key }) {
            admit(id, to: role)
        }
    }

    /// Runs `body` on the loop after `delay`; returns what cancels it.
    private func schedule(after delay: Duration, _ body: @escaping () -> Void) -> () -> Void {
        let timer = loop.scheduleTimer(after: delay, body)
        return { [loop] in loop.cancelTimer(timer) }
    }

    func localDataArrived(_ id: ConnectionID) {
        if unadmitted[id] != nil, let local = locals[id] {
            classify(id, local)
            return
        }
        work.append(.pumpLocal(id))
        drain()
    }

    func localDrained(_ id: ConnectionID) {
        guard let role = roles[id], let written = locals[id]?.takeWrittenCount(), written > 0 else { return }
        bytesDown += written
        handle(.localWritten(id, written), role)
    }

    func localClosed(_ id: ConnectionID, failed: Bool) {
        guard locals.removeValue(forKey: id) != nil else { return }
        unadmitted.removeValue(forKey: id)?()
        awaitingSide.removeValue(forKey: id)?.cancel()
        if let role = roles.removeValue(forKey: id) { handle(failed ? .localError(id) : .localEOF(id), role) }
        onStatusChange?()
    }

    // MARK: WebSockets

    func socketEvent(_ event: SessionEvent, _ role: SessionRole) {
        handle(event, role)
    }

    func socketEnded(_ id: SocketID, clean: Bool) {
        guard let socket = sockets.removeValue(forKey: id) else { return }
        handle(.webSocketClosed(id, clean: clean), socket.role)
    }

    // MARK: Actions

    /// Takes each action out of the list before performing it, so a message it carries
    /// is uniquely referenced and the WebSocket can frame it in place.
    private func perform(_ actions: consuming [SessionAction], _ role: SessionRole) {
        var remaining = actions
        remaining.reverse()
        while let action = remaining.popLast() { perform(action, role) }
    }

    private func perform(_ action: consuming SessionAction, _ role: SessionRole) {
        switch consume action {
        case .sendHTTP(let id, let operation, let request, let deadline, let silence):
            sendHTTP(id, operation, request, timeout: now.duration(to: deadline), silence: silence, role: role)
        case .cancelHTTP(let id):
            requests.removeValue(forKey: id)?.cancel()
        case .openWebSocket(let id, let request, let deadline):
            openWebSocket(id, request, timeout: now.duration(to: deadline), role: role)
        case .sendWebSocketMessage(let id, let message):
            guard let endpoint = sockets[id]?.endpoint else { return }
            do {
                try endpoint.send(message)
                // The driver counts every message as buffered; the endpoint only reports a
                // drain after its queue passed the high watermark, so say now what the
                // kernel took at once (else the count only grows and the socket stalls).
                work.append(.event(.webSocketDrained(id, bufferedBytes: endpoint.bufferedByteCount), role))
            } catch {
                logger.debug("a WebSocket refused a message", LogFields(stage: "carrier", error: "\(error)"))
                // A relay's Close may arrive in the same read as the messages before it, so
                // the endpoint can be closing while it delivers them: let it deliver the rest
                // and report the close. Any other refusal is a broken socket.
                if case .io(let failure) = error, failure.code == .closed { return }
                endpoint.abort()
            }
        case .sendWebSocketPing(let id):
            _ = sockets[id]?.endpoint?.sendPing()
        case .closeWebSocket(let id):
            sockets.removeValue(forKey: id)?.close()
        case .writeLocal(let id, let bytes):
            guard let local = locals[id] else { return }
            guard let written = local.write(bytes) else {
                locals[id] = nil
                roles[id] = nil
                local.tcp.abort()
                work.append(.event(.localError(id), role))
                return
            }
            if written > 0 {
                bytesDown += written
                work.append(.event(.localWritten(id, written), role))
            }
        case .pauseLocalRead(let id):
            locals[id]?.sessionAllowsReading = false
            locals[id]?.updateReading()
        case .resumeLocalRead(let id):
            locals[id]?.sessionAllowsReading = true
            work.append(.pumpLocal(id))
        case .closeLocal(let id, let reason):
            roles[id] = nil
            guard let local = locals.removeValue(forKey: id) else { return }
            counters.localCloses[reason.label, default: 0] += 1
            if reason.flushesPendingWrites { local.tcp.close() } else { local.tcp.abort() }
            // Refusals and aborted streams have lines of their own, with their detail.
            switch reason {
            case .relayClosedStream, .sessionFailed, .readOverrun:
                logConnectionEvent { logger.info("closed local \(id): \(reason)", LogFields(stage: "carrier")) }
            case .streamFault, .sessionUnavailable, .streamLimit, .shutdown:
                break
            }
            onStatusChange?()
        case .schedule(let timer, let at):
            let key = RoleTimer(role: role, timer: timer)
            timers.removeValue(forKey: key)?()
            let scheduled = loop.scheduleTimer(at: origin + at.sinceStart) { [weak self] in
                guard let self, timers.removeValue(forKey: key) != nil else { return }
                handle(.timerFired(timer), role)
            }
            timers[key] = { [loop] in loop.cancelTimer(scheduled) }
        case .cancelTimer(let timer):
            timers.removeValue(forKey: RoleTimer(role: role, timer: timer))?()
        case .sessionUp(let mode) where role != .primary:
            sideSessions[role] = .up
            logger.info("\(role) session up", LogFields(stage: "carrier", carrier: mode.rawValue))
            admitAwaiting(role, to: role)
        case .sessionUp(let mode):
            state = .up
            carrier = mode
            building = false
            counters.sessionsEstablished += 1
            logger.notice(
                "session up", LogFields(event: .sessionUp, stage: "carrier", carrier: mode.rawValue, streams: locals.count))
            onStatusChange?()
        case .sessionDown(let failure) where role != .primary:
            // Its streams are closed; its new connections use the primary session until the
            // supervisor has rebuilt this one.
            clients[role.rawValue].closeIdleConnections()
            preparedConnections[role.rawValue].discard()
            sideSessions[role] = .down
            logger.warning(
                "\(role) session down: \(redactor.redacted(failure.message))",
                LogFields(stage: "carrier", error: failure.kind.rawValue))
            admitAwaiting(role, to: .primary)
        case .sessionDown(let failure):
            sessionDown(failure)
        case .log(let event):
            prepareConnection(after: event, role)
            if role == .primary { log(event) } else { logSide(event, role) }
        case .stopped:
            stoppedRoles.insert(role)
            if stoppedRoles.isSuperset(of: activeRoles) { finishStopping() }
        }
    }

    private func sendHTTP(
        _ id: RequestID, _ operation: HTTPOperation, _ request: CarrierRequest, timeout: Duration,
        silence: Duration?, role: SessionRole
    ) {
        let started = loop.now
        var httpRequest = RelayTransport.httpRequest(request, timeout: max(timeout, .milliseconds(1)))
        httpRequest.silenceTimeout = silence
        requests[id] = clients[role.rawValue].execute(httpRequest) { [weak self] result in
            guard let self, requests.removeValue(forKey: id) != nil else { return }
            switch result {
            case .success(let response):
                logger.debug(
                    "\(request.method) answered \(response.status) in \(loop.now - started)",
                    LogFields(stage: "http"))
                // The session's DELETE (after it ended, or at stop) is neither bootstrap nor
                // carrier traffic: it is not timed.
                if operation != .deleteSession {
                    counters.recordRequest(carrier: carrier, duration: loop.now - started)
                }
                handle(.httpResponse(id, RelayTransport.carrierResponse(response), wallClockSeconds: Int64(time(nil))), role)
            case .failure(let error):
                // A connection that cannot be opened (name resolution, proxy, TLS trust) is
                // the operator's to fix: say why at warning level. The description names the
                // endpoint and the cause, never a request target, header or body.
                let line = "\(request.method) failed after \(loop.now - started): \(error)"
                if error.kind == .connectFailed {
                    logger.warning(line, LogFields(stage: "http", error: "\(error.kind)"))
                } else {
                    logger.debug(line, LogFields(stage: "http", error: "\(error.kind)"))
                }
                handle(.httpFailed(id), role)
            }
        }
    }

    private func openWebSocket(_ id: SocketID, _ request: CarrierRequest, timeout: Duration, role: SessionRole) {
        guard let configuration = RelayTransport.webSocketConfiguration(request, timeout: max(timeout, .milliseconds(1)))
        else {
            work.append(.event(.webSocketUpgradeFailed(id, response: nil), role))
            return
        }
        let socket = CarrierWebSocket(id: id, role: role, owner: self)
        sockets[id] = socket
        socket.attempt = WebSocketClient.connect(
            to: endpoint, dialer: dialer, resolver: resolver, loop: loop, configuration: configuration,
            prepared: preparedConnections[role.rawValue]
        ) { [weak self, weak socket] result in
            guard let self, let socket, sockets[id] === socket else {
                if case .success(let endpoint) = result { endpoint.abort() }
                return
            }
            socket.attempt = nil
            switch result {
            case .success(let endpoint):
                webSocketsOpened += 1
                if endpoint.isSessionResumed { webSocketsResumed += 1 }
                socket.endpoint = endpoint
                endpoint.delegate = socket
                handle(.webSocketOpened(id, response: RelayTransport.switchedProtocols(subprotocol: configuration.subprotocol)), role)
            case .failure(let error):
                sockets[id] = nil
                // A refusal's status reaches the session-lost line; any other cause is only
                // here, so the operator sees it at warning level.
                let fields = LogFields(stage: "carrier", error: "\(error)")
                if case .upgradeRejected = error {
                    logger.debug("a WebSocket upgrade failed", fields)
                } else {
                    logger.warning("a WebSocket upgrade failed", fields)
                }
                handle(.webSocketUpgradeFailed(id, response: RelayTransport.upgradeAnswer(error)), role)
            }
        }
    }

    /// A websocket carrier's first upgrade needs a TCP and TLS handshake of its own, two round
    /// trips after the session creation. Dialled when a build starts (the carrier pinned, or
    /// named by the last page) or when the page names the carrier, the connection is
    /// ready, or nearer, when the upgrade is due.
    private func prepareConnection(after event: SessionLogEvent, _ role: SessionRole) {
        let expected: CarrierMode?
        switch event {
        case .bootstrapping:
            expected = CarrierMode(rawValue: configuration.carrier.rawValue) ?? lastPageMode
        case .bridgePageParsed(let mode, _):
            lastPageMode = mode
            expected = mode
        default:
            return
        }
        guard expected == .websocket || expected == .websocketLanes else { return }
        preparedConnections[role.rawValue].prepare(to: endpoint, dialer: dialer, resolver: resolver)
    }

    private func sessionDown(_ failure: SessionFailure) {
        // Nothing pooled for a lost session is trusted: the next one dials afresh.
        clients[SessionRole.primary.rawValue].closeIdleConnections()
        preparedConnections[SessionRole.primary.rawValue].discard()
        let wasUp = state == .up
        if state != .stopping { state = .down }
        carrier = nil
        building = false
        counters.recordFailure(
            SessionFailure(failure.kind, redactor.redacted(failure.message)), monotonic: loop.now - origin,
            wallClockSeconds: Int64(time(nil)))
        let event: LogEvent =
            switch failure.kind {
            case .notARelay, .refused, .carrierModeMismatch: wasUp ? .sessionLost : .relayRejected
            case .unreachable: wasUp ? .sessionLost : .relayUnreachable
            // Anything else before a session was up is the relay refusing to give us one.
            default: wasUp ? .sessionLost : .relayRejected
            }
        logger.warning(
            failure.message, LogFields(event: event, stage: wasUp ? "carrier" : "bootstrap", error: failure.kind.rawValue))
        onStatusChange?()
    }

    private func log(_ event: SessionLogEvent) {
        switch event {
        case .bootstrapping(let failures):
            building = true
            if failures > 0 { counters.reconnects += 1 }
            logger.info(
                "building a session" + (failures > 0 ? " after \(failures) failures" : ""), LogFields(stage: "bootstrap"))
        case .bridgePageParsed(let mode, let batchLimit):
            logger.debug("bridge page: \(mode) carrier, batches up to \(batchLimit) bytes", LogFields(stage: "bootstrap"))
        case .requestRetry(let operation, let failed, let after):
            logger.info("\(operation) failed \(failed) times; retrying in \(after)", LogFields(stage: "http"))
        case .rebuildScheduled(let after):
            building = false
            logger.info("next session attempt in \(after)", LogFields(stage: "bootstrap"))
        case .localConnectionRefused(let reason, let total):
            logConnectionEvent {
                logger.notice("closed a local connection: \(reason) (\(total) so far)", LogFields(stage: "listen"))
            }
        case .streamAborted(let stream, let message):
            logConnectionEvent { logger.warning("stream \(stream.rawValue) aborted: \(message)", LogFields(stage: "carrier")) }
        case .idleSessionRecycled:
            logger.info("idle session recycled", LogFields(stage: "carrier"))
        case .sessionDeleted(let status):
            logger.info("session deleted (\(status.map(String.init) ?? "no answer"))", LogFields(stage: "shutdown"))
        case .sessionStalled(let state):
            logger.warning("session stalled, rebuilding it: \(state)", LogFields(stage: "carrier", error: "stalled"))
        }
    }

    /// A side session's own lines: what needs the operator stays at its level, the routine
    /// of building and retrying goes to debug.
    private func logSide(_ event: SessionLogEvent, _ role: SessionRole) {
        switch event {
        case .streamAborted, .sessionStalled, .localConnectionRefused:
            log(event)
        case .bootstrapping, .bridgePageParsed, .requestRetry, .rebuildScheduled, .idleSessionRecycled,
            .sessionDeleted:
            logger.debug("\(role) session: \(event)", LogFields(stage: "carrier"))
        }
    }

    private func finishStopping() {
        state = .stopped
        listener?.close()
        listener = nil
        for local in locals.values { local.tcp.abort() }
        locals = [:]
        roles = [:]
        for cancel in unadmitted.values { cancel() }
        unadmitted = [:]
        for waiting in awaitingSide.values { waiting.cancel() }
        awaitingSide = [:]
        for request in requests.values { request.cancel() }
        requests = [:]
        for socket in sockets.values { socket.close() }
        sockets = [:]
        for cancel in timers.values { cancel() }
        timers = [:]
        cancelProgressCheck?()
        cancelProgressCheck = nil
        for client in clients { client.shutdown() }
        for prepared in preparedConnections { prepared.discard() }
        onStatusChange?()
        let completion = stopCompletion
        stopCompletion = nil
        completion?()
    }
}

/// Which of a relay's sessions carries a local connection.
enum SessionRole: Int, CaseIterable, CustomStringConvertible {
    /// Chat: every connection but file transfers, and those too while their session is down.
    case primary
    /// Telegram's media-cluster connections (file downloads), on a TCP flow of their own.
    case media
    /// A DC's connections beside its chat (Telegram Desktop's uploads, and its downloads where
    /// the DC has no media cluster), on a TCP flow of their own.
    case transfer

    /// Where the role's request and socket ids start, so no two supervisors' ids meet.
    var identifierBase: UInt64 { UInt64(rawValue) << 56 }

    var description: String {
        switch self {
        case .primary: "primary"
        case .media: "media"
        case .transfer: "transfer"
        }
    }

    /// What a side session carries, for the line that says it is being built.
    var carried: String {
        switch self {
        case .primary: "chat"
        case .media: "file downloads"
        case .transfer: "uploads"
        }
    }
}

/// A relay cannot be started with its configuration.
struct RelayServiceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
