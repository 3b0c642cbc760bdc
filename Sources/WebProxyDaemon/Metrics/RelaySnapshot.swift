/// One relay at one instant, taken on the loop thread: what `status` shows and what the
/// metrics endpoint exposes.
struct RelaySnapshot: Equatable, Sendable {
    var status: RelayStatusEntry
    var counters: RelayCounters
    /// Relay frames carried by the relay's sessions so far.
    var frames = FrameCounts()
    /// Bytes the daemon holds for the relay's streams.
    var queued = QueuedBytes()
}
