import WebProxyCore

/// The sans-I/O core of the test relay: the relay side of tproxy v1 (PROTOCOL.md), driven by
/// HTTP requests, WebSocket events, backend events and timer ticks, each with an injected
/// `now`, and answering with `RelayAction`s for the network shell to perform.
///
/// It plays the reference relay as recorded in the transcripts: the bridge page and the
/// public-site fall-through, session create/delete, the four carriers, stream limits,
/// tombstones, flow control in both directions, and which 404s end a session.
public struct RelayEngine: Sendable {
    /// The relay being played.
    public let configuration: TestRelayConfiguration
    /// Faults to inject; tests and the demo set them between events.
    public var faults = RelayFaults()

    private var random: any RandomNumberGenerator & Sendable
    private let tokens: RelayTokenAuthority
    private let capabilities: [Capability]
    private var bootstraps: [String: Bootstrap] = [:]
    private var sessions: [SessionID: RelaySession] = [:]
    private var sessionTokens: [String: SessionID] = [:]
    /// Recently ended session tokens (DELETE stays idempotent) and when to forget them.
    private var closedTokens: [String: RelayInstant] = [:]
    private var closedOrder: [String] = []
    private var nextSessionNumber: UInt64 = 1
    private var polls: [RelayConnectionID: SessionID] = [:]
    private var sockets: [RelayConnectionID: SessionID] = [:]
    /// Connections whose next response is replaced by a reset (fault injection).
    private var resetOnResponse: Set<RelayConnectionID> = []

    private struct Bootstrap: Sendable {
        let profile: Int
        let expires: RelayInstant
        /// The session token this bootstrap created (identical replays return it).
        var session: String?
    }

    /// A relay for `configuration`; `random` supplies token nonces, keys and CSP nonces.
    public init(configuration: TestRelayConfiguration, random: some RandomNumberGenerator & Sendable) {
        self.configuration = configuration
        var random = random
        tokens = RelayTokenAuthority(random: &random)
        self.random = random
        capabilities = configuration.profiles.map {
            Capability.derive(secret: $0.secret, host: configuration.host, basePath: $0.basePath)
        }
    }

    /// Live sessions (for tests and status output).
    public var sessionCount: Int { sessions.count }

    /// Each live session's open streams, fewest first (for tests).
    public var streamsPerSession: [Int] { sessions.values.map(\.streams.count).sorted() }

    /// Every session's state in counts (for tests' stall reports).
    public var stateSummary: String {
        sessions.values.map(\.stateSummary).sorted().joined(separator: " | ")
    }

    // MARK: - Events

    /// An HTTP request on `connection`.
    public mutating func handle(
        _ request: RelayRequest, connection: RelayConnectionID, now: RelayInstant
    ) -> [RelayAction] {
        var context = makeContext(now)
        route(request, connection: connection, context: &context)
        return finish(&context)
    }

    /// Something read from an upgraded WebSocket connection.
    public mutating func webSocketReceived(
        _ inbound: WebSocketInbound, connection: RelayConnectionID, now: RelayInstant
    ) -> [RelayAction] {
        var context = makeContext(now)
        guard let id = sockets[connection], var session = sessions[id],
            let key = session.lane(of: connection)
        else {
            return []
        }
        let lanes = session.mode == .websocketLanes
        session.socketHeard(lane: key, now: now)
        var failed = false
        var closeCode: UInt16?
        switch inbound {
        case .binary(let bytes):
            if bytes.count > configuration.limits.maxBodyBytes {
                closeCode = 1009
            } else {
                do { try session.socketMessage(bytes, lane: key, context: &context) } catch {
                    failed = true
                }
            }
        case .text:
            failed = true
        case .tooLarge:
            closeCode = 1009
        case .ping(let payload):
            context.actions.append(.sendPong(connection, payload))
        case .pong:
            break
        case .close:
            closeCode = 1000
        }
        if let closeCode {
            if lanes {
                session.lanes[key]?.socket = nil
                session.closeLane(key, drop: false, context: &context)
            } else {
                session.lanes[key]?.socket = nil
            }
            context.actions.append(.closeWebSocket(connection, code: closeCode))
        } else if failed, lanes {
            session.closeLane(key, drop: true, context: &context)
        }
        sessions[id] = session
        if !lanes, failed || closeCode != nil { endSession(id, context: &context) }
        return finish(&context)
    }

    /// The client connection ended (TCP loss, or the shell gave up on it).
    public mutating func connectionClosed(_ connection: RelayConnectionID, now: RelayInstant)
        -> [RelayAction]
    {
        var context = makeContext(now)
        if let id = polls.removeValue(forKey: connection) { sessions[id]?.forgetPoll(connection) }
        if let id = sockets.removeValue(forKey: connection), var session = sessions[id],
            let key = session.lane(of: connection)
        {
            session.lanes[key]?.socket = nil
            if session.mode == .websocketLanes {
                session.closeLane(key, drop: false, context: &context)
                sessions[id] = session
            } else {
                sessions[id] = session
                endSession(id, context: &context)
            }
        }
        return finish(&context)
    }

    /// The backend dial for `backend` completed.
    public mutating func backendConnected(_ backend: BackendID, now: RelayInstant) -> [RelayAction]
    {
        withSession(backend, now) { $0.backendConnected(backend.stream, context: &$1) }
    }

    /// The backend dial failed or timed out: the client gets CLOSE.
    public mutating func backendDialFailed(_ backend: BackendID, now: RelayInstant) -> [RelayAction]
    {
        withSession(backend, now) { $0.backendDialFailed(backend.stream, context: &$1) }
    }

    /// Bytes read from the backend (at most `backendReadChunk` per event).
    public mutating func backendReceived(
        _ bytes: [UInt8], from backend: BackendID, now: RelayInstant
    ) -> [RelayAction] {
        withSession(backend, now) { $0.backendReceived(bytes, from: backend.stream, context: &$1) }
    }

    /// `count` bytes of earlier writes reached the backend socket: the client gets WINDOW.
    public mutating func backendDrained(_ count: Int, backend: BackendID, now: RelayInstant)
        -> [RelayAction]
    {
        withSession(backend, now) { $0.backendDrained(count, from: backend.stream, context: &$1) }
    }

    /// The backend closed its side: CLOSE follows the data already read.
    public mutating func backendEnded(_ backend: BackendID, now: RelayInstant) -> [RelayAction] {
        withSession(backend, now) { $0.backendEnded(backend.stream, context: &$1) }
    }

    /// Timers: long polls (204), WebSocket pings and read deadlines, idle sessions, expired
    /// bootstraps. Call it at `nextDeadline` or later.
    public mutating func tick(now: RelayInstant) -> [RelayAction] {
        var context = makeContext(now)
        bootstraps = bootstraps.filter { $0.value.expires > now }
        closedTokens = closedTokens.filter { $0.value > now }
        closedOrder.removeAll { closedTokens[$0] == nil }
        for id in sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard var session = sessions[id] else { continue }
            let alive = session.tick(context: &context)
            sessions[id] = session
            if !alive { endSession(id, context: &context) }
        }
        return finish(&context)
    }

    /// When `tick` next has work, or nil when nothing is pending.
    public var nextDeadline: RelayInstant? {
        var deadlines = sessions.values.map(\.nextDeadline)
        deadlines += bootstraps.values.map(\.expires)
        deadlines += closedTokens.values
        return deadlines.min()
    }

    // MARK: - Fault commands

    /// Ends the session holding `token` now, as an idle expiry would.
    public mutating func expireSession(token: String, now: RelayInstant) -> [RelayAction] {
        var context = makeContext(now)
        if let id = sessionTokens[token] { endSession(id, context: &context) }
        return finish(&context)
    }

    /// Ends, as an idle expiry would, every session that carries `count` streams now: a test
    /// can end one of a client's sessions by what it carries.
    public mutating func expireSessions(carrying count: Int, now: RelayInstant) -> [RelayAction] {
        var context = makeContext(now)
        for (id, session) in sessions where session.streams.count == count { endSession(id, context: &context) }
        return finish(&context)
    }

    /// Forgets every session, bootstrap and closed token, as a relay restart does. Tokens
    /// stay verifiable, so old ones get the relay's 404. Every bound connection is dropped.
    public mutating func restart(now: RelayInstant) -> [RelayAction] {
        var context = makeContext(now)
        for id in sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            sessions[id]?.end(context: &context)
        }
        sessions = [:]
        sessionTokens = [:]
        bootstraps = [:]
        closedTokens = [:]
        closedOrder = []
        return finish(&context)
    }

    // MARK: - Plumbing

    private func makeContext(_ now: RelayInstant) -> RelayContext {
        RelayContext(limits: configuration.limits, now: now, faults: faults)
    }

    private mutating func withSession(
        _ backend: BackendID, _ now: RelayInstant,
        _ body: (inout RelaySession, inout RelayContext) -> Void
    ) -> [RelayAction] {
        var context = makeContext(now)
        guard var session = sessions[backend.session] else { return [] }
        body(&session, &context)
        sessions[backend.session] = session
        return finish(&context)
    }

    /// Saves faults, applies response resets and unbinds connections the actions end.
    private mutating func finish(_ context: inout RelayContext) -> [RelayAction] {
        faults = context.faults
        var actions = context.actions
        for index in actions.indices {
            if case .respond(let connection, _) = actions[index],
                resetOnResponse.remove(connection) != nil
            {
                actions[index] = .resetConnection(connection)
            }
            if let ended = actions[index].endedConnection {
                polls[ended] = nil
                sockets[ended] = nil
                if case .respond = actions[index] {} else { resetOnResponse.remove(ended) }
            }
        }
        return actions
    }

    /// Ends a session: closes its backends and connections and remembers its token.
    mutating func endSession(_ id: SessionID, context: inout RelayContext) {
        guard var session = sessions.removeValue(forKey: id) else { return }
        session.end(context: &context)
        sessionTokens[session.token] = nil
        rememberClosed(
            session.token, until: context.now.advanced(by: configuration.limits.bootstrapLifetime))
    }

    private mutating func rememberClosed(_ token: String, until: RelayInstant) {
        if closedTokens.updateValue(until, forKey: token) == nil { closedOrder.append(token) }
        while closedOrder.count > configuration.limits.maxClosedSessions {
            closedTokens[closedOrder.removeFirst()] = nil
        }
    }

    // MARK: - Requests

    private static let hello: [UInt8] = [0x10, 0, 0, 0, 0, 0, 0, 0x01, 0x01]
    private enum Endpoint: String { case session, up, down, ws }

    private mutating func route(
        _ request: RelayRequest, connection: RelayConnectionID, context: inout RelayContext
    ) {
        func respond(_ response: RelayResponse) {
            var response = response
            if request.method == "HEAD" { response.body = [] }
            context.actions.append(.respond(connection, response))
        }
        guard isInternal(request) else {
            respond(PublicSite.response(for: request, index: configuration.publicIndex))
            return
        }
        let parts = request.rawTarget.split(
            separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        let query = parts.count > 1 ? String(parts[1]) : nil
        if let (prefix, endpoint) = apiEndpoint(path) {
            guard query == nil, hostIsValid(request), forwardedForIsValid(request),
                endpoint == .ws || request.values(of: "cookie").isEmpty
            else { return respond(.localNotFound) }
            if endpoint == .ws {
                return upgrade(request, prefix: prefix, connection: connection, context: &context)
            }
            guard let bearer = bearerToken(request), let kind = tokens.verify(bearer) else {
                return respond(.localNotFound)
            }
            if applyRequestFaults(connection: connection, context: &context) { return }
            switch (endpoint, request.method, kind) {
            case (.session, "POST", .bootstrap):
                createSession(
                    request, bootstrap: bearer, prefix: prefix, connection: connection,
                    context: &context)
            case (.session, "DELETE", .session):
                deleteSession(request, token: bearer, connection: connection, context: &context)
            case (.up, "POST", .session):
                uplink(
                    request, token: bearer, prefix: prefix, connection: connection,
                    context: &context)
            case (.down, "POST", .session):
                downlink(
                    request, token: bearer, prefix: prefix, connection: connection,
                    context: &context)
            default:
                respond(.localNotFound)
            }
            return
        }
        respond(bridge(request, path: path, query: query, now: context.now) ?? .localNotFound)
    }

    /// Whether any capability or token of this relay appears anywhere in the request.
    private func isInternal(_ request: RelayRequest) -> Bool {
        SecretScanner.candidates(in: request).contains { candidate in
            capabilities.contains { $0.matches(candidate) } || tokens.verify(candidate) != nil
        }
    }

    private func apiEndpoint(_ path: String) -> (prefix: String, endpoint: Endpoint)? {
        for prefix in Set(capabilities.map { $0.apiPathPrefix }) where path.hasPrefix(prefix + "/")
        {
            if let endpoint = Endpoint(rawValue: String(path.dropFirst(prefix.count + 1))) {
                return (prefix, endpoint)
            }
        }
        return nil
    }

    private func hostIsValid(_ request: RelayRequest) -> Bool {
        guard case .one(let host) = request.single("host") else { return false }
        let name = configuration.host.name
        return host.lowercased() == name || host.lowercased() == name + ":443"
    }

    /// At most one X-Forwarded-For, holding a single IP address.
    private func forwardedForIsValid(_ request: RelayRequest) -> Bool {
        switch request.single("x-forwarded-for") {
        case .absent: return true
        case .many: return false
        case .one(let value):
            let isIPv4 =
                value.split(separator: ".", omittingEmptySubsequences: false).count == 4
                && value.split(separator: ".", omittingEmptySubsequences: false).allSatisfy {
                    CanonicalDecimal.parse($0, maximum: 255) != nil
                }
            let isIPv6 =
                value.contains(":") && value.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
            return isIPv4 || isIPv6
        }
    }

    /// The token of the single `Authorization: Bearer <43 chars>` header.
    private func bearerToken(_ request: RelayRequest) -> String? {
        guard case .one(let value) = request.single("authorization"), value.hasPrefix("Bearer ")
        else { return nil }
        let token = String(value.dropFirst("Bearer ".count))
        return token.utf8.count == 43 && Base64URL.decode(token)?.count == 32 ? token : nil
    }

    /// Injected 503s and response resets. Returns true when the request was answered.
    private mutating func applyRequestFaults(connection: RelayConnectionID, context: inout RelayContext)
        -> Bool
    {
        if context.faults.unavailableResponses > 0 {
            context.faults.unavailableResponses -= 1
            context.actions.append(.respond(connection, .unavailable))
            return true
        }
        if context.faults.dropResponses > 0 {
            context.faults.dropResponses -= 1
            resetOnResponse.insert(connection)
        }
        return false
    }

    private func profilePrefix(_ profile: Int) -> String { capabilities[profile].apiPathPrefix }

    // MARK: Bridge

    private mutating func bridge(
        _ request: RelayRequest, path: String, query: String?, now: RelayInstant
    ) -> RelayResponse? {
        guard request.method == "GET", let query, query.hasPrefix("bridge="), hostIsValid(request)
        else { return nil }
        let presented = query.dropFirst("bridge=".count)
        guard presented.utf8.count == 43, Base64URL.decode(presented)?.count == 32 else {
            return nil
        }
        guard
            let profile = capabilities.indices.first(where: {
                path == (capabilities[$0].basePath.map { $0.pathPrefix + "/" } ?? "/")
                    && capabilities[$0].matches(presented)
            })
        else { return nil }
        guard bootstraps.count < configuration.limits.maxBootstraps else { return nil }
        let token = tokens.mint(.bootstrap, random: &random)
        bootstraps[token] = Bootstrap(
            profile: profile, expires: now.advanced(by: configuration.limits.bootstrapLifetime))
        let nonce = Base64URL.encode(
            (0..<18).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        let settings = configuration.profiles[profile]
        return BridgePage.response(
            host: configuration.host.name, bootstrap: token, mode: settings.carrierMode,
            batchLimit: settings.batchLimit, nonce: nonce)
    }

    // MARK: Session create and delete

    private mutating func createSession(
        _ request: RelayRequest, bootstrap: String, prefix: String, connection: RelayConnectionID,
        context: inout RelayContext
    ) {
        guard request.single("content-type") == .one("application/octet-stream"),
            var entry = bootstraps[bootstrap], entry.expires > context.now,
            profilePrefix(entry.profile) == prefix,
            request.body == Self.hello
        else { return context.actions.append(.respond(connection, .localNotFound)) }
        let settings = configuration.profiles[entry.profile]
        let token: String
        if let existing = entry.session {
            token = existing
        } else {
            guard sessions.count < configuration.limits.maxSessions else {
                return context.actions.append(.respond(connection, .unavailable))
            }
            token = tokens.mint(.session, random: &random)
            let id = SessionID(rawValue: nextSessionNumber)
            nextSessionNumber += 1
            sessions[id] = RelaySession(
                id: id, token: token, profile: entry.profile, mode: settings.carrierMode,
                batchLimit: min(settings.batchLimit, FrameLimits.defaultBatchBytes),
                limits: configuration.limits, now: context.now)
            sessionTokens[token] = id
            entry.session = token
            bootstraps[bootstrap] = entry
        }
        let welcome = RelayResponse.frames(
            Frame.welcome.encoded,
            [
                (name: "X-Carrier-Mode", value: settings.carrierMode.rawValue),
                (name: "X-Down-Cursor", value: "0"),
                (name: "X-Session-Token", value: token),
            ])
        context.actions.append(.respond(connection, welcome))
    }

    private mutating func deleteSession(
        _ request: RelayRequest, token: String, connection: RelayConnectionID,
        context: inout RelayContext
    ) {
        guard request.values(of: "content-type").isEmpty, request.body.isEmpty else {
            return context.actions.append(.respond(connection, .localNotFound))
        }
        if let id = sessionTokens[token] {
            endSession(id, context: &context)
            context.actions.append(.respond(connection, .noContent()))
        } else if closedTokens[token] != nil {
            context.actions.append(.respond(connection, .noContent()))
        } else {
            context.actions.append(.respond(connection, .localNotFound))
        }
    }

    // MARK: HTTPS carriers

    /// `X-Lane-ID`: nil when absent, `.some(nil)` when present but not canonical or too large.
    private func laneHeader(_ request: RelayRequest) -> UInt32?? {
        switch request.single("x-lane-id") {
        case .absent: return .none
        case .many: return .some(nil)
        case .one(let value):
            return .some(
                CanonicalDecimal.parse(value, maximum: UInt64(StreamID.max.rawValue)).map { UInt32($0) }
            )
        }
    }

    /// The live HTTPS session for `token` whose carrier matches the lane header, or nil.
    private func httpsSession(token: String, prefix: String, lane: UInt32??) -> SessionID? {
        guard let id = sessionTokens[token], let session = sessions[id],
            profilePrefix(session.profile) == prefix
        else { return nil }
        switch (session.mode, lane) {
        case (.https, .none): return id
        case (.httpsLanes, .some(.some)): return id
        default: return nil
        }
    }

    private mutating func uplink(
        _ request: RelayRequest, token: String, prefix: String, connection: RelayConnectionID,
        context: inout RelayContext
    ) {
        let lane = laneHeader(request)
        guard request.single("content-type") == .one("application/octet-stream"),
            case .one(let seqText) = request.single("x-up-seq"),
            let sequence = CanonicalDecimal.parse(seqText),
            lane != .some(nil), !request.body.isEmpty,
            request.body.count <= configuration.limits.maxBodyBytes,
            let id = httpsSession(token: token, prefix: prefix, lane: lane),
            var session = sessions[id]
        else { return context.actions.append(.respond(connection, .localNotFound)) }
        session.lastActivity = context.now
        let key = (lane ?? nil) ?? 0
        let fingerprint = tokens.fingerprint(request.body)
        do {
            if try session.sequencing(sequence, body: fingerprint, lane: key) == .apply {
                let frames = try RelaySession.decodeBatch(
                    request.body[...], limits: configuration.limits)
                guard
                    try session.receiveUplink(
                        frames, lane: session.mode == .httpsLanes ? key : nil, context: &context)
                else {
                    sessions[id] = session
                    return context.actions.append(.respond(connection, .unavailable))
                }
                session.commitUplink(sequence, body: fingerprint, lane: key)
            }
            sessions[id] = session
            context.actions.append(
                .respond(connection, .noContent([(name: "X-Up-Ack", value: String(sequence))])))
        } catch {
            sessions[id] = session
            endSession(id, context: &context)
            context.actions.append(.respond(connection, .localNotFound))
        }
    }

    private mutating func downlink(
        _ request: RelayRequest, token: String, prefix: String, connection: RelayConnectionID,
        context: inout RelayContext
    ) {
        let lane = laneHeader(request)
        guard request.values(of: "content-type").isEmpty, request.body.isEmpty,
            case .one(let cursorText) = request.single("x-down-cursor"),
            let cursor = CanonicalDecimal.parse(cursorText), lane != .some(nil),
            let id = httpsSession(token: token, prefix: prefix, lane: lane),
            var session = sessions[id]
        else { return context.actions.append(.respond(connection, .localNotFound)) }
        do {
            let known = try session.poll(
                lane: (lane ?? nil) ?? 0, cursor: cursor, connection: connection, context: &context)
            sessions[id] = session
            if !known { return context.actions.append(.respond(connection, .localNotFound)) }
            if case .park(connection, _)? = context.actions.last { polls[connection] = id }
        } catch {
            sessions[id] = session
            endSession(id, context: &context)
            context.actions.append(.respond(connection, .localNotFound))
        }
    }

    // MARK: WebSocket carriers

    private mutating func upgrade(
        _ request: RelayRequest, prefix: String, connection: RelayConnectionID,
        context: inout RelayContext
    ) {
        guard request.method == "GET", request.values(of: "authorization").isEmpty,
            request.body.isEmpty,
            request.values(of: "upgrade").contains(where: { $0.lowercased() == "websocket" }),
            request.single("sec-websocket-version") == .one("13"),
            case .one = request.single("sec-websocket-key"),
            case .one(let offered) = request.single("sec-websocket-protocol"),
            let (token, lane) = Self.parseSubprotocol(offered), tokens.verify(token) == .session
        else { return context.actions.append(.respond(connection, .localNotFound)) }
        if applyRequestFaults(connection: connection, context: &context) { return }
        guard let id = sessionTokens[token], var session = sessions[id],
            profilePrefix(session.profile) == prefix,
            session.attachSocket(lane: lane ?? 0, connection: connection, now: context.now),
            (lane != nil) == (session.mode == .websocketLanes)
        else { return context.actions.append(.respond(connection, .localNotFound)) }
        sessions[id] = session
        sockets[connection] = id
        let accepted = RelayResponse(
            status: 101, reason: "Switching Protocols",
            headers: [
                (name: "Upgrade", value: "websocket"), (name: "Connection", value: "Upgrade"),
                (name: "Sec-WebSocket-Protocol", value: offered),
            ])
        context.actions.append(.acceptWebSocket(connection, accepted))
    }

    /// `tproxy-v1.<token>` → (token, nil); `tproxy-lane-v1.<token>.<id>` → (token, id).
    private static func parseSubprotocol(_ value: String) -> (token: String, lane: UInt32?)? {
        if value.hasPrefix("tproxy-v1.") {
            let token = String(value.dropFirst("tproxy-v1.".count))
            return token.utf8.count == 43 ? (token, nil) : nil
        }
        guard value.hasPrefix("tproxy-lane-v1.") else { return nil }
        let rest = value.dropFirst("tproxy-lane-v1.".count)
        guard rest.utf8.count > 44, rest.utf8.dropFirst(43).first == UInt8(ascii: ".") else {
            return nil
        }
        let token = String(rest.prefix(43))
        guard
            let id = CanonicalDecimal.parse(rest.dropFirst(44), maximum: UInt64(StreamID.max.rawValue)),
            id > 0
        else { return nil }
        return (token, UInt32(id))
    }
}
