#if canImport(Glibc)
import Glibc
#endif

/// Blocking work (reading files, building TLS contexts) on a detached POSIX thread of its
/// own: never on an event loop, and never on Swift's cooperative pool, which it would starve.
public enum BlockingWork {
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(NetError) {
        let thread = try Syscall.spawnThread(name: name, body)
        pthread_detach(thread)
    }
}
