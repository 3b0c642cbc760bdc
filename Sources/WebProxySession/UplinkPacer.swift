import WebProxyCore

/// Keeps a session's uplink in flight near what the path needs, so a bulk upload does not fill
/// the bottleneck queue that chat shares with it on one TCP flow.
///
/// The relay returns WINDOW credit once uplink bytes reached its backend, so the session sees
/// its own deliveries. Each time DATA leaves, the pacer notes the totals sent and
/// acknowledged and when that acknowledged total arrived. When the acknowledged total passes
/// a note, the time since it was sent is a round-trip sample, and the bytes acknowledged since
/// the noted acknowledgement a delivery-rate sample, over the longer of the acknowledging
/// interval and the sending one (as BBR does: WINDOWs that arrive bunched do not make the path
/// look faster than the bytes left it). `target` is `gain` × the highest recent rate × the
/// lowest recent round trip (at least `minimumQueueTime` × the rate, and at least `floor`):
/// the unacknowledged uplink the session allows its bulk streams in all. With the link busy,
/// `gain` − 1 of a round trip's bytes wait at the bottleneck.
///
/// The session applies it to bulk DATA only (`SessionMux.UplinkAllowance`): each bulk stream
/// gets an equal share of `target` and one batch more (`batchBulkBytes`, since a message's
/// WINDOW returns only after all of it arrived), and a stream with at most `lightStreamBytes`
/// queued (chat) is never held back. It is off unless the relay key `pace-uploads = yes` asks
/// for it, and only the websocket carrier is paced: its streams share one TCP flow and the
/// relay acknowledges each message as it arrives. The https carrier's single `/up` in flight
/// needs bodies of many round trips' bytes to fill a path, and on the lane carriers each lane
/// over HTTP/1.1 or WebSocket has a flow of its own. (Docs/PERFORMANCE.md has the figures,
/// and those of a delay-target variant that kept less queue but moved less.)
struct UplinkPacer: Sendable {
    static let gain = 1.25
    static let floor = 32 << 10
    static let lightStreamBytes = 16 << 10
    /// The pacer always allows this long's worth of the delivery rate in flight: a queue that
    /// short is below what chat notices, and on fast paths (loopback, a LAN) the relay's
    /// processing, not the path, sets the round trip, so the product alone would starve them.
    static let minimumQueueTime = Duration.milliseconds(10)
    /// How long a minimum round trip and a maximum rate are trusted.
    static let roundTripWindow = Duration.seconds(10)
    static let rateWindow = Duration.seconds(4)
    /// Notes kept at once; when full, new departures wait for the oldest to be acknowledged.
    static let maxNotes = 64

    private struct Note {
        let sent: Int
        let at: MonotonicInstant
        /// The acknowledged total when the note was taken, and when it arrived.
        let acknowledged: Int
        let acknowledgedAt: MonotonicInstant
        /// When the oldest departure not yet acknowledged left (this one's, if none).
        let flightStartedAt: MonotonicInstant
    }

    private var notes: [Note] = []
    private var firstNote = 0
    private var minRoundTrip: (value: Duration, at: MonotonicInstant)?
    private var maxRate: (bytesPerSecond: Double, at: MonotonicInstant)?
    /// The latest acknowledged total and when it arrived.
    private var lastAcknowledged = 0
    private var lastAcknowledgedAt: MonotonicInstant?

    /// The unacknowledged uplink bytes the session may have in all.
    private(set) var target = UplinkPacer.floor

    /// The bulk DATA one batch may carry: about `batchTime` of the delivery rate, 4 to 64 KiB.
    /// The relay acknowledges a message once all of it arrived, so a bulk message costs its
    /// own serialisation on top of the round trip before its WINDOW returns, and chat queued
    /// behind it waits as long: on a 20 Mbit/s path 64 KiB takes 26 ms, and 5 ms is 12 KiB.
    var batchBulkBytes: Int {
        guard let rate = maxRate?.bytesPerSecond else { return Self.minimumBatchBulkBytes }
        let bytes = rate * Self.seconds(Self.batchTime)
        return Int(min(Double(FrameLimits.clientDataChunk), max(Double(Self.minimumBatchBulkBytes), bytes)))
    }

    static let batchTime = Duration.milliseconds(5)
    static let minimumBatchBulkBytes = 4 << 10

    /// The lowest recent round trip, nil before the first sample.
    var roundTrip: Duration? { minRoundTrip?.value }

    /// DATA left: `sent` and `acknowledged` are the session's totals of uplink DATA bytes
    /// sent and acknowledged by WINDOW so far.
    mutating func sent(total sent: Int, acknowledged: Int, at now: MonotonicInstant) {
        guard notes.count - firstNote < Self.maxNotes else { return }
        if let last = notes.last, firstNote < notes.count, last.sent == sent { return }
        if acknowledged > lastAcknowledged || lastAcknowledgedAt == nil {
            lastAcknowledged = acknowledged
            lastAcknowledgedAt = now
        }
        let flightStartedAt = firstNote < notes.count ? notes[firstNote].at : now
        notes.append(
            Note(
                sent: sent, at: now, acknowledged: lastAcknowledged, acknowledgedAt: lastAcknowledgedAt ?? now,
                flightStartedAt: flightStartedAt))
    }

    /// WINDOW frames arrived: `total` bytes are acknowledged so far.
    mutating func acknowledged(total: Int, at now: MonotonicInstant) {
        guard total > lastAcknowledged else { return }
        lastAcknowledged = total
        lastAcknowledgedAt = now
        var sample: Note?
        while firstNote < notes.count, notes[firstNote].sent <= total {
            sample = notes[firstNote]
            firstNote += 1
        }
        if firstNote > 32, firstNote * 2 > notes.count {
            notes.removeFirst(firstNote)
            firstNote = 0
        }
        guard let sample else { return }
        let elapsed = sample.at.duration(to: now)
        guard elapsed > .zero else { return }
        // A sample replaces the kept one when it is better or the kept one is too old.
        if minRoundTrip.map({ elapsed < $0.value || $0.at.duration(to: now) >= Self.roundTripWindow }) ?? true {
            minRoundTrip = (elapsed, now)
        }
        // Over the longer of the acknowledging and the sending interval, as BBR does: WINDOWs
        // that arrive bunched do not make the path look faster than the bytes left it.
        let interval = max(sample.acknowledgedAt.duration(to: now), sample.flightStartedAt.duration(to: sample.at))
        let rate = Double(total - sample.acknowledged) / Self.seconds(interval)
        if maxRate.map({ rate > $0.bytesPerSecond || $0.at.duration(to: now) >= Self.rateWindow }) ?? true {
            maxRate = (rate, now)
        }
        guard let roundTrip = minRoundTrip?.value, let rate = maxRate?.bytesPerSecond else { return }
        let product = max(Self.gain * Self.seconds(roundTrip), Self.seconds(Self.minimumQueueTime)) * rate
        target = max(Self.floor, Int(min(product, Double(Int32.max))))
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
