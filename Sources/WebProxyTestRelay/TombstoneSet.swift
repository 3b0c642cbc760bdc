import WebProxyCore

/// The most recently closed stream ids of a session (oldest evicted first), so late frames
/// for them are ignored and their ids are never opened again.
struct TombstoneSet: Sendable {
    private var members: Set<StreamID> = []
    private var order: [StreamID] = []
    private var start = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = max(capacity, 1) }

    func contains(_ id: StreamID) -> Bool { members.contains(id) }

    /// Adds `id`; returns the id evicted to stay within capacity, if any.
    mutating func insert(_ id: StreamID) -> StreamID? {
        guard members.insert(id).inserted else { return nil }
        order.append(id)
        guard members.count > capacity else { return nil }
        let evicted = order[start]
        start += 1
        members.remove(evicted)
        if start >= 1024, start * 2 >= order.count {
            order.removeFirst(start)
            start = 0
        }
        return evicted
    }
}
