import Glibc
internal import CWebProxyLinux

/// A POSIX signal the daemon turns into an event (never handled in a signal handler).
public struct ProcessSignal: Hashable, Sendable, CustomStringConvertible {
    /// The signal number.
    public let rawValue: Int32

    /// A signal by number.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// SIGTERM: stop gracefully.
    public static let terminate = ProcessSignal(rawValue: SIGTERM)
    /// SIGINT: stop (interactive).
    public static let interrupt = ProcessSignal(rawValue: SIGINT)
    /// SIGHUP: reload.
    public static let hangup = ProcessSignal(rawValue: SIGHUP)

    /// The signals the daemon watches.
    public static let daemonSignals: Set<ProcessSignal> = [.terminate, .interrupt, .hangup]

    public var description: String {
        switch rawValue {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        default: "signal \(rawValue)"
        }
    }

    /// Call once from `main` before any thread starts: ignores SIGPIPE process-wide and blocks
    /// `signals` in the calling thread, so every thread created afterwards inherits the mask
    /// and the signals wait for an event loop's `watchSignals` instead of killing the process.
    public static func prepareProcess(blocking signals: Set<ProcessSignal> = daemonSignals) throws(NetError) {
        try ignoreBrokenPipes()
        let numbers = signals.map(\.rawValue).sorted()
        _ = try Syscall.retrying("pthread_sigmask") {
            numbers.withUnsafeBufferPointer { cwpl_block_signals($0.baseAddress, Int32($0.count)) }
        }
    }

    /// Ignores SIGPIPE process-wide: a write to a closed socket then fails with EPIPE instead
    /// of killing the process. (Sends also pass MSG_NOSIGNAL; this covers every other path.)
    public static func ignoreBrokenPipes() throws(NetError) {
        _ = try Syscall.retrying("signal(SIGPIPE)") { cwpl_ignore_sigpipe() }
    }

    /// Sends this signal to the calling thread only (tests use it on a loop thread that blocks it).
    func raiseInCurrentThread() throws(NetError) {
        let number = rawValue
        _ = try Syscall.retrying("tgkill") { cwpl_raise_in_thread(number) }
    }
}
