import WebProxyCore
import WebProxyNet

/// A client WebSocket to the relay (loop-confined): collects relay->client frames and calls
/// `onProgress` after each message, and `onClose` with the outcome.
final class RelayWebSocketProbe: WebSocketEndpointDelegate {
    var frames: [Frame] = []
    var decodeFailed = false
    var outcome: WebSocketCloseOutcome?
    var onProgress: (() -> Void)?
    var onClose: ((WebSocketCloseOutcome) -> Void)?

    func webSocket(_ endpoint: WebSocketEndpoint, didReceive message: [UInt8]) {
        do {
            frames += try FrameBatch.decode(message[...], direction: .relayToClient)
        } catch {
            decodeFailed = true
        }
        onProgress?()
    }

    func webSocket(_ endpoint: WebSocketEndpoint, didCloseWith outcome: WebSocketCloseOutcome) {
        self.outcome = outcome
        onClose?(outcome)
    }

    /// The DATA bytes received on `stream`, in order.
    func data(on stream: StreamID) -> [UInt8] {
        frames.reduce(into: []) { bytes, frame in
            if case .data(let id, let payload) = frame, id == stream { bytes += payload }
        }
    }

    /// The WINDOW credit received for `stream`.
    func credit(on stream: StreamID) -> UInt64 {
        frames.reduce(into: 0) { total, frame in
            if case .window(let id, let delta) = frame, id == stream { total += UInt64(delta) }
        }
    }
}
