import FoundationEssentials

/// What the control socket answers to `status`: the daemon and each relay, as JSON with
/// snake_case keys. Holds no secret, token, capability or URL.
struct StatusDocument: Codable, Equatable, Sendable {
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
struct RelayStatusEntry: Codable, Equatable, Sendable {
    /// What a relay is doing, from the operator's point of view.
    enum State: String, Codable, Sendable {
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
    struct LastError: Codable, Equatable, Sendable {
        /// `SessionFailure.Kind` raw value, e.g. `unreachable`.
        var `class`: String
        var message: String
        var secondsAgo: Int
        /// RFC 3339, UTC.
        var at: String
    }

    /// A session beside the primary one, for file transfers (`SessionRole`).
    struct SideSession: Codable, Equatable, Sendable {
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
    /// Pretty-printed JSON with sorted keys, ending in a newline.
    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and integers cannot fail.
        return ((try? encoder.encode(self)).map(Array.init) ?? Array("{}".utf8)) + [UInt8(ascii: "\n")]
    }

    /// Reads a document the control socket sent.
    init(decoding bytes: [UInt8]) throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        self = try decoder.decode(StatusDocument.self, from: Data(bytes))
    }
}
