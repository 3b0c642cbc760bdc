import WebProxyCore
import WebProxySession

/// What one relay has done since it started, for `webproxyd status` and the metrics.
/// Kept by `RelayService` on the loop thread; every label it holds comes from a fixed set.
struct RelayCounters: Equatable, Sendable {
    /// Sessions that came up.
    var sessionsEstablished = 0
    /// Session builds started after a failed build or a lost session.
    var reconnects = 0
    /// Session failures by class (`SessionFailure.Kind` raw values).
    private(set) var errors: [String: Int] = [:]
    /// The latest session failure.
    private(set) var lastError: RelayErrorRecord?
    /// Local connections the daemon closed, by reason (`LocalCloseReason.label`).
    var localCloses: [String: Int] = [:]
    /// Answered carrier HTTP requests by carrier label (`carrierLabels`).
    private(set) var requestSeconds: [String: LatencyHistogram] = [:]

    /// The carrier labels of `requestSeconds`: the four modes, and `bootstrap` for requests
    /// made while no session is up (bridge page, session creation).
    static let carrierLabels = CarrierMode.allCases.map(\.rawValue) + ["bootstrap"]

    mutating func recordFailure(_ failure: SessionFailure, monotonic: Duration, wallClockSeconds: Int64) {
        errors[failure.kind.rawValue, default: 0] += 1
        lastError = RelayErrorRecord(
            errorClass: failure.kind.rawValue, message: failure.message, monotonic: monotonic,
            wallClockSeconds: wallClockSeconds)
    }

    mutating func recordRequest(carrier: CarrierMode?, duration: Duration) {
        requestSeconds[carrier?.rawValue ?? "bootstrap", default: LatencyHistogram()].observe(duration)
    }
}

/// A session failure as remembered for `status`: its class, its (secret-free) message and when.
struct RelayErrorRecord: Equatable, Sendable {
    var errorClass: String
    var message: String
    /// The loop's monotonic time of the failure (for "seconds ago").
    var monotonic: Duration
    /// Seconds since the Unix epoch (for the RFC 3339 time).
    var wallClockSeconds: Int64
}
