import CWebProxyNGHTTP2

/// One HTTP/2 connection's framing, HPACK, flow control and stream states, on libnghttp2,
/// with no I/O: peer bytes go in through `receive`, bytes for the peer come out of
/// `takeOutput`, and what the peer did is read from `takeEvents`. The connection classes
/// (client and server) move the bytes between this and TLS on the loop.
///
/// Flow control is nghttp2's automatic one: a window reopens as soon as its DATA has been
/// received, so memory is bounded by what the owner keeps. A stream's body bytes are copied
/// once, into that stream's buffer here, which the owner checks against its cap at every
/// `.data` event and takes at the end (or drops when the stream closes).
final class HTTP2Session {
    enum Role { case client, server }

    /// What the peer did, in the order it happened.
    enum Event: Equatable {
        /// A complete header block (request, response, informational or trailers).
        case headers(stream: Int32, fields: [HTTPField])
        /// `count` more body bytes of a stream, added to its `receivedBody`.
        case data(stream: Int32, count: Int)
        /// The peer will send nothing more on the stream (END_STREAM).
        case endStream(stream: Int32)
        /// The stream is closed; `errorCode` 0 after a complete exchange, else the reset's
        /// code (`refusedStream` when the peer never processed it, a GOAWAY's included).
        case streamClosed(stream: Int32, errorCode: UInt32)
        /// The peer accepts no new stream; streams up to `lastStream` may still finish.
        case goAway(lastStream: Int32, errorCode: UInt32)
        /// Our PING came back.
        case pingAcknowledged
        /// The peer's SETTINGS arrived (limits such as concurrent streams may have changed).
        case settings
    }

    /// SETTINGS and the connection window announced to the peer.
    struct LocalSettings: Equatable {
        var headerTableSize: UInt32?
        var enablePush: Bool?
        var maxConcurrentStreams: UInt32?
        var initialWindowSize: UInt32?
        var maxFrameSize: UInt32?
        var maxHeaderListSize: UInt32?
        /// The connection-level receive window, raised from 65,535 by a WINDOW_UPDATE.
        var connectionWindow: Int32?

        /// Chromium's, in its order: a 6 MiB stream window and a 15 MiB connection window,
        /// so a 2 MiB batch is never held by flow control.
        static let browser = LocalSettings(
            headerTableSize: 65536, enablePush: false, initialWindowSize: 6 << 20, maxHeaderListSize: 256 << 10,
            connectionWindow: 15 << 20)

        /// What a Go front (Caddy) announces: 250 streams, 1 MiB stream windows.
        static let front = LocalSettings(
            maxConcurrentStreams: 250, initialWindowSize: 1 << 20, maxFrameSize: 1 << 20,
            maxHeaderListSize: 1 << 20, connectionWindow: 1 << 30)
    }

    /// HTTP/1.1 fields that name the connection, which RFC 9113 forbids in h2 (lower-case).
    static let connectionSpecificFields: Set<String> = [
        "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]

    /// RST_STREAM and GOAWAY codes used here (RFC 9113 section 7).
    enum ErrorCode {
        static let noError: UInt32 = 0
        static let protocolError: UInt32 = 1
        static let internalError: UInt32 = 2
        static let refusedStream: UInt32 = 7
        static let cancel: UInt32 = 8
    }

    private var session: OpaquePointer?
    private var events: [Event] = []
    /// Header blocks being received, by stream.
    private var partialHeaders: [Int32: [HTTPField]] = [:]
    /// Bodies being received, by stream, until the owner takes them.
    private var receivedBodies: [Int32: [UInt8]] = [:]
    /// Bodies being sent, by stream, with how much of each is out.
    private var outgoingBodies: [Int32: (bytes: [UInt8], offset: Int)] = [:]

    init(role: Role, settings: LocalSettings) throws(HTTP2Error) {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw HTTP2Error(.internalFailure, "cannot allocate HTTP/2 callbacks")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks)
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw HTTP2Error(.internalFailure, "cannot allocate HTTP/2 options")
        }
        defer { nghttp2_option_del(option) }
        // The peer's concurrency limit is unknown until its SETTINGS: assume RFC 9113's
        // advice of 100 rather than nghttp2's unlimited default.
        nghttp2_option_set_peer_max_concurrent_streams(option, 100)
        let user = Unmanaged.passUnretained(self).toOpaque()
        let status =
            switch role {
            case .client: nghttp2_session_client_new2(&session, callbacks, user, option)
            case .server: nghttp2_session_server_new2(&session, callbacks, user, option)
            }
        guard status == 0, session != nil else {
            throw HTTP2Error(.internalFailure, "cannot create an HTTP/2 session (\(Self.describe(status)))")
        }
        try announce(settings)
    }

    deinit {
        nghttp2_session_del(session)
    }

    private func announce(_ settings: LocalSettings) throws(HTTP2Error) {
        var entries: [nghttp2_settings_entry] = []
        func add(_ id: nghttp2_settings_id, _ value: UInt32?) {
            if let value { entries.append(nghttp2_settings_entry(settings_id: Int32(id.rawValue), value: value)) }
        }
        add(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, settings.headerTableSize)
        add(NGHTTP2_SETTINGS_ENABLE_PUSH, settings.enablePush.map { $0 ? 1 : 0 })
        add(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.maxConcurrentStreams)
        add(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.initialWindowSize)
        add(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, settings.maxFrameSize)
        add(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.maxHeaderListSize)
        var status = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count)
        if status == 0, let window = settings.connectionWindow {
            status = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, window)
        }
        guard status == 0 else {
            throw HTTP2Error(.internalFailure, "cannot queue the HTTP/2 settings (\(Self.describe(status)))")
        }
    }

    // MARK: bytes

    /// Processes peer bytes. A protocol violation by the peer queues a GOAWAY and throws:
    /// send what `takeOutput` still holds, then close.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2Error) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let consumed = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard consumed >= 0 else {
            throw HTTP2Error(.protocolViolation, "the peer broke HTTP/2 (\(Self.describe(Int32(consumed))))")
        }
    }

    /// Bytes for the peer, up to about `limit` (whole frames; one frame may pass it).
    func takeOutput(limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        while out.count < limit {
            var chunk: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &chunk)
            guard count > 0, let chunk else { break }
            out.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
        }
        return out
    }

    /// The body bytes received on `stream` and not taken yet.
    func receivedBodyCount(of stream: Int32) -> Int { receivedBodies[stream]?.count ?? 0 }

    /// Makes room for a body of `capacity` bytes on `stream` (its declared length).
    func reserveReceivedBody(of stream: Int32, capacity: Int) {
        receivedBodies[stream, default: []].reserveCapacity(capacity)
    }

    /// Removes and returns the body bytes received on `stream` so far. The owner calls this
    /// for every stream it was told about, at the end or when the stream closes.
    @discardableResult
    func takeReceivedBody(of stream: Int32) -> [UInt8] { receivedBodies.removeValue(forKey: stream) ?? [] }

    /// What the peer did since the last call.
    func takeEvents() -> [Event] {
        let taken = events
        events = []
        return taken
    }

    /// False once both sides have nothing more to say (after GOAWAY or a fatal error).
    var isAlive: Bool { nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0 }

    // MARK: streams

    /// Queues a request with its pseudo-header and header fields in order and an optional
    /// body. Nil when no new stream may be opened (stream IDs exhausted, GOAWAY received).
    func submitRequest(_ fields: [HTTPField], body: [UInt8]?) -> Int32? {
        // Chromium marks every request exclusive on the root with its priority as weight.
        var priority = nghttp2_priority_spec()
        nghttp2_priority_spec_init(&priority, 0, 256, 1)
        let stream = submit(fields, body: body) { nva, count, provider in
            nghttp2_submit_request(session, &priority, nva, count, provider, nil)
        }
        guard stream > 0 else { return nil }
        if let body { outgoingBodies[stream] = (body, 0) }
        return stream
    }

    /// Queues a response on `stream`: `:status` first, then the fields, then the body.
    func submitResponse(stream: Int32, fields: [HTTPField], body: [UInt8]?) -> Bool {
        if let body { outgoingBodies[stream] = (body, 0) }
        let status = submit(fields, body: body) { nva, count, provider in
            nghttp2_submit_response(session, stream, nva, count, provider)
        }
        if status != 0 { outgoingBodies[stream] = nil }
        return status == 0
    }

    private func submit(
        _ fields: [HTTPField], body: [UInt8]?,
        _ call: (UnsafePointer<nghttp2_nv>, Int, UnsafePointer<nghttp2_data_provider>?) -> Int32
    ) -> Int32 {
        // Names and values side by side in one buffer; nghttp2 copies them before returning.
        var storage: [UInt8] = []
        var lengths: [(name: Int, value: Int)] = []
        for field in fields {
            storage.append(contentsOf: field.name.utf8)
            storage.append(contentsOf: field.value.utf8)
            lengths.append((field.name.utf8.count, field.value.utf8.count))
        }
        var provider = nghttp2_data_provider()
        provider.read_callback = { _, stream, buffer, length, flags, _, user in
            HTTP2Session.from(user).readBody(stream: stream, into: buffer, length: length, flags: flags)
        }
        return storage.withUnsafeMutableBufferPointer { bytes in
            var nva: [nghttp2_nv] = []
            nva.reserveCapacity(fields.count)
            var cursor = bytes.baseAddress
            for (name, value) in lengths {
                nva.append(
                    nghttp2_nv(
                        name: cursor, value: cursor.map { $0 + name }, namelen: name, valuelen: value,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                cursor = cursor.map { $0 + name + value }
            }
            return withUnsafePointer(to: &provider) { provider in
                call(nva, nva.count, body == nil ? nil : provider)
            }
        }
    }

    /// Resets `stream` with `errorCode`; its close is reported as an event later.
    func reset(stream: Int32, errorCode: UInt32) {
        outgoingBodies[stream] = nil
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, errorCode)
    }

    /// Queues a PING; `.pingAcknowledged` follows when the peer answers.
    func ping() {
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Queues a GOAWAY naming the last stream we processed: no new stream is accepted, the
    /// open ones may finish.
    func goAway(errorCode: UInt32 = ErrorCode.noError) {
        let last = nghttp2_session_get_last_proc_stream_id(session)
        _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode, nil, 0)
    }

    /// The peer's limit on streams we may open at once.
    var peerMaxConcurrentStreams: Int {
        Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    // MARK: callbacks

    private static func from(_ user: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(user!).takeUnretainedValue()
    }

    private func readBody(
        stream: Int32, into buffer: UnsafeMutablePointer<UInt8>?, length: Int, flags: UnsafeMutablePointer<UInt32>?
    ) -> Int {
        guard let (bytes, offset) = outgoingBodies[stream], let buffer else {
            flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(length, bytes.count - offset)
        bytes.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + offset, count: count)
        }
        if offset + count == bytes.count {
            outgoingBodies[stream] = nil
            flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        } else {
            outgoingBodies[stream]?.offset = offset + count
        }
        return count
    }

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame else { return 0 }
            HTTP2Session.from(user).partialHeaders[frame.pointee.hd.stream_id] = []
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value else { return 0 }
            let session = HTTP2Session.from(user)
            let stream = frame.pointee.hd.stream_id
            // nghttp2 has checked the bytes (HTTP messaging rules): names are lower-case
            // tokens and values carry no CR, LF or NUL.
            let field = HTTPField(
                name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
            session.partialHeaders[stream, default: []].append(field)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, user in
            guard let data else { return 0 }
            let session = HTTP2Session.from(user)
            session.receivedBodies[stream, default: []].append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            session.events.append(.data(stream: stream, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame else { return 0 }
            HTTP2Session.from(user).received(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, errorCode, user in
            let session = HTTP2Session.from(user)
            session.outgoingBodies[stream] = nil
            session.partialHeaders[stream] = nil
            session.events.append(.streamClosed(stream: stream, errorCode: errorCode))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, _, user in
            // A request that could not start (GOAWAY came first) was never seen by the peer.
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let session = HTTP2Session.from(user)
            let stream = frame.pointee.hd.stream_id
            session.outgoingBodies[stream] = nil
            session.events.append(.streamClosed(stream: stream, errorCode: ErrorCode.refusedStream))
            return 0
        }
    }

    private func received(_ frame: nghttp2_frame) {
        let stream = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            events.append(.headers(stream: stream, fields: partialHeaders.removeValue(forKey: stream) ?? []))
            if endStream { events.append(.endStream(stream: stream)) }
        case NGHTTP2_DATA.rawValue:
            if endStream { events.append(.endStream(stream: stream)) }
        case NGHTTP2_GOAWAY.rawValue:
            events.append(.goAway(lastStream: frame.goaway.last_stream_id, errorCode: frame.goaway.error_code))
        case NGHTTP2_PING.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { events.append(.pingAcknowledged) }
        case NGHTTP2_SETTINGS.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { events.append(.settings) }
        default:
            break
        }
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: nghttp2_strerror(code))
    }
}

/// Why an HTTP/2 session failed; messages never carry header values or body bytes.
struct HTTP2Error: Error, Equatable, CustomStringConvertible {
    enum Kind: Equatable { case protocolViolation, internalFailure }
    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    var description: String { message }
}
