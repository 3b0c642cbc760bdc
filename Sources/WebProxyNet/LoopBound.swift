/// State that belongs to one event loop's thread, kept in a class that other threads hold
/// (one that is `Sendable` because it only hands work to its loop). Every read and write
/// checks the thread, in release builds too, as NIO's `NIOLoopBoundBox` does: a touch from
/// another thread stops the process instead of racing. It turns "touched on the loop thread
/// only" from a comment into a check.
public final class LoopBound<Value>: @unchecked Sendable {
    /// The loop whose thread may touch the value.
    public let loop: EventLoop
    private var storage: Value

    /// Holds `value`, made on `loop`'s thread (checked).
    public init(_ value: Value, loop: EventLoop) {
        loop.preconditionInEventLoop()
        self.loop = loop
        storage = value
    }

    /// Holds `value`, made on any thread and handed over (`sending`): the compiler checks
    /// that the maker keeps no reference into it.
    public init(handingOver value: sending Value, loop: EventLoop) {
        self.loop = loop
        storage = value
    }

    /// The value; on the loop thread only.
    public var value: Value {
        get {
            loop.preconditionInEventLoop()
            return storage
        }
        _modify {
            loop.preconditionInEventLoop()
            yield &storage
        }
    }
}
