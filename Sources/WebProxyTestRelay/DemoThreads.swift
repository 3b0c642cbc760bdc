#if canImport(Glibc)
import Glibc
#endif

/// Plain POSIX threads for the demo's blocking socket I/O (never Swift tasks: a blocked
/// cooperative thread would starve everything else on the pool).
enum DemoThreads {
    /// Runs every body on its own thread and returns when all have finished. A body whose
    /// thread cannot be created runs on the calling thread instead, after the others started.
    static func run(_ bodies: [@Sendable () -> Void]) {
        final class Box {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var threads: [pthread_t] = []
        var inline: [@Sendable () -> Void] = []
        for body in bodies {
            var thread = pthread_t()
            let argument = Unmanaged.passRetained(Box(body)).toOpaque()
            let result = pthread_create(&thread, nil, { argument in
                guard let argument else { return nil }
                Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
                return nil
            }, argument)
            if result == 0 {
                threads.append(thread)
            } else {
                Unmanaged<Box>.fromOpaque(argument).release()
                inline.append(body)
            }
        }
        for body in inline { body() }
        for thread in threads { pthread_join(thread, nil) }
    }
}
