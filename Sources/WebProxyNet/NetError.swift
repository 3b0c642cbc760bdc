internal import CWebProxyLinux

/// An error from the network layer: a failed system call, a resolution, a timeout or an
/// upstream proxy. Messages never carry hostnames' secrets, credentials or payload bytes.
public struct NetError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Raw: Hashable, Sendable {
            case syscall, resolution, timedOut, cancelled, proxy, writeBufferFull, closed
        }
        private let raw: Raw
        private init(_ raw: Raw) { self.raw = raw }

        /// A system call failed; `errno` and `call` say which and why.
        public static let syscall = Code(.syscall)
        /// Name resolution (getaddrinfo) failed or returned no usable address.
        public static let resolution = Code(.resolution)
        /// A connect, dial or handshake deadline passed.
        public static let timedOut = Code(.timedOut)
        /// The operation was cancelled or its event loop stopped.
        public static let cancelled = Code(.cancelled)
        /// An upstream proxy refused, failed or spoke a malformed protocol.
        public static let proxy = Code(.proxy)
        /// A write would exceed the connection's write-queue limit.
        public static let writeBufferFull = Code(.writeBufferFull)
        /// The connection is already closed.
        public static let closed = Code(.closed)

        public var description: String {
            switch raw {
            case .syscall: "syscall"
            case .resolution: "resolution"
            case .timedOut: "timedOut"
            case .cancelled: "cancelled"
            case .proxy: "proxy"
            case .writeBufferFull: "writeBufferFull"
            case .closed: "closed"
            }
        }
    }

    /// The kind of failure.
    public let code: Code
    /// The errno of a failed system call (or the peer's SO_ERROR); 0 when not applicable.
    public let errno: Int32
    /// The system call or stage that failed, e.g. `"connect"`, `"getaddrinfo"`, `"socks5"`.
    public let call: String
    /// Human-readable detail: strerror text for syscalls, otherwise a fixed message.
    public let message: String

    /// An error of any code with a fixed message.
    public init(_ code: Code, call: String, message: String, errno: Int32 = 0) {
        self.code = code
        self.call = call
        self.message = message
        self.errno = errno
    }

    /// A failed system call, with its strerror text.
    public static func syscall(_ call: String, errno: Int32) -> NetError {
        NetError(.syscall, call: call, message: NetError.strerror(errno), errno: errno)
    }

    public var description: String {
        if errno != 0 {
            return "\(call): \(message) (errno \(errno))"
        }
        return "\(call): \(message)"
    }

    /// The strerror text of `errno`.
    static func strerror(_ errno: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard let base = buffer.baseAddress,
                let text = cwpl_strerror(errno, base, buffer.count)
            else { return "unknown error \(errno)" }
            return String(cString: text)
        }
    }
}
