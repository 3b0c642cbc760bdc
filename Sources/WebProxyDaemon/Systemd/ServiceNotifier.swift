#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Talks to systemd's notification socket (`Type=notify`): readiness, status, watchdog
/// pings, reload and stop. Without `NOTIFY_SOCKET` every call is a no-op, so the daemon
/// behaves the same in a terminal.
///
/// The datagrams are sent directly (no `sd_notify`), so the socket comes from the
/// `environment` passed in rather than the process environment.
public final class ServiceNotifier: Sendable {
    /// Where notifications go; nil when not run by systemd.
    public let socketAddress: NotifySocketAddress?
    /// How often systemd expects `WATCHDOG=1` at the latest (`WATCHDOG_USEC`); nil when the
    /// watchdog is off or meant for another process.
    public let watchdogTimeout: Duration?

    private let fd: Int32
    private let throttle: Mutex<StatusThrottle>

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`.
    public init(environment: [String: String], processID: pid_t = getpid(),
                statusInterval: Duration = .seconds(1)) {
        socketAddress = environment["NOTIFY_SOCKET"].flatMap(NotifySocketAddress.init(parsing:))
        fd = socketAddress == nil ? -1 : socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        throttle = Mutex(StatusThrottle(minimumInterval: statusInterval))
        watchdogTimeout = socketAddress == nil ? nil
            : Self.watchdogTimeout(environment: environment, processID: processID)
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// True when notifications actually go somewhere.
    public var isEnabled: Bool { fd >= 0 }

    /// How often to send `WATCHDOG=1`: half the timeout, as sd_watchdog_enabled(3) advises.
    public var watchdogPingInterval: Duration? { watchdogTimeout.map { $0 / 2 } }

    /// `READY=1`: start-up (or a reload) finished.
    public func ready() { send("READY=1") }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC now), which systemd 253+
    /// requires to match the reload to the request and 252 ignores. Follow with `ready()`.
    public func reloading(monotonicNow: Duration) {
        send("RELOADING=1\nMONOTONIC_USEC=\(Self.microseconds(monotonicNow))")
    }

    /// `STOPPING=1`: graceful shutdown began.
    public func stopping() { send("STOPPING=1") }

    /// `WATCHDOG=1`: the main loop is alive.
    public func watchdog() { send("WATCHDOG=1") }

    /// `STATUS=…` for `systemctl status`, at most once per status interval; a newer status
    /// offered too soon replaces the pending one (send it with `flushStatus(now:)`).
    public func status(_ text: String, now: Duration) {
        let single = text.replacing("\n", with: " ")
        if let due = throttle.withLock({ $0.offer(single, now: now) }) { send("STATUS=" + due) }
    }

    /// Sends a status that was held back, if its time has come.
    public func flushStatus(now: Duration) {
        if let due = throttle.withLock({ $0.flush(now: now) }) { send("STATUS=" + due) }
    }

    /// When a held-back status becomes due (for the event loop's timer); nil if none.
    public var pendingStatusDeadline: Duration? { throttle.withLock { $0.pendingDeadline } }

    /// Sends one datagram without ever blocking the event loop (systemd drains its socket
    /// continuously); failures are ignored, as sd_notify(3) callers do.
    private func send(_ message: String) {
        guard fd >= 0, let socketAddress else { return }
        var bytes = Array(message.utf8)
        socketAddress.withSockaddr { address, length in
            _ = bytes.withUnsafeMutableBytes { buffer in
                sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), address, length)
            }
        }
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    /// `WATCHDOG_USEC` when set, positive, and (if `WATCHDOG_PID` is set) meant for us.
    private static func watchdogTimeout(environment: [String: String], processID: pid_t) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0,
              usec <= UInt64(Int64.max)
        else { return nil }
        if let pid = environment["WATCHDOG_PID"], pid_t(pid) != processID { return nil }
        return .microseconds(Int64(usec))
    }
}

/// The `NOTIFY_SOCKET` address: a filesystem path, or `@name` in the abstract namespace.
public struct NotifySocketAddress: Sendable, Equatable, CustomStringConvertible {
    /// The bytes of `sun_path` (a leading NUL for abstract names), without a terminator.
    public let pathBytes: [UInt8]

    /// Accepts `/absolute/path` and `@abstract`; nil for anything else or too long.
    public init?(parsing text: String) {
        var bytes = Array(text.utf8)
        switch bytes.first {
        case UInt8(ascii: "/"): break
        case UInt8(ascii: "@") where bytes.count > 1: bytes[0] = 0
        default: return nil
        }
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard bytes.count < capacity, !bytes.dropFirst().contains(0) else { return nil }
        pathBytes = bytes
    }

    /// True for `@name` addresses.
    public var isAbstract: Bool { pathBytes.first == 0 }

    public var description: String {
        isAbstract ? "@" + String(decoding: pathBytes.dropFirst(), as: UTF8.self)
            : String(decoding: pathBytes, as: UTF8.self)
    }

    /// Calls `body` with the `sockaddr_un` and its exact length (abstract names are not
    /// NUL-terminated: the length delimits them).
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (index, byte) in pathBytes.enumerated() { path[index] = byte }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        let length = socklen_t(pathOffset + pathBytes.count + (isAbstract ? 0 : 1))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
