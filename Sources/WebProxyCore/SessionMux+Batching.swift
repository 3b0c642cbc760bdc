/// Uplink batching. A shared batch takes control frames first (PONG, CLOSE, WINDOW, OPEN),
/// then DATA in chunks of at most 64 KiB, one chunk per stream in turn, so a bulk stream
/// cannot starve a chatty one; the turn order carries over from batch to batch. A lane batch
/// holds frames of one stream only and a lane's first batch starts with its OPEN; lane 0
/// carries PONGs. Work is proportional to the frames emitted, never to bytes or streams².
extension SessionMux {
    /// The smallest batch every uplink frame fits in (a PONG with a 64-byte token); a smaller
    /// `maxBytes` is raised to it.
    public static let minimumBatchBytes = Frame.headerLength + FrameLimits.maxPingToken

    /// Whether `nextBatch` has something to send (always false for the per-stream layout and
    /// after the session ended).
    public var hasPendingUplink: Bool {
        guard !isFinished, configuration.uplink == .shared else { return false }
        return !pendingPongs.isEmpty || !pendingCloses.isEmpty || !pendingWindows.isEmpty
            || !pendingOpens.isEmpty || !dataRotation.isEmpty
    }

    /// Whether `nextLaneBatch(for:)` has something to send on `lane` (0 is the session lane).
    /// Always false for the shared layout and after the session ended. A lane whose stream was
    /// closed before its OPEN went out never has anything: cancel its handshake.
    public func hasPendingUplink(for lane: StreamID) -> Bool {
        guard !isFinished, configuration.uplink == .perStream else { return false }
        if lane.isSession { return !pendingPongs.isEmpty }
        if pendingLaneCloses.contains(lane) { return true }
        guard let state = streams[lane] else { return false }
        return state.openPending || state.windowPending || !state.queue.isEmpty
    }

    /// The next shared-uplink batch, encoded, or nil when there is nothing to send. Holds
    /// whole frames only, at most `maxBytes` bytes (raised to `minimumBatchBytes`, capped at
    /// 2 MiB) and `maxFrames` frames (1...4096).
    public mutating func nextBatch(
        maxBytes: Int = FrameLimits.defaultBatchBytes,
        maxFrames: Int = FrameLimits.maxFramesPerBatch,
        paced allowance: UplinkAllowance? = nil
    ) -> [UInt8]? {
        guard hasPendingUplink else { return nil }
        var plan = BatchPlan(maxBytes: maxBytes, maxFrames: maxFrames, frames: takeScratchFrames())

        while let token = pendingPongs.first, plan.add(.pong(token: token)) {
            _ = pendingPongs.popFirst()
        }
        while let id = pendingCloses.first, plan.add(.close(stream: id)) {
            _ = pendingCloses.popFirst()
        }
        while let id = pendingWindows.first, plan.hasRoom(for: SessionMux.windowFrameLength) {
            _ = pendingWindows.popFirst()
            if let index = streams.index(forKey: id), let frame = takeWindowUpdate(at: index) {
                plan.add(frame)
            }
        }
        while let id = pendingOpens.first, plan.add(.open(stream: id)) {
            _ = pendingOpens.popFirst()
            streams[id]?.openPending = false
        }
        // Every OPEN that did not fit leaves no room for DATA either, and queued bytes are
        // within credit, so the guard below never stops a rotation that could go on. A bulk
        // stream the allowance holds back keeps its turn for the next batch while lighter
        // streams behind it go on.
        var bulkLeft = allowance?.bulkBytes ?? .max
        var heldBack = 0
        while plan.dataRoom > 0, heldBack < dataRotation.count, let id = dataRotation.popFirst() {
            guard let index = streams.index(forKey: id) else { continue }
            let bulk = allowance.flatMap { bulkRoom(at: index, $0, batchLeft: bulkLeft) }
            let room = bulk.map { min($0, plan.dataRoom) } ?? plan.dataRoom
            guard room > 0 || streams.values[index].openPending else {
                dataRotation.append(id)
                heldBack += 1
                continue
            }
            let payload = streams.values[index].openPending ? [] : takeData(at: index, max: room)
            guard !payload.isEmpty else {
                dataRotation.append(id)
                break
            }
            heldBack = 0
            if bulk != nil { bulkLeft -= payload.count }
            plan.add(.data(stream: id, payload: payload))
            if !streams.values[index].queue.isEmpty {
                dataRotation.append(id)
            } else {
                closeIfFinished(id)
            }
        }
        return finish(&plan)
    }

    /// The next batch for one lane, encoded, or nil when the lane has nothing to send. Every
    /// frame carries the lane's stream id; a lane's first batch starts with its OPEN; lane 0
    /// carries only PONGs. Limits as in `nextBatch`.
    public mutating func nextLaneBatch(
        for lane: StreamID,
        maxBytes: Int = FrameLimits.defaultBatchBytes,
        maxFrames: Int = FrameLimits.maxFramesPerBatch,
        paced allowance: UplinkAllowance? = nil
    ) -> [UInt8]? {
        guard hasPendingUplink(for: lane) else { return nil }
        var plan = BatchPlan(maxBytes: maxBytes, maxFrames: maxFrames, frames: takeScratchFrames())

        if lane.isSession {
            while let token = pendingPongs.first, plan.add(.pong(token: token)) {
                _ = pendingPongs.popFirst()
            }
        } else if pendingLaneCloses.remove(lane) != nil {
            plan.add(.close(stream: lane))
        } else if let index = streams.index(forKey: lane) {
            if streams.values[index].openPending, plan.add(.open(stream: lane)) {
                streams.values[index].openPending = false
            }
            if streams.values[index].windowPending, plan.hasRoom(for: SessionMux.windowFrameLength),
                let frame = takeWindowUpdate(at: index)
            {
                plan.add(frame)
            }
            var bulkLeft = allowance.flatMap { bulkRoom(at: index, $0, batchLeft: $0.bulkBytes) } ?? .max
            while !streams.values[index].openPending, plan.dataRoom > 0, bulkLeft > 0 {
                let payload = takeData(at: index, max: min(plan.dataRoom, bulkLeft))
                guard !payload.isEmpty else { break }
                bulkLeft -= payload.count
                plan.add(.data(stream: lane, payload: payload))
            }
            closeIfFinished(lane)
        }
        return finish(&plan)
    }

    private static let windowFrameLength = Frame.headerLength + 4

    /// What an uplink pacer lets a batch carry: at most `bulkBytes` of DATA from streams with
    /// more than `lightStreamBytes` queued (bulk), and no bulk stream more than
    /// `streamInFlight` sent and not yet returned by WINDOW; lighter streams (chat) are not held
    /// back. A per-stream bound keeps a stream whose relay backend stopped reading from holding
    /// the others back.
    public struct UplinkAllowance: Hashable, Sendable {
        public var bulkBytes: Int
        public var streamInFlight: Int
        public var lightStreamBytes: Int

        public init(bulkBytes: Int, streamInFlight: Int, lightStreamBytes: Int) {
            self.bulkBytes = bulkBytes
            self.streamInFlight = streamInFlight
            self.lightStreamBytes = lightStreamBytes
        }
    }

    /// The DATA a bulk stream may add to the batch under `allowance`; nil for a light stream.
    private func bulkRoom(
        at index: Dictionary<StreamID, StreamState>.Index, _ allowance: UplinkAllowance, batchLeft: Int
    ) -> Int? {
        let state = streams.values[index]
        guard state.queue.byteCount > allowance.lightStreamBytes else { return nil }
        let inFlight = state.unacknowledged - state.queue.byteCount
        return max(0, min(batchLeft, allowance.streamInFlight - inFlight))
    }

    /// Turns a stream's pending receive credit into one WINDOW frame and counts it as given.
    private mutating func takeWindowUpdate(at index: Dictionary<StreamID, StreamState>.Index) -> Frame? {
        let id = streams.keys[index]
        let delta = UInt32(clamping: streams.values[index].pendingCredit)
        streams.values[index].pendingCredit -= Int(delta)
        streams.values[index].windowPending = false
        guard delta > 0 else { return nil }
        streams.values[index].receiveWindow.grant(delta)
        return .window(stream: id, delta: delta)
    }

    /// Takes up to `limit` queued bytes of a stream, never more than its send credit.
    private mutating func takeData(at index: Dictionary<StreamID, StreamState>.Index, max limit: Int) -> ArraySlice<UInt8> {
        let count = min(limit, streams.values[index].queue.frontCount, streams.values[index].sendWindow.available)
        guard count > 0, streams.values[index].sendWindow.consume(count) else { return [] }
        queuedBytes -= count
        uplinkBytesSent += count
        return streams.values[index].queue.removeFront(count)
    }

    private mutating func takeScratchFrames() -> [Frame] {
        var frames: [Frame] = []
        swap(&frames, &scratchFrames)
        return frames
    }

    /// Encodes the planned frames into one exactly sized buffer and keeps the frame list for
    /// the next batch.
    private mutating func finish(_ plan: inout BatchPlan) -> [UInt8]? {
        defer {
            plan.frames.removeAll(keepingCapacity: true)
            swap(&plan.frames, &scratchFrames)
        }
        guard !plan.frames.isEmpty else { return nil }
        var batch: [UInt8] = []
        batch.reserveCapacity(plan.byteCount)
        for frame in plan.frames { frame.encode(into: &batch) }
        return batch
    }

    /// Frames chosen for one batch, and the limits they must respect.
    struct BatchPlan {
        let maxBytes: Int
        let maxFrames: Int
        var frames: [Frame]
        private(set) var byteCount = 0

        init(maxBytes: Int, maxFrames: Int, frames: [Frame]) {
            self.maxBytes = min(max(maxBytes, SessionMux.minimumBatchBytes), FrameLimits.defaultBatchBytes)
            self.maxFrames = min(max(maxFrames, 1), FrameLimits.maxFramesPerBatch)
            self.frames = frames
        }

        func hasRoom(for encodedLength: Int) -> Bool {
            frames.count < maxFrames && encodedLength <= maxBytes - byteCount
        }

        /// Largest DATA payload that still fits (0: none).
        var dataRoom: Int {
            guard frames.count < maxFrames else { return 0 }
            return max(0, min(FrameLimits.clientDataChunk, maxBytes - byteCount - Frame.headerLength))
        }

        /// Adds `frame` if it fits.
        @discardableResult
        mutating func add(_ frame: Frame) -> Bool {
            guard hasRoom(for: frame.encodedLength) else { return false }
            frames.append(frame)
            byteCount += frame.encodedLength
            return true
        }
    }

    /// A first-in first-out queue: an array and a moving head, compacted as it drains. A
    /// taken element's slot is emptied at once: a consumed slice left there would keep its
    /// whole read buffer alive until the next compaction.
    struct FIFO<Element> {
        private var elements: [Element?] = []
        private var head = 0

        var isEmpty: Bool { head == elements.count }
        var count: Int { elements.count - head }
        var first: Element? { isEmpty ? nil : elements[head] }

        mutating func append(_ element: Element) { elements.append(element) }

        mutating func popFirst() -> Element? {
            guard !isEmpty else { return nil }
            let element = elements[head]
            elements[head] = nil
            head += 1
            compact()
            return element
        }

        mutating func replaceFirst(with element: Element) {
            guard !isEmpty else { return }
            elements[head] = element
        }

        mutating func removeAll(where shouldRemove: (Element) -> Bool) {
            elements.removeSubrange(0..<head)
            head = 0
            elements.removeAll { $0.map(shouldRemove) ?? true }
        }

        /// Drops consumed slots once they are at least half the array (amortised O(1)).
        private mutating func compact() {
            if head == elements.count {
                elements.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 32, head * 2 >= elements.count {
                elements.removeSubrange(0..<head)
                head = 0
            }
        }
    }

    /// The bytes queued on one stream, as the slices `enqueue` received.
    struct SendQueue: Sendable {
        private var chunks = FIFO<ArraySlice<UInt8>>()
        /// The newest chunk, kept apart so small writes can be merged into it.
        private var tail: ArraySlice<UInt8> = []
        private(set) var byteCount = 0

        var isEmpty: Bool { byteCount == 0 }
        /// Bytes in the oldest chunk: a DATA frame never spans two chunks.
        var frontCount: Int { chunks.first?.count ?? tail.count }

        /// Small writes are merged into the newest chunk, up to one DATA frame's worth, so a
        /// chatty local connection does not become a run of tiny frames; large reads are kept
        /// without copying.
        mutating func append(_ bytes: ArraySlice<UInt8>) {
            byteCount += bytes.count
            if tail.isEmpty {
                tail = bytes
            } else if tail.count + bytes.count <= FrameLimits.clientDataChunk {
                tail.append(contentsOf: bytes)
            } else {
                chunks.append(tail)
                tail = bytes
            }
        }

        /// Removes and returns up to `count` bytes from the oldest chunk.
        mutating func removeFront(_ count: Int) -> ArraySlice<UInt8> {
            let taken: ArraySlice<UInt8>
            if let front = chunks.first {
                taken = front.prefix(count)
                if taken.count == front.count {
                    _ = chunks.popFirst()
                } else {
                    chunks.replaceFirst(with: front.dropFirst(taken.count))
                }
            } else {
                taken = tail.prefix(count)
                // An emptied tail lets go of its storage.
                tail = taken.count == tail.count ? [] : tail.dropFirst(taken.count)
            }
            byteCount -= taken.count
            return taken
        }
    }
}

extension SessionMux.FIFO: Sendable where Element: Sendable {}
