internal import CWebProxyLinux

/// A point on CLOCK_MONOTONIC in nanoseconds: immune to wall-clock jumps, comparable across
/// threads of one boot. Pure code takes it as an input; only the loop reads the clock.
public struct MonotonicTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary boot-time origin.
    public var nanoseconds: UInt64

    /// A time from raw nanoseconds (tests inject these).
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// Reads CLOCK_MONOTONIC.
    static func now() -> MonotonicTime {
        MonotonicTime(nanoseconds: cwpl_monotonic_now_ns())
    }

    public static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// `lhs` moved later by `rhs` (negative durations count as zero; saturates at the far future).
    public static func + (lhs: MonotonicTime, rhs: Duration) -> MonotonicTime {
        let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(rhs.clampedNanoseconds)
        return MonotonicTime(nanoseconds: overflow ? .max : sum)
    }

    /// The time from `rhs` to `lhs` (zero if `rhs` is later).
    public static func - (lhs: MonotonicTime, rhs: MonotonicTime) -> Duration {
        guard lhs > rhs else { return .zero }
        let delta = lhs.nanoseconds - rhs.nanoseconds
        return .seconds(Int64(delta / 1_000_000_000)) + .nanoseconds(Int64(delta % 1_000_000_000))
    }

    public var description: String { "\(nanoseconds)ns" }
}

extension Duration {
    /// Whole nanoseconds, clamped to `0...UInt64.max`.
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflow2) = whole.addingReportingOverflow(UInt64(max(0, attoseconds) / 1_000_000_000))
        return overflow2 ? .max : sum
    }
}

/// Names a scheduled timer so it can be cancelled.
public struct TimerID: Hashable, Sendable {
    let raw: UInt64
}

/// A min-heap of deadlines. Equal deadlines fire in scheduling order. Cancellation is lazy
/// (the entry is skipped when it surfaces) and the heap is rebuilt when dead entries dominate,
/// so frequently re-armed timers cannot grow it without bound.
struct TimerHeap<Payload> {
    private struct Entry {
        let deadline: MonotonicTime
        let id: UInt64

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private var heap: [Entry] = []
    private var live: [UInt64: Payload] = [:]
    private var nextID: UInt64 = 1

    /// How many timers are scheduled and not cancelled.
    var count: Int { live.count }

    /// Schedules `payload` to fire at `deadline`.
    mutating func schedule(at deadline: MonotonicTime, _ payload: Payload) -> TimerID {
        let id = nextID
        nextID += 1
        live[id] = payload
        push(Entry(deadline: deadline, id: id))
        return TimerID(raw: id)
    }

    /// Cancels a timer; false if it already fired or was cancelled.
    @discardableResult
    mutating func cancel(_ timer: TimerID) -> Bool {
        guard live.removeValue(forKey: timer.raw) != nil else { return false }
        if heap.count > 64 && heap.count > 2 * live.count { rebuild() }
        return true
    }

    /// The earliest live deadline.
    mutating func nextDeadline() -> MonotonicTime? {
        dropCancelledTop()
        return heap.first?.deadline
    }

    /// Removes and returns the earliest timer if it is due at `now`.
    mutating func popDue(at now: MonotonicTime) -> (TimerID, Payload)? {
        dropCancelledTop()
        guard let top = heap.first, top.deadline <= now else { return nil }
        popTop()
        guard let payload = live.removeValue(forKey: top.id) else { return nil }
        return (TimerID(raw: top.id), payload)
    }

    /// Removes every timer.
    mutating func removeAll() {
        heap.removeAll()
        live.removeAll()
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, live[top.id] == nil { popTop() }
    }

    private mutating func rebuild() {
        heap.removeAll { live[$0.id] == nil }
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
