public import WebProxyCore

/// The numbers of the session machines. The defaults follow `Docs/PROTOCOL.md` and the
/// daemon's bounds; tests shrink them.
public struct SessionSettings: Hashable, Sendable {
    /// Most local connections carried at once; one more is closed at once and counted.
    public var maxStreams: Int
    /// Most uplink bytes queued per stream: one full batch (2 MiB), so a stream can always
    /// fill the next `/up` body; the WebSocket carriers queue less
    /// (`SessionDriver.streamQueueLimit`). The bridge allows 8 MiB, but bytes the carrier
    /// cannot take yet wait as well in the local socket's kernel buffer as in the daemon's
    /// memory (under load on loopback the queues held the whole 4 MiB send window per stream).
    public var perStreamQueueLimit: Int
    /// Most bytes queued in the daemon overall: uplink data not yet sent plus data handed
    /// to local sockets and not yet written. Reads and https polls stop at this bound.
    public var globalQueueLimit: Int
    /// Most uplink bytes of all streams together that the relay has not returned by WINDOW
    /// yet. The relay holds at most 32 MiB and 16,384 items per session, in both directions
    /// together (PROTOCOL.md §4.6); half of it for the uplink leaves the rest for the
    /// downlink and the per-item charge. A 503 on `/up` halves it (to 2 MiB at least);
    /// every accepted `/up` wins 256 KiB of it back.
    public var uplinkBudget: Int
    /// Deadline of every HTTP request except a parked long poll, and of WebSocket upgrades.
    /// It bounds how long a request on a connection that went silent holds its stream.
    public var requestDeadline: Duration
    /// A request whose connection moves nothing this long once it is sent (no byte
    /// acknowledged by the relay's side, none received) fails at once rather than at its
    /// deadline; `/down` long polls are exempt. A path that moves, however slowly, keeps it.
    /// The relay's TLS handshakes get the same bound (`RelayService`).
    public var requestSilence: Duration
    /// Deadline of a `/down` long poll: the relay's 25 s long poll plus a margin.
    public var longPollDeadline: Duration
    /// A WebSocket silent this long gets a Ping.
    public var socketPingAfter: Duration
    /// A WebSocket silent this long (no message, no Pong) counts as lost: the Pong gets 4 s.
    /// A socket that carries traffic hears messages all the time; only an idle one waits for
    /// the Pong, with nothing queued ahead of it. 7 s plus the 1 s rebuild serves again
    /// within 10 s when connections die silently and the network itself stays up.
    public var socketDeadAfter: Duration
    /// websocket-lanes: with no lane this long, the session is recreated before the relay's
    /// 2-minute idle expiry can make the next lane upgrade fail.
    public var laneIdleRecycle: Duration
    /// How long shutdown waits for the DELETE.
    public var shutdownWait: Duration
    /// A session with work queued and no byte or frame moved for this long is rebuilt.
    public var stallBound: Duration
    /// Receive credit goes back in a WINDOW once this many bytes were written locally.
    public var windowUpdateThreshold: Int
    /// Retries of one request.
    public var retry: RetryPolicy
    /// Rebuild backoff and the admission wait of local connections.
    public var reconnect: ReconnectSettings
    /// The carrier the relay must select (`carrier =` pinned); nil follows the relay.
    public var requiredCarrier: CarrierMode?
    /// Whether `UplinkPacer` bounds what the websocket carrier's bulk streams have in flight
    /// (the relay key `pace-uploads`; off by default).
    public var pacesUplink: Bool
    /// websocket-lanes: whether the session keeps one lane socket upgraded ahead of the next
    /// stream, so a new connection's first bytes need no TCP, TLS and upgrade of their own.
    public var opensSpareLane: Bool

    public init(
        maxStreams: Int = 128,
        perStreamQueueLimit: Int = FrameLimits.defaultBatchBytes,
        globalQueueLimit: Int = 32 << 20,
        uplinkBudget: Int = 16 << 20,
        requestDeadline: Duration = .seconds(20),
        requestSilence: Duration = .seconds(5),
        longPollDeadline: Duration = .seconds(35),
        socketPingAfter: Duration = .seconds(3),
        socketDeadAfter: Duration = .seconds(7),
        laneIdleRecycle: Duration = .seconds(90),
        shutdownWait: Duration = .seconds(3),
        stallBound: Duration = .seconds(30),
        windowUpdateThreshold: Int = SessionMux.defaultWindowUpdateThreshold,
        retry: RetryPolicy = .relayDefault,
        reconnect: ReconnectSettings = .standard,
        requiredCarrier: CarrierMode? = nil,
        pacesUplink: Bool = false,
        opensSpareLane: Bool = true
    ) {
        self.maxStreams = maxStreams
        self.perStreamQueueLimit = perStreamQueueLimit
        self.globalQueueLimit = globalQueueLimit
        self.uplinkBudget = uplinkBudget
        self.requestDeadline = requestDeadline
        self.requestSilence = requestSilence
        self.longPollDeadline = longPollDeadline
        self.socketPingAfter = socketPingAfter
        self.socketDeadAfter = socketDeadAfter
        self.laneIdleRecycle = laneIdleRecycle
        self.shutdownWait = shutdownWait
        self.stallBound = stallBound
        self.windowUpdateThreshold = windowUpdateThreshold
        self.retry = retry
        self.reconnect = reconnect
        self.requiredCarrier = requiredCarrier
        self.pacesUplink = pacesUplink
        self.opensSpareLane = opensSpareLane
    }
}
