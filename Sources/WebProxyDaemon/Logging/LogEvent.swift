/// What happened, as a stable machine-readable name (`WEBPROXY_EVENT=`) and, for events an
/// operator alerts on, a fixed journald `MESSAGE_ID=` (`journalctl MESSAGE_ID=…`).
public struct LogEvent: Sendable, Hashable, CustomStringConvertible {
    /// The `WEBPROXY_EVENT` value, lowercase with hyphens.
    public let name: String
    /// A 128-bit id (32 lowercase hex digits) that never changes between versions.
    public let messageID: String?

    /// An event without a message id.
    public init(_ name: String) {
        self.name = name
        self.messageID = nil
    }

    private init(_ name: String, messageID: String) {
        self.name = name
        self.messageID = messageID
    }

    /// A relay session was established (HELLO/WELCOME done).
    public static let sessionUp = LogEvent("session-up", messageID: "5927434ec37f4d6b909de91428803b92")
    /// An established session died; streams were closed and a new session will be tried.
    public static let sessionLost = LogEvent("session-lost", messageID: "693e825d20474ada96029e0c53af0e85")
    /// The relay could not be reached (DNS, TCP, TLS or HTTP failure before a session).
    public static let relayUnreachable = LogEvent(
        "relay-unreachable", messageID: "888969b135064e5fa4e39d315f12897c")
    /// The relay answered but gave us no session: wrong secret, host or base path, another
    /// carrier than pinned, or a malformed answer to session creation.
    public static let relayRejected = LogEvent("relay-rejected", messageID: "71364fc5a43846c29fed35c3bea46453")

    /// The events that carry a message id, for documentation and tests.
    public static let withMessageIDs: [LogEvent] = [sessionUp, sessionLost, relayUnreachable, relayRejected]

    public var description: String { name }
}
