/// What the control socket answers to `status`: the daemon and each relay, as JSON with
/// snake_case keys. Holds no secret, token, capability or URL.
struct StatusDocument: Equatable, Sendable {
    /// The daemon's version.
    var version: String
    /// The daemon's process id.
    var pid: Int32
    /// When the document was made (RFC 3339, UTC).
    var generatedAt: String
    /// The running relays, in configuration order.
    var relays: [RelayStatusEntry]
}

/// One relay in `StatusDocument`.
struct RelayStatusEntry: Equatable, Sendable {
    /// What a relay is doing, from the operator's point of view.
    enum State: String, Sendable {
        /// Building its first session.
        case starting
        /// A session is up.
        case up
        /// Building a new session after a failure or a lost session.
        case rebuilding
        /// No session; waiting out the backoff before the next attempt.
        case down
        /// Shutting down.
        case stopping
    }

    /// When and why the last session failed.
    struct LastError: Equatable, Sendable {
        /// `SessionFailure.Kind` raw value, e.g. `unreachable`.
        var `class`: String
        var message: String
        var secondsAgo: Int
        /// RFC 3339, UTC.
        var at: String
    }

    /// A session beside the primary one, for file transfers (`SessionRole`).
    struct SideSession: Equatable, Sendable {
        /// `media` or `transfer`.
        var role: String
        /// `starting`, `up` or `down` (lost or refused: its connections go to the primary
        /// session while it is rebuilt).
        var state: State
        /// Local connections it carries now.
        var streams: Int
    }

    var name: String
    var listen: String
    var state: State
    /// The carrier of the session that is up.
    var carrier: String?
    var streams: Int
    var refusedConnections: Int
    var bytesUp: Int
    var bytesDown: Int
    var sessionsEstablished: Int
    var reconnects: Int
    var lastError: LastError?
    /// The side sessions started so far, media before transfer (none until a transfer opens).
    var sideSessions: [SideSession] = []
}

extension StatusDocument {
    /// Pretty-printed JSON with sorted snake_case keys, ending in a newline. A relay's
    /// `carrier` and `last_error` are left out while they have no value.
    func encoded() -> [UInt8] {
        let relays = relays.map { relay -> JSONValue in
            var fields: [String: JSONValue] = [
                "name": .string(relay.name), "listen": .string(relay.listen), "state": .string(relay.state.rawValue),
                "streams": .integer(relay.streams), "refused_connections": .integer(relay.refusedConnections),
                "bytes_up": .integer(relay.bytesUp), "bytes_down": .integer(relay.bytesDown),
                "sessions_established": .integer(relay.sessionsEstablished), "reconnects": .integer(relay.reconnects),
                "side_sessions": .array(
                    relay.sideSessions.map {
                        .object(["role": .string($0.role), "state": .string($0.state.rawValue), "streams": .integer($0.streams)])
                    }),
            ]
            fields["carrier"] = relay.carrier.map(JSONValue.string)
            fields["last_error"] = relay.lastError.map {
                .object([
                    "class": .string($0.class), "message": .string($0.message),
                    "seconds_ago": .integer($0.secondsAgo), "at": .string($0.at),
                ])
            }
            return .object(fields)
        }
        let document = JSONValue.object([
            "version": .string(version), "pid": .integer(Int(pid)), "generated_at": .string(generatedAt),
            "relays": .array(relays),
        ])
        return Array((document.prettyPrinted + "\n").utf8)
    }

    /// Reads a document the control socket sent. Keys it does not know are ignored.
    init(decoding bytes: [UInt8]) throws(JSONValue.Invalid) {
        let document = try JSONFields(try JSONValue(parsing: bytes))
        guard let pid = Int32(exactly: try document.integer("pid")) else { throw JSONValue.Invalid() }
        self.init(
            version: try document.string("version"), pid: pid, generatedAt: try document.string("generated_at"),
            relays: try document.objects("relays").map { relay throws(JSONValue.Invalid) in try RelayStatusEntry(relay) })
    }
}

extension RelayStatusEntry {
    fileprivate init(_ relay: JSONFields) throws(JSONValue.Invalid) {
        self.init(
            name: try relay.string("name"), listen: try relay.string("listen"), state: try relay.state("state"),
            carrier: try relay.optionalString("carrier"), streams: try relay.integer("streams"),
            refusedConnections: try relay.integer("refused_connections"), bytesUp: try relay.integer("bytes_up"),
            bytesDown: try relay.integer("bytes_down"), sessionsEstablished: try relay.integer("sessions_established"),
            reconnects: try relay.integer("reconnects"),
            lastError: try relay.optionalObject("last_error").map { error throws(JSONValue.Invalid) in
                LastError(
                    class: try error.string("class"), message: try error.string("message"),
                    secondsAgo: try error.integer("seconds_ago"), at: try error.string("at"))
            },
            sideSessions: try relay.objects("side_sessions").map { side throws(JSONValue.Invalid) in
                SideSession(role: try side.string("role"), state: try side.state("state"), streams: try side.integer("streams"))
            })
    }
}

/// One JSON object's fields, read by key with the type each must have.
fileprivate struct JSONFields {
    let fields: [String: JSONValue]

    init(_ value: JSONValue) throws(JSONValue.Invalid) {
        guard case .object(let fields) = value else { throw JSONValue.Invalid() }
        self.fields = fields
    }

    private func value(_ key: String) throws(JSONValue.Invalid) -> JSONValue {
        guard let value = fields[key] else { throw JSONValue.Invalid() }
        return value
    }

    func string(_ key: String) throws(JSONValue.Invalid) -> String {
        guard case .string(let text) = try value(key) else { throw JSONValue.Invalid() }
        return text
    }

    func integer(_ key: String) throws(JSONValue.Invalid) -> Int {
        guard case .integer(let number) = try value(key) else { throw JSONValue.Invalid() }
        return number
    }

    /// An array whose every item is an object.
    func objects(_ key: String) throws(JSONValue.Invalid) -> [JSONFields] {
        guard case .array(let items) = try value(key) else { throw JSONValue.Invalid() }
        return try items.map { item throws(JSONValue.Invalid) in try JSONFields(item) }
    }

    func state(_ key: String) throws(JSONValue.Invalid) -> RelayStatusEntry.State {
        guard let state = RelayStatusEntry.State(rawValue: try string(key)) else { throw JSONValue.Invalid() }
        return state
    }

    /// A string, or nil when the key is absent or `null`.
    func optionalString(_ key: String) throws(JSONValue.Invalid) -> String? {
        guard let value = fields[key], value != .null else { return nil }
        return try string(key)
    }

    /// An object, or nil when the key is absent or `null`.
    func optionalObject(_ key: String) throws(JSONValue.Invalid) -> JSONFields? {
        guard let value = fields[key], value != .null else { return nil }
        return try JSONFields(value)
    }
}
