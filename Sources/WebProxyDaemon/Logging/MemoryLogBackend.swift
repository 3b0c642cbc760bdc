import Synchronization

/// Keeps records in memory, for tests.
public final class MemoryLogBackend: LogBackend {
    private let storage = Mutex<[LogRecord]>([])

    public init() {}

    public func write(_ record: LogRecord) {
        storage.withLock { $0.append(record) }
    }

    /// Every record written so far, in order.
    public var records: [LogRecord] { storage.withLock { $0 } }
}
