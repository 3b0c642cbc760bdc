public import WebProxyCore

/// Something the I/O shell must do, returned by `SessionSupervisor.handle(_:at:)`, in order.
public enum SessionAction: Equatable, Sendable, CustomStringConvertible {
    /// Send `request`, made for `operation`; report `httpResponse` or, if nothing arrives by
    /// `deadline`, or its connection moves nothing for `silence` once it is sent, abandon it
    /// and report `httpFailed`. `silence` is nil for a long poll, which the relay rightly holds.
    case sendHTTP(RequestID, HTTPOperation, CarrierRequest, deadline: MonotonicInstant, silence: Duration?)
    /// Abandon a request; no event is expected for it any more.
    case cancelHTTP(RequestID)
    /// Open a WebSocket with this upgrade request (the client adds `Sec-WebSocket-Key`);
    /// report `webSocketOpened` or, by `deadline` at the latest, `webSocketUpgradeFailed`.
    case openWebSocket(SocketID, CarrierRequest, deadline: MonotonicInstant)
    /// Send one binary message.
    case sendWebSocketMessage(SocketID, [UInt8])
    /// Send a Ping; the answer comes back as `webSocketPong`.
    case sendWebSocketPing(SocketID)
    /// Close the socket once the messages already given to it are written (or cancel its
    /// handshake); no event is expected for it any more.
    case closeWebSocket(SocketID)
    /// Queue bytes for the local connection; report progress with `localWritten`.
    case writeLocal(ConnectionID, ArraySlice<UInt8>)
    /// Stop reading the local connection: `readAllowance` is 0.
    case pauseLocalRead(ConnectionID)
    /// Read the local connection again, up to `readAllowance`.
    case resumeLocalRead(ConnectionID)
    /// Close the local connection; no event is expected for it any more. See
    /// `LocalCloseReason.flushesPendingWrites`.
    case closeLocal(ConnectionID, LocalCloseReason)
    /// Fire `timerFired` at `at` (replacing an earlier schedule of the same id).
    case schedule(SessionTimer, at: MonotonicInstant)
    /// Forget a scheduled timer.
    case cancelTimer(SessionTimer)
    /// A relay session is established and carries local connections.
    case sessionUp(CarrierMode)
    /// The session (or an attempt to build one) failed; a rebuild is scheduled.
    case sessionDown(SessionFailure)
    /// A fact worth logging. Never holds tokens, capabilities, URLs or payload bytes.
    case log(SessionLogEvent)
    /// Shutdown is complete: nothing is in flight any more.
    case stopped

    public var description: String {
        switch self {
        case .sendHTTP(let id, let operation, let request, let deadline, let silence):
            "sendHTTP(\(id), \(operation), \(request), deadline \(deadline)\(silence.map { ", silence \($0)" } ?? ""))"
        case .cancelHTTP(let id): "cancelHTTP(\(id))"
        case .openWebSocket(let id, let request, let deadline): "openWebSocket(\(id), \(request), deadline \(deadline))"
        case .sendWebSocketMessage(let id, let bytes): "sendWebSocketMessage(\(id), \(bytes.count) bytes)"
        case .sendWebSocketPing(let id): "sendWebSocketPing(\(id))"
        case .closeWebSocket(let id): "closeWebSocket(\(id))"
        case .writeLocal(let id, let bytes): "writeLocal(\(id), \(bytes.count) bytes)"
        case .pauseLocalRead(let id): "pauseLocalRead(\(id))"
        case .resumeLocalRead(let id): "resumeLocalRead(\(id))"
        case .closeLocal(let id, let reason): "closeLocal(\(id), \(reason))"
        case .schedule(let id, let at): "schedule(\(id), at \(at))"
        case .cancelTimer(let id): "cancelTimer(\(id))"
        case .sessionUp(let mode): "sessionUp(\(mode))"
        case .sessionDown(let failure): "sessionDown(\(failure))"
        case .log(let event): "log(\(event))"
        case .stopped: "stopped"
        }
    }
}

/// Why a local connection is closed.
public enum LocalCloseReason: Hashable, Sendable, CustomStringConvertible {
    /// The relay closed the stream (backend EOF, refused OPEN, lane ended).
    case relayClosedStream
    /// The relay faulted on this stream only (websocket-lanes lane error).
    case streamFault
    /// The session died: fail closed.
    case sessionFailed
    /// No session came up within the admission wait.
    case sessionUnavailable
    /// Too many local connections at once (`maxStreams`).
    case streamLimit
    /// The shell delivered more bytes than `readAllowance` allowed.
    case readOverrun
    /// The daemon is stopping.
    case shutdown

    /// True when the shell should first write out what earlier `writeLocal` actions queued
    /// (the relay's last bytes before its CLOSE); otherwise it drops them and closes at once.
    public var flushesPendingWrites: Bool { self == .relayClosedStream }

    /// The metrics label of the reason.
    public var label: String {
        switch self {
        case .relayClosedStream: "relay-closed"
        case .streamFault: "stream-fault"
        case .sessionFailed: "session-failed"
        case .sessionUnavailable: "no-session"
        case .streamLimit: "stream-limit"
        case .readOverrun: "read-overrun"
        case .shutdown: "shutdown"
        }
    }

    public var description: String {
        switch self {
        case .relayClosedStream: "relay closed the stream"
        case .streamFault: "relay fault on the stream"
        case .sessionFailed: "session failed"
        case .sessionUnavailable: "no relay session within the wait"
        case .streamLimit: "stream limit reached"
        case .readOverrun: "read beyond the allowance"
        case .shutdown: "shutting down"
        }
    }
}

/// Why a session (or an attempt to build one) ended: a class for status and metrics, and
/// a message for people. Messages never hold tokens, capabilities, URLs or payload bytes.
public struct SessionFailure: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        /// The bridge answer holds no usable session data: wrong secret or host, or not a
        /// WEB (tproxy v1) relay.
        case notARelay = "not-a-relay"
        /// The session was created for another carrier than the page announced, or the
        /// relay selects another carrier than the pinned one.
        case carrierModeMismatch = "carrier-mode-mismatch"
        /// The relay answered with a status that ends the session (404 and the like).
        case refused
        /// The relay broke the protocol (bad frames, headers, windows, ids).
        case protocolViolation = "protocol-violation"
        /// No answer after every retry, or the retry budget ran out.
        case unreachable
        /// A session WebSocket (or a new lane's upgrade) was lost.
        case carrierLost = "carrier-lost"
        /// The relay said BYE.
        case relayEnded = "relay-ended"
        /// Every stream id of the session was used; a fresh session has a fresh id space.
        case streamIDsExhausted = "stream-ids-exhausted"
        /// Work was queued and nothing moved for `SessionSettings.stallBound`: the daemon's
        /// own watchdog gave up on the session.
        case stalled
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The class of a carrier or bootstrap error.
    init(_ error: CarrierError) {
        let kind: Kind =
            switch error {
            case .notATproxyRelay, .malformedBridgePage: .notARelay
            case .carrierModeMismatch: .carrierModeMismatch
            case .unexpectedStatus: .refused
            case .noResponse, .retryBudgetExhausted: .unreachable
            default: .protocolViolation
            }
        self.init(kind, error.description)
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}

/// Facts worth logging, as values: stages, counts and error classes only.
public enum SessionLogEvent: Hashable, Sendable {
    /// Fetching a bridge page (attempt counts rebuilds since the last stable session).
    case bootstrapping(consecutiveFailures: Int)
    /// The bridge page was parsed.
    case bridgePageParsed(CarrierMode, batchLimit: Int)
    /// A request failed and is sent again after `after`.
    case requestRetry(HTTPOperation, failedAttempts: Int, after: Duration)
    /// The next session is built after `after`.
    case rebuildScheduled(after: Duration)
    /// A local connection was closed without reaching the relay; `total` counts them all.
    case localConnectionRefused(LocalCloseReason, total: Int)
    /// One stream was aborted (websocket-lanes lane fault or lane loss); the session lives on.
    case streamAborted(StreamID, String)
    /// websocket-lanes: the session had no lane for the idle period and is recreated.
    case idleSessionRecycled
    /// The shutdown DELETE finished (HTTP status, nil when it got no answer).
    case sessionDeleted(status: Int?)
    /// The watchdog found the session stalled; the state in counts (no token, no payload).
    case sessionStalled(String)
}

/// Which relay call an HTTP request is, for logs and routing.
public enum HTTPOperation: Hashable, Sendable, CustomStringConvertible {
    case bridgePage
    case createSession
    case deleteSession
    /// `/up`; `lane` is the https-lanes `X-Lane-ID`, nil on https.
    case up(lane: StreamID?)
    /// `/down`; `lane` as for `up`.
    case down(lane: StreamID?)

    public var description: String {
        switch self {
        case .bridgePage: "bridge page"
        case .createSession: "session creation"
        case .deleteSession: "session deletion"
        case .up(let lane): lane.map { "/up on lane \($0)" } ?? "/up"
        case .down(let lane): lane.map { "/down on lane \($0)" } ?? "/down"
        }
    }

    /// A `/down` may be parked by the relay for its whole long poll without a byte moving.
    public var isLongPoll: Bool {
        if case .down = self { true } else { false }
    }
}
