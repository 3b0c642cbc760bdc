/// The most recently closed stream ids (PROTOCOL.md §4.4: the relay keeps 4096), so late frames
/// for them can be recognised and ignored. A bounded FIFO plus a set: O(1) insert, lookup
/// and eviction, memory fixed by `capacity`.
public struct StreamTombstones: Sendable {
    /// How many closed ids the reference relay remembers (`max_closed_stream_ids`).
    public static let defaultCapacity = 4096

    /// Most ids kept; inserting beyond it evicts the oldest.
    public let capacity: Int
    /// Ids in insertion order; once full, `oldest` is where the next eviction happens.
    private var ring: [StreamID] = []
    private var oldest = 0
    private var members: Set<StreamID> = []

    /// An empty set keeping at most `capacity` ids (at least one).
    public init(capacity: Int = StreamTombstones.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// Number of ids currently remembered.
    public var count: Int { members.count }

    /// Whether `id` is among the remembered closed ids.
    public func contains(_ id: StreamID) -> Bool { members.contains(id) }

    /// Remembers `id` as closed; returns the id evicted to make room, if any. An id that is
    /// already remembered is left where it is.
    @discardableResult
    public mutating func insert(_ id: StreamID) -> StreamID? {
        guard members.insert(id).inserted else { return nil }
        guard ring.count == capacity else {
            ring.append(id)
            return nil
        }
        let evicted = ring[oldest]
        ring[oldest] = id
        oldest = oldest + 1 == capacity ? 0 : oldest + 1
        members.remove(evicted)
        return evicted
    }
}
