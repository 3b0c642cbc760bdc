import WebProxyCore

extension CarrierMode {
    var usesLanes: Bool { self == .httpsLanes || self == .websocketLanes }
    var usesWebSocket: Bool { self == .websocket || self == .websocketLanes }
}

/// One secret the relay serves: its capability decides the bridge page and the carrier.
public struct RelayProfile: Sendable {
    /// The MTProxy secret the capability is derived from.
    public var secret: ProxySecret
    /// The base path the relay is mounted under (nil: root, v1 capability).
    public var basePath: BasePath?
    /// The carrier every session of this profile uses.
    public var carrierMode: CarrierMode
    /// `batchLimit` of the bridge page and the largest downlink batch (≤ 2 MiB).
    public var batchLimit: Int

    public init(
        secret: ProxySecret, basePath: BasePath? = nil, carrierMode: CarrierMode = .https,
        batchLimit: Int = FrameLimits.defaultBatchBytes
    ) {
        self.secret = secret
        self.basePath = basePath
        self.carrierMode = carrierMode
        self.batchLimit = batchLimit
    }
}

/// Limits and timeouts; the defaults are those of PROTOCOL.md §7.1. Tests shrink them.
public struct RelayLimits: Sendable {
    /// `/down` idle answer and WebSocket ping cadence; the WS read deadline is twice this.
    public var longPoll: Duration = .seconds(25)
    /// How long a bootstrap token (and a closed session token's DELETE idempotency) lives.
    public var bootstrapLifetime: Duration = .seconds(120)
    /// Idle time after which an HTTPS (or lane-less) session is dropped.
    public var reconnectGrace: Duration = .seconds(120)
    /// Largest `/up` body and client WebSocket message.
    public var maxBodyBytes = 2 << 20
    /// Largest frame payload in either direction.
    public var maxFramePayload = FrameLimits.maxPayload
    /// Largest number of frames in one body, message or batch.
    public var maxFramesPerBatch = FrameLimits.maxFramesPerBatch
    /// Initial credit of every stream in each direction.
    public var streamWindow = 4 << 20
    /// Concurrent streams (and websocket-lanes sockets) per session.
    public var maxStreamsPerSession = 128
    /// Closed stream ids remembered per session so late frames are ignored.
    public var maxTombstones = 4096
    /// Per-session pending budget: queued bytes (each item charged +256 bytes).
    public var maxPendingBytes = 32 << 20
    /// Per-session pending budget: queued items.
    public var maxPendingItems = 16384
    /// Live sessions across all profiles; creates beyond it get 503.
    public var maxSessions = 128
    /// Live bootstrap tokens; bridge requests beyond it get the local 404.
    public var maxBootstraps = 512
    /// Closed session tokens remembered for DELETE idempotency.
    public var maxClosedSessions = 4096
    /// Largest chunk the shell should read from a backend at once.
    public var backendReadChunk = 64 << 10

    public init() {}
}

/// Everything the engine needs to know about the relay it plays.
public struct TestRelayConfiguration: Sendable {
    /// The canonical public hostname H (`Host` must be H or H:443).
    public var host: RelayHost
    /// The secrets served; their capabilities select the bridge page.
    public var profiles: [RelayProfile]
    /// Limits and timeouts.
    public var limits: RelayLimits
    /// The public website's index page, served to requests without an authentic secret.
    public var publicIndex: [UInt8]

    public init(
        host: RelayHost, profiles: [RelayProfile], limits: RelayLimits = RelayLimits(),
        publicIndex: [UInt8] = Array("<!doctype html><title>Hello</title><p>Hello.</p>\n".utf8)
    ) {
        self.host = host
        self.profiles = profiles
        self.limits = limits
        self.publicIndex = publicIndex
    }
}
