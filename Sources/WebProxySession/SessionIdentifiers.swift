/// An accepted local (loopback) connection, numbered by the I/O shell.
public struct ConnectionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "connection \(rawValue)" }
}

/// One attempt of one HTTP request, numbered by the session machines. A retry is a new
/// attempt with a new id, so a late answer to an abandoned attempt is recognised and dropped.
public struct RequestID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: RequestID, b: RequestID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "request \(rawValue)" }
}

/// One WebSocket, numbered by the session machines.
public struct SocketID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: SocketID, b: SocketID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "socket \(rawValue)" }
}

/// A timer the session machines ask the shell to run. Scheduling an id that is already
/// scheduled moves it; a timer that fires after it was cancelled or moved is ignored.
public enum SessionTimer: Hashable, Sendable {
    /// Resend the request whose attempt `RequestID` failed.
    case retry(RequestID)
    /// Fetch a new bridge page and build a new session.
    case rebuild
    /// A local connection waiting for a session gives up.
    case admission(ConnectionID)
    /// Check a WebSocket for silence: ping it, or declare it lost.
    case socketLiveness(SocketID)
    /// websocket-lanes: the session has had no lane for the idle period; recreate it.
    case laneIdle
}

/// Hands out request and socket ids, unique for the life of the supervisor; supervisors
/// that share a shell start from bases far enough apart never to meet.
struct IdentifierSource: Sendable {
    private var next: UInt64

    init(base: UInt64 = 0) { next = base + 1 }

    mutating func request() -> RequestID {
        defer { next += 1 }
        return RequestID(next)
    }

    mutating func socket() -> SocketID {
        defer { next += 1 }
        return SocketID(next)
    }
}
