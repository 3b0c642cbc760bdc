/// The bytes the daemon holds for one session's streams, as the session driver counts them:
/// what local connections sent that no carrier request or message has taken yet (`uplink`),
/// and what the relay sent that local connections have not written yet (`downlink`). The
/// peaks are high-water marks since the relay started: all streams of the session, and the
/// fullest single stream (both directions). Bytes inside a request or a WebSocket's send
/// buffer are not counted: each carrier bounds those by its batch limit.
public struct QueuedBytes: Hashable, Sendable {
    public var uplink = 0
    public var downlink = 0
    public var peakTotal = 0
    public var peakStream = 0

    public init() {}

    /// Takes the current totals and raises the peaks.
    mutating func observe(uplink: Int, downlink: Int, largestStream: Int) {
        self.uplink = uplink
        self.downlink = downlink
        peakTotal = max(peakTotal, uplink + downlink)
        peakStream = max(peakStream, largestStream)
    }

    /// A relay's sessions together: what they hold now, summed; the peaks of the fullest
    /// session and the fullest stream, since each session has its own bounds.
    public init(sessions: some Sequence<QueuedBytes>) {
        for session in sessions {
            uplink += session.uplink
            downlink += session.downlink
            peakTotal = max(peakTotal, session.peakTotal)
            peakStream = max(peakStream, session.peakStream)
        }
    }

    /// Takes the current session's totals (none without a session), keeping the larger peaks.
    mutating func follow(_ session: QueuedBytes?) {
        let session = session ?? QueuedBytes()
        uplink = session.uplink
        downlink = session.downlink
        peakTotal = max(peakTotal, session.peakTotal)
        peakStream = max(peakStream, session.peakStream)
    }
}
