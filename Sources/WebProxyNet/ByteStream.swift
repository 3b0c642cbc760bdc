/// An ordered byte stream on one event loop: a `TCPConnection` (or unix-domain stream), or
/// a `TLSConnection` over one. Everything above it runs over either: HTTP/1.1 and HTTP/2
/// (client and server), WebSocket, the control and metrics endpoints, the benchmark's
/// tunnel. What only TLS knows (ALPN, the SNI name, resumption) is read once, where the
/// handshake finished, and handed on as values. Use it on its loop's thread only.
public protocol ByteStream: AnyObject {
    /// The loop that owns the stream.
    var loop: EventLoop { get }
    /// Receives reads, the peer's end, writability and the close. Setting it starts reading;
    /// nothing is read while none is set, so a stream handed between owners loses nothing.
    var delegate: (any ByteStreamDelegate)? { get set }
    /// The peer's address.
    var remoteAddress: SocketAddress { get }
    /// False once closing or closed.
    var isOpen: Bool { get }
    /// True while `queuedWriteBytes` is below the high watermark.
    var isWritable: Bool { get }
    /// Bytes accepted by `write` and not yet taken by the kernel (TLS framing included).
    var queuedWriteBytes: Int { get }
    /// A count that grows whenever the path moves bytes either way (`TCP_INFO`), so a
    /// watchdog can tell a slow path from a dead one; nil where the kernel does not say.
    var pathProgress: UInt64? { get }
    /// Sends `bytes`, queueing (a copy of) what cannot go now. Throws `.io(.closed)` once
    /// closing, `.io(.writeBufferFull)` (taking nothing) past the write limit.
    func write(_ bytes: UnsafeRawBufferPointer) throws(TransportError)
    /// Sends `head` then `body` as one unit: both are taken, or (past the write limit)
    /// neither. A stream that frames its bytes keeps a short head out of a frame of its own.
    func write(_ head: [UInt8], _ body: UnsafeRawBufferPointer) throws(TransportError)
    /// Stops delivering reads (backpressure) until `resumeReading()`.
    func pauseReading()
    func resumeReading()
    /// Closes gracefully: what is queued goes first (then TLS close_notify), then FIN.
    func close()
    /// Ends at once with FIN after what the kernel already holds: queued bytes are dropped,
    /// and TLS sends no close_notify, so the peer sees a truncated stream (how the reference
    /// relay drops a WebSocket).
    func drop()
    /// Closes at once: queued bytes are dropped and the peer gets RST.
    func abort()
}

extension ByteStream {
    /// Sends `bytes` (see `write(_:)` for the raw-buffer form).
    public func write(_ bytes: [UInt8]) throws(TransportError) {
        let outcome = bytes.withUnsafeBytes { raw in
            Result { () throws(TransportError) in try write(raw) }
        }
        try outcome.get()
    }

    /// Sends `head` then `body` as one unit (see `write(_:_:)` for the raw-buffer form).
    public func write(_ head: [UInt8], _ body: [UInt8]) throws(TransportError) {
        let outcome = body.withUnsafeBytes { raw in
            Result { () throws(TransportError) in try write(head, raw) }
        }
        try outcome.get()
    }
}

/// Receives a `ByteStream`'s events on its loop thread.
public protocol ByteStreamDelegate: AnyObject {
    /// Bytes arrived. The buffer is lent: it belongs to the stream (the loop's read buffer,
    /// or the TLS connection's plaintext buffer) and is valid only during this call, so that
    /// a read costs no copy the delegate does not make itself. Copy what you keep.
    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer)
    /// The peer finished sending: `clean` after TCP's FIN, or TLS's close_notify; false when
    /// TCP ended a TLS stream without one (a truncation). The stream can still write; close
    /// it when done.
    func streamDidReachEnd(_ stream: any ByteStream, clean: Bool)
    /// What was queued fell to the low watermark after a write took it past the high one.
    /// Default: nothing.
    func streamDidBecomeWritable(_ stream: any ByteStream)
    /// The last call: nil after `close()` or `abort()` (or both directions finished), the
    /// failure otherwise. The stream releases its delegate after this.
    func stream(_ stream: any ByteStream, didCloseWith error: TransportError?)
}

extension ByteStreamDelegate {
    public func streamDidBecomeWritable(_ stream: any ByteStream) {}
}
