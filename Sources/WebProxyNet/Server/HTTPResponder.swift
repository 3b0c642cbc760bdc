/// Answers one `HTTPServer` request, at once or later (a parked long poll): exactly one of
/// `respond`, `upgradeToWebSocket`, `abortConnection` or `dropConnection` takes effect.
public final class HTTPResponder {
    private weak var connection: HTTPServerConnection?
    private let requestKeepAlive: Bool
    private let webSocketKey: String?
    private var answered = false

    /// Called once if the connection closes before this request was answered (or while a
    /// response was still being written), so a parked request can be dropped.
    public var onConnectionClosed: (() -> Void)?

    init(connection: HTTPServerConnection, requestKeepAlive: Bool, webSocketKey: String?) {
        self.connection = connection
        self.requestKeepAlive = requestKeepAlive
        self.webSocketKey = webSocketKey
    }

    /// Whether the request is unanswered and its connection still open.
    public var canRespond: Bool { !answered && connection?.isOpen == true }

    /// Sends `head` and `body` (Content-Length added unless set). The connection is kept
    /// for the next request unless either side said `Connection: close`. False if the
    /// request was already answered, the connection is gone or the head is invalid.
    @discardableResult
    public func respond(_ head: HTTPResponseHead, body: [UInt8]? = nil) -> Bool {
        guard canRespond, let connection else { return false }
        var bytes: [UInt8] = []
        do throws(HTTPError) {
            try head.headers.validateForSerialization()
            try head.encode(into: &bytes, bodyLength: head.statusForbidsBody ? nil : (body ?? []).count)
        } catch {
            return false
        }
        if !head.statusForbidsBody, let body { bytes.append(contentsOf: body) }
        answered = true
        let keepAlive = requestKeepAlive && !head.headers.contains("Connection", token: "close")
        connection.sendResponse(bytes, keepAlive: keepAlive)
        return true
    }

    /// Sends `bytes` as they are (a hand-made or broken response, for tests and faults),
    /// then keeps the connection for the next request or closes it.
    @discardableResult
    public func respond(rawBytes bytes: [UInt8], keepAlive: Bool) -> Bool {
        guard canRespond, let connection else { return false }
        answered = true
        connection.sendResponse(bytes, keepAlive: keepAlive && requestKeepAlive)
        return true
    }

    /// Sends `response101` (see `WebSocketHandshake.upgradeResponse`) and turns the
    /// connection into a server WebSocket endpoint; set its delegate to start reading.
    /// Nil if the request was no valid upgrade request, was answered, or the connection is gone.
    public func upgradeToWebSocket(
        response101: HTTPResponseHead, maxMessageBytes: Int = 4 << 20, closeTimeout: Duration = .seconds(5)
    ) -> WebSocketEndpoint? {
        guard canRespond, let connection, webSocketKey != nil, response101.status == 101 else { return nil }
        var bytes: [UInt8] = []
        do throws(HTTPError) {
            try response101.headers.validateForSerialization()
            try response101.encode(into: &bytes, bodyLength: nil)
        } catch {
            return nil
        }
        answered = true
        onConnectionClosed = nil
        return connection.upgrade(
            sending: bytes, maxMessageBytes: maxMessageBytes, closeTimeout: closeTimeout)
    }

    /// Resets the connection (RST) without answering: a fault for tests.
    public func abortConnection() {
        guard !answered else { return }
        answered = true
        onConnectionClosed = nil
        connection?.abort()
    }

    /// Closes the connection (FIN, no close_notify) without answering: a fault for tests.
    public func dropConnection() {
        guard !answered else { return }
        answered = true
        onConnectionClosed = nil
        connection?.drop()
    }

    func connectionDidClose() {
        let callback = onConnectionClosed
        onConnectionClosed = nil
        callback?()
    }
}
