/// One live stream of a session: its two flow-control windows and its backend connection.
struct RelayStream: Sendable {
    /// Client→relay credit the relay still grants: initial − received + written to the backend.
    var receiveWindow: Int
    /// Relay→client credit: initial + Σ client WINDOW − DATA queued, at most 2^32−1.
    var sendCredit: Int
    /// Whether the backend dial completed.
    var connected = false
    /// Uplink DATA received before the backend connected, written on connect.
    var unsentWrites: [[UInt8]] = []
    /// Sizes of writes handed to the shell and not yet reported drained, oldest first.
    var undrainedWrites: [Int] = []
    /// Backend bytes read but not yet queued (no credit or no budget).
    var held: [UInt8] = []
    /// Whether the shell was asked to stop reading this backend.
    var readingPaused = false
    /// Whether the backend reported EOF (CLOSE follows once `held` is queued).
    var backendEnded = false

    init(window: Int) {
        receiveWindow = window
        sendCredit = window
    }
}
