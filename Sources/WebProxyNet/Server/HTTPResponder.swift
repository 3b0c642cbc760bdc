/// Where a response goes: an HTTP/1.1 connection, or one stream of an HTTP/2 connection.
protocol HTTPResponseSink: AnyObject {
    var isOpen: Bool { get }
    /// Sends a checked head and its body; false if the head cannot be sent.
    func send(_ head: HTTPResponseHead, body: [UInt8]?, keepAlive: Bool) -> Bool
    /// Sends bytes as they are (HTTP/1.1), or resets the stream (HTTP/2).
    func sendRaw(_ bytes: [UInt8], keepAlive: Bool)
    /// Sends the 101 and hands the connection to a WebSocket endpoint (HTTP/1.1 only).
    func upgrade(sending head: HTTPResponseHead, maxMessageBytes: Int, closeTimeout: Duration) -> WebSocketEndpoint?
    /// Resets the connection (HTTP/1.1) or the stream (HTTP/2) without answering.
    func abort()
    /// Closes the connection (HTTP/1.1) or cancels the stream (HTTP/2) without answering.
    func drop()
}

/// Answers one `HTTPServer` request, at once or later (a parked long poll): exactly one of
/// `respond`, `upgradeToWebSocket`, `abortConnection` or `dropConnection` takes effect.
public final class HTTPResponder {
    private weak var connection: (any HTTPResponseSink)?
    private let requestKeepAlive: Bool
    private let webSocketKey: String?
    private var answered = false

    /// Called once if the connection closes before this request was answered (or while a
    /// response was still being written), so a parked request can be dropped.
    public var onConnectionClosed: (() -> Void)?

    init(connection: any HTTPResponseSink, requestKeepAlive: Bool, webSocketKey: String?) {
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
        guard (try? head.headers.validateForSerialization()) != nil else { return false }
        let keepAlive = requestKeepAlive && !head.headers.contains("Connection", token: "close")
        guard connection.send(head, body: head.statusForbidsBody ? nil : (body ?? []), keepAlive: keepAlive) else {
            return false
        }
        answered = true
        return true
    }

    /// Sends `bytes` as they are (a hand-made or broken response, for tests and faults),
    /// then keeps the connection for the next request or closes it.
    @discardableResult
    public func respond(rawBytes bytes: [UInt8], keepAlive: Bool) -> Bool {
        guard canRespond, let connection else { return false }
        answered = true
        connection.sendRaw(bytes, keepAlive: keepAlive && requestKeepAlive)
        return true
    }

    /// Sends `response101` (see `WebSocketHandshake.upgradeResponse`) and turns the
    /// connection into a server WebSocket endpoint; set its delegate to start reading.
    /// Nil if the request was no valid upgrade request, was answered, or the connection is gone.
    public func upgradeToWebSocket(
        response101: HTTPResponseHead, maxMessageBytes: Int = 4 << 20, closeTimeout: Duration = .seconds(5)
    ) -> WebSocketEndpoint? {
        guard canRespond, let connection, webSocketKey != nil, response101.status == 101 else { return nil }
        guard (try? response101.headers.validateForSerialization()) != nil else { return nil }
        answered = true
        onConnectionClosed = nil
        return connection.upgrade(sending: response101, maxMessageBytes: maxMessageBytes, closeTimeout: closeTimeout)
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
