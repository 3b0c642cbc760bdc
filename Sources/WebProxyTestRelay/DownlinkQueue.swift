import WebProxyCore

/// The FIFO of relay→client frames waiting for a poll or a WebSocket write: consecutive DATA
/// of one stream is merged (up to a limit), and a stream's WINDOW grants are summed into the
/// one WINDOW item still waiting for it, which keeps its place in the queue.
struct DownlinkQueue: Sendable {
    enum Item: Sendable {
        case data(StreamID, [UInt8])
        case window(StreamID, UInt32)
        case close(StreamID)

        var stream: StreamID {
            switch self {
            case .data(let s, _), .window(let s, _), .close(let s): s
            }
        }

        /// Payload bytes, as charged to the pending budget (plus the per-item charge).
        var payloadCount: Int {
            switch self {
            case .data(_, let bytes): bytes.count
            case .window: 4
            case .close: 0
            }
        }

        var frame: Frame {
            switch self {
            case .data(let s, let bytes): .data(stream: s, payload: bytes[...])
            case .window(let s, let delta): .window(stream: s, delta: delta)
            case .close(let s): .close(stream: s)
            }
        }
    }

    private var items: [Item] = []
    private var start = 0
    /// Index in `items` of the queued WINDOW of each stream, while it is still queued.
    private var windowSlot: [StreamID: Int] = [:]

    var isEmpty: Bool { start == items.count }

    /// Queues DATA, merging it into the last item when that is DATA of the same stream and the
    /// merged payload stays within `mergeLimit`. Returns whether a new item was added.
    mutating func appendData(_ bytes: ArraySlice<UInt8>, stream: StreamID, mergeLimit: Int) -> Bool
    {
        if start < items.count, case .data(let s, var payload) = items[items.count - 1],
            s == stream,
            payload.count + bytes.count <= mergeLimit
        {
            items[items.count - 1] = .close(s)  // release the payload's storage before appending
            payload.append(contentsOf: bytes)
            items[items.count - 1] = .data(s, payload)
            return false
        }
        items.append(.data(stream, Array(bytes)))
        return true
    }

    /// Adds `delta` to the stream's queued WINDOW (saturating at 2^32-1) or queues a new one.
    /// Returns whether a new item was added.
    mutating func addWindow(_ delta: UInt32, stream: StreamID) -> Bool {
        if let slot = windowSlot[stream], case .window(_, let queued) = items[slot] {
            let (sum, overflow) = queued.addingReportingOverflow(delta)
            items[slot] = .window(stream, overflow ? .max : sum)
            return false
        }
        windowSlot[stream] = items.count
        items.append(.window(stream, delta))
        return true
    }

    /// Queues CLOSE after everything already queued.
    mutating func appendClose(stream: StreamID) {
        items.append(.close(stream))
    }

    /// Takes frames from the front while the encoded batch stays within `maxBytes` and
    /// `maxFrames` (always at least one frame). Returns the encoded batch and what it held.
    mutating func takeBatch(maxBytes: Int, maxFrames: Int) -> (
        body: [UInt8], bytes: Int, items: Int
    ) {
        var body: [UInt8] = []
        var payloadBytes = 0
        var taken = 0
        while start < items.count, taken < maxFrames {
            let item = items[start]
            let size = Frame.headerLength + item.payloadCount
            if taken > 0, body.count + size > maxBytes { break }
            item.frame.encode(into: &body)
            payloadBytes += item.payloadCount
            if case .window(let s, _) = item { windowSlot[s] = nil }
            items[start] = .close(item.stream)  // drop the payload reference
            start += 1
            taken += 1
        }
        compact()
        return (body, payloadBytes, taken)
    }

    /// Removes every queued frame of `stream` (a CLOSE aborts what was not sent yet).
    /// Returns the payload bytes and items removed.
    mutating func removeAll(of stream: StreamID) -> (bytes: Int, items: Int) {
        var kept: [Item] = []
        var removedBytes = 0
        var removedItems = 0
        for item in items[start...] {
            if item.stream == stream {
                removedBytes += item.payloadCount
                removedItems += 1
            } else {
                kept.append(item)
            }
        }
        items = kept
        start = 0
        rebuildWindowSlots()
        return (removedBytes, removedItems)
    }

    /// Removes everything. Returns the payload bytes and items removed.
    mutating func removeAll() -> (bytes: Int, items: Int) {
        let removed = items[start...].reduce((bytes: 0, items: 0)) {
            ($0.bytes + $1.payloadCount, $0.items + 1)
        }
        items = []
        start = 0
        windowSlot = [:]
        return removed
    }

    private mutating func compact() {
        if start == items.count {
            items.removeAll(keepingCapacity: true)
            start = 0
            windowSlot = [:]
        } else if start >= 1024, start * 2 >= items.count {
            items.removeFirst(start)
            start = 0
            rebuildWindowSlots()
        }
    }

    private mutating func rebuildWindowSlots() {
        windowSlot = [:]
        for index in start..<items.count {
            if case .window(let s, _) = items[index] { windowSlot[s] = index }
        }
    }
}
