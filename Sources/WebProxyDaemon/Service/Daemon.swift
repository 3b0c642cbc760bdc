#if canImport(Glibc)
import Glibc
#endif
import CWebProxyLinux
import Dispatch
import WebProxyCore
import WebProxySession
import WebProxyNet

/// Every relay on one event loop, with the process around them: systemd notifications
/// (`READY=1` once every listener is bound, `STATUS=`, `WATCHDOG=1`), SIGTERM/SIGINT as a
/// graceful stop (`STOPPING=1`, local connections closed, a best-effort DELETE, all within
/// `drainLimit`), and SIGHUP as a reload that keeps unchanged relays running.
///
/// ```swift
/// let daemon = Daemon(configuration: config, configurationPath: path, environment: env, logger: log)
/// try daemon.start()                 // binds every listener, then READY=1
/// daemon.watchSignals()
/// let status = daemon.waitUntilStopped()
/// ```
///
/// `@unchecked Sendable`: the public methods only hand work to the loop (`execute`,
/// `submitAndWait`) or wait on a semaphore; what changes lives in `state`, which checks
/// that only the loop thread touches it.
public final class Daemon: @unchecked Sendable {
    private let loop: EventLoop
    private let resolver: Resolver
    private let logger: Logger
    private let notifier: ServiceNotifier
    private let reporter: StatusReporter
    private let environment: [String: String]
    private let configurationPath: String?
    private let sessionSettings: SessionSettings?
    private let drainLimit: Duration
    private let stoppedSignal = DispatchSemaphore(value: 0)
    private let controlSocketPath: String?
    private let controlSocketRequired: Bool
    /// Listening sockets systemd passed, by relay name; they stay open for restarts.
    private let activatedSockets: [String: Int32]

    private let state: LoopBound<State>

    /// What the daemon changes as it runs, on the loop thread only.
    private struct State {
        var configuration: DaemonConfiguration
        var control: ControlServer?
        var services: [String: RelayService] = [:]
        var metricsServer: MetricsServer?
        var stopping = false
        var reloading = false
        var allocatorTrim = AllocatorTrim()
    }

    /// A daemon for `configuration`; `configurationPath` is re-read on reload (nil: the
    /// quick flags, which cannot be reloaded). Tests shrink `sessionSettings`.
    ///
    /// `controlSocketPath` is where `webproxyd status` asks (nil: no control socket); when
    /// it cannot be created, start fails if `controlSocketRequired`, else it is logged.
    /// `activatedSockets` are listening sockets by relay name (`SocketActivation`): a relay
    /// with one accepts on it instead of binding its `listen` address.
    public init(
        configuration: DaemonConfiguration, configurationPath: String?, environment: [String: String],
        logger: Logger, notifier: ServiceNotifier? = nil, sessionSettings: SessionSettings? = nil,
        drainLimit: Duration = .seconds(4), controlSocketPath: String? = nil, controlSocketRequired: Bool = true,
        activatedSockets: [String: Int32] = [:]
    ) throws(NetError) {
        self.controlSocketPath = controlSocketPath
        self.controlSocketRequired = controlSocketRequired
        self.activatedSockets = activatedSockets
        self.configurationPath = configurationPath
        self.environment = environment
        self.logger = logger
        let notifier = notifier ?? ServiceNotifier(environment: environment)
        self.notifier = notifier
        reporter = StatusReporter(notifier: notifier)
        self.sessionSettings = sessionSettings
        self.drainLimit = drainLimit
        loop = try EventLoop(name: "webproxyd")
        state = LoopBound(handingOver: State(configuration: configuration), loop: loop)
        do {
            resolver = try Resolver()
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
        }
    }

    /// Builds every relay's TLS context (off the loop: it reads CA files), binds every
    /// listener and starts the sessions, then sends `READY=1`. On failure nothing keeps
    /// running: the loop is stopped and the error describes the relay at fault.
    public func start() throws(DaemonStartError) {
        var contexts: [String: TLSContext] = [:]
        for relay in onLoop({ [state] in state.value.configuration.relays }) ?? [] {
            do {
                contexts[relay.name] = try RelayService.makeTLSContext(for: relay)
            } catch {
                shutDownLoop()
                throw DaemonStartError("relay '\(relay.name)': cannot set up TLS: \(error)")
            }
        }
        let outcome = onLoop { [self] () -> String? in
            if let problem = startControl() { return problem }
            for relay in state.value.configuration.relays {
                guard let context = contexts[relay.name] else { continue }
                if let problem = startRelay(relay, context: context) { return problem }
            }
            if let problem = startMetrics() { return problem }
            let unused = Set(activatedSockets.keys).subtracting(state.value.configuration.relays.map(\.name))
            for name in unused.sorted() {
                logger.warning(
                    "systemd passed a socket named '\(name)' but no [relay \(name)] exists; it is not used",
                    LogFields(stage: "listen"))
            }
            startTimers()
            notifier.ready()
            logger.notice("webproxyd \(WebProxyDaemon.version) ready with \(state.value.services.count) relay(s)")
            reportStatus()
            return nil
        }
        if let problem = outcome ?? "the event loop stopped" {
            onLoop { [self] in
                for service in state.value.services.values { service.forceStop() }
                state.value.metricsServer?.close()
                state.value.control?.stop()
            }
            shutDownLoop()
            throw DaemonStartError(problem)
        }
    }

    /// Turns SIGTERM and SIGINT into `requestStop()` and SIGHUP into `requestReload()`. The
    /// process must have called `ProcessSignal.prepareProcess()` before starting threads.
    public func watchSignals() throws(NetError) {
        let failure = onLoop { [self] () -> NetError? in
            do throws(NetError) {
                try loop.watchSignals(ProcessSignal.daemonSignals) { [self] signal in
                    logger.info("received \(signal)")
                    if signal == .hangup { reload() } else { stop() }
                }
                return nil
            } catch {
                return error
            }
        }
        if let failure = failure ?? nil { throw failure }
    }

    /// Where each relay's listener is bound, by relay name (for tests and the log).
    public func listenAddresses() -> [String: SocketAddress] {
        onLoop { [self] in state.value.services.compactMapValues(\.listenAddress) } ?? [:]
    }

    /// Starts a graceful stop, as SIGTERM does. Callable from any thread.
    public func requestStop() {
        loop.execute { [self] in stop() }
    }

    /// Re-reads the configuration file, as SIGHUP does. Callable from any thread.
    public func requestReload() {
        loop.execute { [self] in reload() }
    }

    /// Blocks until the daemon has stopped; returns the process exit status, `EXIT_SUCCESS`
    /// (a daemon that could not start threw from `start()` instead).
    public func waitUntilStopped() -> Int32 {
        stoppedSignal.wait()
        stoppedSignal.signal()
        loop.waitUntilStopped()
        resolver.shutdown()
        return EXIT_SUCCESS
    }

    // MARK: Loop thread

    /// Runs `body` on the loop and waits for its result; nil if the loop has stopped.
    @discardableResult
    private func onLoop<T>(_ body: @escaping () -> T) -> T? {
        do { return try loop.submitAndWait(body) } catch { return nil }
    }

    private func shutDownLoop() {
        loop.stop()
        loop.waitUntilStopped()
        resolver.shutdown()
    }

    /// Starts one relay; returns what went wrong, if anything.
    private func startRelay(_ relay: RelayConfiguration, context: TLSContext) -> String? {
        let relayLogger = logger.with(relay: relay.name)
        do {
            let service = try RelayService(
                configuration: relay, context: context, loop: loop, resolver: resolver, logger: relayLogger,
                settings: sessionSettings)
            service.onStatusChange = { [weak self] in self?.reportStatus() }
            try service.start(activatedSocket: activatedSockets[relay.name])
            state.value.services[relay.name] = service
            return nil
        } catch {
            return "relay '\(relay.name)': \(error)"
        }
    }

    /// Serves the control socket if it has a path; returns what went wrong if the daemon
    /// cannot start without it.
    private func startControl() -> String? {
        guard let controlSocketPath else { return nil }
        do {
            state.value.control = try ControlServer.start(path: controlSocketPath, loop: loop) { [weak self] request in
                self?.controlAnswer(request) ?? ControlAnswer.error("the daemon is stopping")
            }
        } catch where controlSocketRequired {
            return "\(error)"
        } catch {
            logger.warning("no control socket: \(error)", LogFields(stage: "control"))
            return nil
        }
        logger.info("control socket at \(controlSocketPath)", LogFields(stage: "control"))
        return nil
    }

    /// Serves the metrics if `[daemon] metrics` is set; returns what went wrong, if anything.
    private func startMetrics() -> String? {
        guard let metrics = state.value.configuration.metrics else { return nil }
        guard let address = SocketAddress(ipAddress: metrics.host, port: metrics.port) else {
            return "cannot listen for metrics on \(metrics): not an IP address"
        }
        do {
            state.value.metricsServer = try MetricsServer(address: address, loop: loop) { [weak self] in self?.metricsText() ?? "" }
        } catch {
            return "cannot listen for metrics on \(metrics): \(error)"
        }
        logger.info("metrics on http://\(metrics)/metrics", LogFields(stage: "metrics"))
        return nil
    }

    /// Every running relay, in configuration order (loop thread).
    private func snapshots() -> [RelaySnapshot] {
        let now = Int64(time(nil))
        return state.value.configuration.relays.compactMap { state.value.services[$0.name]?.snapshot(wallClockSeconds: now) }
    }

    /// The control socket's `status` document (loop thread).
    private func statusDocument() -> StatusDocument {
        StatusDocument(
            version: WebProxyDaemon.version, pid: getpid(), generatedAt: RFC3339Time.format(epochSeconds: Int64(time(nil))),
            relays: snapshots().map(\.status))
    }

    /// The status document, taken on the loop from any other thread; nil once the loop has
    /// stopped.
    func statusSnapshot() -> StatusDocument? {
        onLoop { [self] in statusDocument() }
    }

    /// Every running relay's snapshot, taken on the loop from any other thread (for tests);
    /// nil once the loop has stopped.
    func relaySnapshots() -> [RelaySnapshot]? {
        onLoop { [self] in snapshots() }
    }

    /// Each running relay's session state in counts, taken on the loop (for tests).
    func stateSummaries() -> [String]? {
        onLoop { [self] in state.value.configuration.relays.compactMap { state.value.services[$0.name]?.stateSummary } }
    }

    /// The metrics text (loop thread).
    private func metricsText() -> String {
        PrometheusText.render(version: WebProxyDaemon.version, relays: snapshots())
            + PrometheusText.render(loop: loop.counters)
    }

    /// Where the metrics endpoint is bound (for tests).
    func metricsAddress() -> SocketAddress? {
        onLoop { [self] in state.value.metricsServer?.localAddress } ?? nil
    }

    /// Answers a control request (loop thread).
    private func controlAnswer(_ request: String) -> [UInt8] {
        guard request == "status" else { return ControlAnswer.error("unknown request; send \"status\"") }
        return statusDocument().encoded()
    }

    private func startTimers() {
        if let interval = notifier.watchdogPingInterval { scheduleWatchdog(every: interval) }
        scheduleStatus()
    }

    private func scheduleWatchdog(every interval: Duration) {
        loop.scheduleTimer(after: interval) { [weak self] in
            guard let self else { return }
            notifier.watchdog()
            scheduleWatchdog(every: interval)
        }
    }

    private func scheduleStatus() {
        loop.scheduleTimer(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            reportStatus()
            trimAfterTransfer()
            scheduleStatus()
        }
    }

    private func reportStatus() {
        reporter.report(snapshots().map(\.status), now: MonotonicClock.now())
    }

    private func trimAfterTransfer() {
        let moved = state.value.services.values.reduce(0) { $0 + $1.bytesUp + $1.bytesDown }
        guard state.value.allocatorTrim.shouldTrim(totalBytesMoved: moved) else { return }
        let clock = ContinuousClock()
        let took = clock.measure { _ = malloc_trim(0) }
        logger.debug("a transfer ended: free heap pages returned to the system in \(Int(took / .microseconds(1))) µs", LogFields(stage: "memory"))
    }

    private func stop() {
        guard !state.value.stopping else { return }
        state.value.stopping = true
        notifier.stopping()
        logger.notice("stopping: closing local connections and the relay sessions")
        var remaining = state.value.services.count
        let finish = { [self] in
            state.value.metricsServer?.close()
            state.value.metricsServer = nil
            state.value.control?.stop()
            state.value.control = nil
            logger.info("stopped")
            stoppedSignal.signal()
            loop.stop()
        }
        guard remaining > 0 else {
            finish()
            return
        }
        loop.scheduleTimer(after: drainLimit) { [self] in
            guard remaining > 0 else { return }
            logger.warning("the drain took longer than \(drainLimit); stopping anyway", LogFields(stage: "shutdown"))
            for service in state.value.services.values { service.forceStop() }
        }
        for service in state.value.services.values {
            service.stop {
                remaining -= 1
                if remaining == 0 { finish() }
            }
        }
    }

    private func reload() {
        guard !state.value.stopping, !state.value.reloading else { return }
        guard let path = configurationPath else {
            logger.warning("reload ignored: the relay was given on the command line, not in a file")
            return
        }
        state.value.reloading = true
        notifier.reloading(monotonicNow: MonotonicClock.now())
        logger.notice("reloading \(path)")
        let environment = environment
        // Reading the file and the CA files blocks: not on the loop.
        let loop = loop
        do {
            try BlockingWork.detach(name: "webproxyd-reload") { [self] in
                let prepared = ConfigurationReload.read(path: path, environment: environment)
                loop.execute { [self] in apply(prepared) }
            }
        } catch {
            state.value.reloading = false
            logger.error("reload failed: cannot start a thread to read \(path): \(error)")
        }
    }

    private func apply(_ prepared: Result<ConfigurationReload, ConfigurationError>) {
        state.value.reloading = false
        defer {
            notifier.ready()
            reportStatus()
        }
        guard !state.value.stopping else { return }
        let next: ConfigurationReload
        switch prepared {
        case .failure(let error):
            for diagnostic in error.diagnostics {
                logger.error("reload refused, keeping the running configuration: \(diagnostic)", LogFields(stage: "reload"))
            }
            return
        case .success(let value):
            next = value
        }
        for warning in next.loaded.warnings { logger.warning("\(warning)", LogFields(stage: "reload")) }
        let changes = next.loaded.configuration.changes(from: state.value.configuration)
        let previous = state.value.configuration
        // First, so that the reload's own messages follow the new level.
        if next.loaded.configuration.logLevel != previous.logLevel {
            logger.level = next.loaded.configuration.logLevel
            logger.notice("log level is now \(logger.level)", LogFields(stage: "reload"))
        }
        logger.notice(
            "reload: \(changes.added.count) added, \(changes.removed.count) removed, \(changes.changed.count) changed, \(changes.unchanged.count) unchanged",
            LogFields(stage: "reload"))
        for name in changes.removed + changes.changed {
            guard let service = state.value.services.removeValue(forKey: name) else { continue }
            service.stop {}
            loop.scheduleTimer(after: drainLimit) { service.forceStop() }
        }
        state.value.configuration = next.loaded.configuration
        if state.value.configuration.metrics != previous.metrics {
            state.value.metricsServer?.close()
            state.value.metricsServer = nil
            if let problem = startMetrics() {
                logger.error(problem, LogFields(stage: "reload"))
            } else if state.value.configuration.metrics == nil {
                logger.notice("metrics are off", LogFields(stage: "reload"))
            }
        }
        for name in changes.added + changes.changed {
            guard let relay = state.value.configuration.relay(named: name), let context = next.contexts[name] else { continue }
            if let problem = startRelay(relay, context: context) {
                logger.error(problem, LogFields(stage: "reload"))
            }
        }
    }
}

/// The daemon could not start: a relay's TLS settings or listener failed.
public struct DaemonStartError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
