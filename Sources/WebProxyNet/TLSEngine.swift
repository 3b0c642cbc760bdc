internal import CWebProxyOpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// One TLS connection as a sans-I/O state machine: OpenSSL reads and writes ciphertext
/// through a BIO of our own over two byte queues.
///
/// The owner moves bytes: received ciphertext goes in with `feed`, plaintext comes out of
/// `readPlaintext`, plaintext goes in with `write`, and ciphertext to send comes out of
/// `takeCiphertext`. After every call the owner should take the pending ciphertext (a
/// handshake step, a read that answered a key update, a shutdown all produce some).
/// Not `Sendable`: an `SSL*` belongs to one thread (the event loop that owns the socket).
public final class TLSEngine {
    /// Where a handshake stands after one step.
    public enum HandshakeProgress: Equatable, Sendable {
        /// The handshake is done; plaintext can flow.
        case complete
        /// OpenSSL needs more ciphertext from the peer (send pending ciphertext first).
        case wantRead
        /// OpenSSL needs to write; take the ciphertext and step again.
        case wantWrite
    }

    /// What one `readPlaintext` call produced.
    public enum ReadResult: Equatable, Sendable {
        /// This many plaintext bytes were written to the front of the buffer.
        case bytes(Int)
        /// No plaintext until more ciphertext is fed.
        case wantRead
        /// The peer is done: `clean` when it sent close_notify, false when the transport
        /// ended without one (a truncation an attacker could have caused).
        case eof(clean: Bool)
    }

    /// The context this engine was made from.
    public let context: TLSContext
    /// The name the client verifies and sends as SNI; nil for server engines.
    public let serverName: String?
    /// Ciphertext `write` lets pile up before it stops consuming plaintext.
    public let maximumPendingCiphertext: Int

    private let ssl: OpaquePointer
    /// Ciphertext fed and not yet read by OpenSSL.
    private var incoming = ByteQueue()
    /// Ciphertext OpenSSL wrote and the owner has not taken.
    private var outgoing = ByteQueue()
    /// Why the chain did not verify, recorded by the verify callback during the handshake.
    private var verificationFailure: VerificationFailure?
    /// The first fatal error; every later call reports it again.
    private var failure: TLSError?
    /// Set once the peer's stream ended: true after close_notify, false after a bare EOF.
    private var peerClosed: Bool?
    /// Set by `feedEOF`: the transport will deliver no more bytes.
    private var transportEnded = false
    /// Latched once OpenSSL first reports the handshake finished; `SSL_is_init_finished`
    /// turns false again while a TLS 1.3 post-handshake message (a ticket) is being read.
    private var handshakeFinished = false

    /// Default for `maximumPendingCiphertext`: enough for a few full socket writes.
    public static let defaultMaximumPendingCiphertext = 256 * 1024
    /// The most plaintext one record carries, and a bound on what a record adds to it
    /// (header, content type, AEAD tag; RFC 8446 §5.2).
    static let recordPlaintext = 16 * 1024
    static let recordOverhead = 64

    /// Creates a client engine that verifies `serverName` (DNS name or IP address literal)
    /// and resumes the context's last session for it when there is one. `alpnProtocols`
    /// replaces the context's ALPN offer for this connection.
    public convenience init(
        clientContext: TLSContext, serverName: String, alpnProtocols: [String]? = nil,
        maximumPendingCiphertext: Int = TLSEngine.defaultMaximumPendingCiphertext
    ) throws(TLSError) {
        guard clientContext.role == .client else {
            throw TLSError(.invalidState, "a client engine needs a client context")
        }
        guard !serverName.isEmpty, serverName.utf8.count <= 253, !serverName.utf8.contains(0)
        else {
            throw TLSError(.configuration, "the server name must be 1 to 253 bytes with no NUL")
        }
        try self.init(
            context: clientContext, serverName: serverName,
            maximumPendingCiphertext: maximumPendingCiphertext)
        if let alpnProtocols { try offer(alpnProtocols) }
    }

    /// Creates a server engine (for the test relay).
    public convenience init(
        serverContext: TLSContext,
        maximumPendingCiphertext: Int = TLSEngine.defaultMaximumPendingCiphertext
    ) throws(TLSError) {
        guard serverContext.role == .server else {
            throw TLSError(.invalidState, "a server engine needs a server context")
        }
        try self.init(
            context: serverContext, serverName: nil,
            maximumPendingCiphertext: maximumPendingCiphertext)
    }

    private init(
        context: TLSContext, serverName: String?, maximumPendingCiphertext: Int
    ) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.handle) else {
            throw TLSError(
                .configuration, "cannot create a TLS connection",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        guard let method = Self.queueBIOMethod, let bio = BIO_new(method) else {
            SSL_free(ssl)
            throw TLSError(
                .configuration, "cannot create a BIO",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        self.context = context
        self.serverName = serverName
        self.maximumPendingCiphertext = max(1, maximumPendingCiphertext)
        self.ssl = ssl
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        BIO_set_init(bio, 1)
        SSL_set_bio(ssl, bio, bio)  // ssl owns the BIO from here on; it reads and writes through it
        _ = CWebProxyOpenSSL_SSL_set_app_data(ssl, Unmanaged.passUnretained(self).toOpaque())

        guard let serverName else {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        try configureServerName(serverName)
        if let session = context.cachedSession(for: serverName) {
            _ = SSL_set_session(ssl, session)
            SSL_SESSION_free(session)
        }
    }

    deinit {
        SSL_free(ssl)
    }

    private func offer(_ protocols: [String]) throws(TLSError) {
        let wire = try TLSContext.alpnWireFormat(protocols)
        // Like SSL_CTX_set_alpn_protos, 0 is success.
        let status = wire.withUnsafeBufferPointer { SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }
        guard status == 0 else {
            throw TLSError(.configuration, "cannot set ALPN protocols", openSSLErrors: TLSError.drainOpenSSLErrors())
        }
    }

    /// Sets hostname (or IP) verification, and SNI for DNS names only (RFC 6066 forbids IPs).
    private func configureServerName(_ name: String) throws(TLSError) {
        ERR_clear_error()
        if Self.isIPAddressLiteral(name) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 else {
                throw TLSError(
                    .configuration, "cannot verify against IP address \(name)",
                    openSSLErrors: TLSError.drainOpenSSLErrors())
            }
            return
        }
        SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
        guard SSL_set1_host(ssl, name) == 1,
            CWebProxyOpenSSL_SSL_set_tlsext_host_name(ssl, name) == 1
        else {
            throw TLSError(
                .configuration, "cannot use \(name) as the TLS server name",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
    }

    private static func isIPAddressLiteral(_ name: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, name, &address) == 1 || inet_pton(AF_INET6, name, &address) == 1
    }

    // MARK: - Ciphertext in and out

    /// Hands ciphertext received from the transport to OpenSSL (copied, not retained).
    public func feed(_ ciphertext: UnsafeRawBufferPointer) {
        incoming.append(ciphertext)
    }

    /// Hands ciphertext received from the transport to OpenSSL.
    public func feed<Bytes: Sequence<UInt8>>(_ ciphertext: Bytes) {
        let done: Void? = ciphertext.withContiguousStorageIfAvailable {
            feed(UnsafeRawBufferPointer($0))
        }
        if done == nil { Array(ciphertext).withUnsafeBytes { feed($0) } }
    }

    /// Tells the engine the transport reached end of file: reads after the buffered bytes
    /// report `.eof(clean: false)` unless the peer's close_notify came first.
    public func feedEOF() {
        transportEnded = true
    }

    /// Ciphertext received but not yet processed by OpenSSL.
    public var bufferedCiphertextCount: Int { incoming.count }

    /// Ciphertext waiting to be sent.
    public var pendingCiphertextCount: Int { outgoing.count }

    /// Removes and returns all ciphertext waiting to be sent.
    public func takeCiphertext() -> [UInt8] {
        outgoing.takeAll()
    }

    /// Removes and returns up to `maximum` bytes of ciphertext to send: a slice of the
    /// engine's buffer, not a copy.
    public func takeCiphertext(upTo maximum: Int) -> ArraySlice<UInt8> {
        outgoing.take(min(maximum, outgoing.count))
    }

    // MARK: - The BIO

    /// OpenSSL's memory BIO zeroes its buffer before every write into it and copies out on
    /// every read; this one appends to and reads from the engine's queues, and the owner
    /// sends the ciphertext straight from the queue.
    nonisolated(unsafe) private static let queueBIOMethod: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "webproxyd queue") else {
            return nil
        }
        _ = BIO_meth_set_write_ex(method) { bio, data, length, written in
            guard let bio, let data else { return 0 }
            engine(of: bio).outgoing.append(UnsafeRawBufferPointer(start: data, count: length))
            written?.pointee = length
            return 1
        }
        _ = BIO_meth_set_read_ex(method) { bio, data, length, read in
            guard let bio, let data else { return 0 }
            let engine = engine(of: bio)
            CWebProxyOpenSSL_BIO_clear_retry_flags(bio)
            read?.pointee = 0
            guard !engine.incoming.isEmpty else {
                // Nothing yet is "retry later"; after the transport's end it is end of file.
                if !engine.transportEnded { CWebProxyOpenSSL_BIO_set_retry_read(bio) }
                return 0
            }
            let count = min(length, engine.incoming.count)
            let front = engine.incoming.take(count)
            front.withUnsafeBytes { UnsafeMutableRawPointer(data).copyMemory(from: $0.baseAddress!, byteCount: count) }
            read?.pointee = count
            return 1
        }
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            guard let bio else { return 0 }
            switch command {
            case BIO_CTRL_FLUSH: return 1
            case BIO_CTRL_PENDING: return engine(of: bio).incoming.count
            case BIO_CTRL_WPENDING: return engine(of: bio).outgoing.count
            case BIO_CTRL_EOF: return engine(of: bio).transportEnded && engine(of: bio).incoming.isEmpty ? 1 : 0
            default: return 0
            }
        }
        return method
    }()

    private static func engine(of bio: OpaquePointer) -> TLSEngine {
        Unmanaged<TLSEngine>.fromOpaque(BIO_get_data(bio)).takeUnretainedValue()
    }

    // MARK: - Handshake

    /// Whether the handshake has finished.
    public var isHandshakeComplete: Bool {
        if !handshakeFinished && SSL_is_init_finished(ssl) == 1 { handshakeFinished = true }
        return handshakeFinished
    }

    /// Advances the handshake with the ciphertext fed so far.
    public func handshake() throws(TLSError) -> HandshakeProgress {
        if let failure { throw failure }
        if isHandshakeComplete { return .complete }
        ERR_clear_error()
        let status = SSL_do_handshake(ssl)
        if status == 1 {
            handshakeFinished = true
            return .complete
        }
        switch SSL_get_error(ssl, status) {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case let code:
            throw fail(code)
        }
    }

    // MARK: - Plaintext

    /// Decrypts into `buffer` until it is full or no whole record is left; never more than
    /// `buffer.count` bytes. Drives the handshake first if it is not complete.
    public func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError)
        -> ReadResult
    {
        if let failure { throw failure }
        if let clean = peerClosed { return .eof(clean: clean) }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        _ = isHandshakeComplete  // latch it before a ticket read makes OpenSSL say "in init"
        var total = 0
        while total < buffer.count {
            ERR_clear_error()
            var count = 0
            let status = SSL_read_ex(ssl, base + total, buffer.count - total, &count)
            if status == 1 {
                handshakeFinished = true
                total += count
                continue
            }
            let code = SSL_get_error(ssl, status)
            switch code {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return total > 0 ? .bytes(total) : .wantRead
            case SSL_ERROR_ZERO_RETURN:
                peerClosed = true
                return total > 0 ? .bytes(total) : .eof(clean: true)
            default:
                if isTruncationEOF(code) && isHandshakeComplete {
                    _ = TLSError.drainOpenSSLErrors()
                    peerClosed = false
                    return total > 0 ? .bytes(total) : .eof(clean: false)
                }
                let error = fail(code)
                // Bytes already decrypted were authenticated: hand them over, fail next call.
                if total > 0 { return .bytes(total) }
                throw error
            }
        }
        return .bytes(total)
    }

    /// Reads up to `maxCount` plaintext bytes and appends them to `bytes` (`maxCount` bytes
    /// are reserved up front, so keep it to a buffer size, not a total).
    public func readPlaintext(into bytes: inout [UInt8], maxCount: Int) throws(TLSError)
        -> ReadResult
    {
        guard maxCount > 0 else { return .bytes(0) }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: maxCount))
        let result: Result<ReadResult, TLSError> = bytes.withUnsafeMutableBytes { raw in
            do throws(TLSError) {
                return .success(
                    try readPlaintext(into: UnsafeMutableRawBufferPointer(rebasing: raw[start...])))
            } catch {
                return .failure(error)
            }
        }
        let produced: Int
        if case .success(.bytes(let count)) = result { produced = count } else { produced = 0 }
        bytes.removeLast(maxCount - produced)
        return try result.get()
    }

    /// Encrypts plaintext; returns how many bytes were consumed. Consumes less than all of
    /// it while the handshake is running or once `maximumPendingCiphertext` bytes wait to be
    /// taken: call again with the rest after taking ciphertext (and feeding the peer's).
    public func write(_ plaintext: UnsafeRawBufferPointer) throws(TLSError) -> Int {
        if let failure { throw failure }
        guard SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN == 0 else {
            throw TLSError(.invalidState, "cannot write after shutdown() sent close_notify")
        }
        guard let base = plaintext.baseAddress else { return 0 }
        // Room for the records of this write, so appending them never copies the queue.
        let records = plaintext.count / Self.recordPlaintext + 1
        outgoing.reserveCapacity(min(plaintext.count, maximumPendingCiphertext) + records * Self.recordOverhead)
        var total = 0
        while total < plaintext.count && pendingCiphertextCount < maximumPendingCiphertext {
            ERR_clear_error()
            var count = 0
            let status = SSL_write_ex(ssl, base + total, plaintext.count - total, &count)
            if status == 1 {
                total += count
                continue
            }
            let code = SSL_get_error(ssl, status)
            if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { break }
            let error = fail(code)
            if total > 0 { return total }
            throw error
        }
        return total
    }

    /// Encrypts plaintext; returns how many bytes were consumed (see `write(_:)`).
    public func write<Bytes: Sequence<UInt8>>(_ plaintext: Bytes) throws(TLSError) -> Int {
        let attempt = { (raw: UnsafeRawBufferPointer) -> Result<Int, TLSError> in
            do throws(TLSError) { return .success(try self.write(raw)) } catch {
                return .failure(error)
            }
        }
        if let result = plaintext.withContiguousStorageIfAvailable({
            attempt(UnsafeRawBufferPointer($0))
        }) {
            return try result.get()
        }
        return try Array(plaintext).withUnsafeBytes(attempt).get()
    }

    /// Queues close_notify (take the ciphertext and send it). Returns true when the peer's
    /// close_notify has been received as well. Before the handshake finishes there is nothing
    /// to close politely: it returns false and queues nothing.
    public func shutdown() throws(TLSError) -> Bool {
        if let failure { throw failure }
        guard isHandshakeComplete else { return false }
        ERR_clear_error()
        let status = SSL_shutdown(ssl)
        if status == 1 { return true }
        if status == 0 { return false }
        let code = SSL_get_error(ssl, status)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return false }
        throw fail(code)
    }

    // MARK: - What was negotiated

    /// The peer's leaf certificate (after the handshake; also for resumed sessions).
    public var peerCertificate: TLSCertificateInfo? {
        guard let certificate = SSL_get0_peer_certificate(ssl) else { return nil }
        return TLSCertificateInfo(certificate: certificate)
    }

    /// "TLSv1.3" or "TLSv1.2" once the handshake is complete.
    public var negotiatedProtocolVersion: String? {
        guard isHandshakeComplete, let name = SSL_get_version(ssl) else { return nil }
        return String(cString: name)
    }

    /// The cipher suite, e.g. "TLS_AES_256_GCM_SHA384", once the handshake is complete.
    public var negotiatedCipherSuite: String? {
        guard isHandshakeComplete, let cipher = SSL_get_current_cipher(ssl),
            let name = SSL_CIPHER_get_name(cipher)
        else { return nil }
        return String(cString: name)
    }

    /// The ALPN protocol the server selected, nil if none.
    public var negotiatedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// On a server engine, the SNI name the client sent (nil when it sent none).
    public var requestedServerName: String? {
        guard serverName == nil,
            let name = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name))
        else { return nil }
        return String(cString: name)
    }

    /// Whether the handshake resumed an earlier session instead of a full handshake.
    public var isSessionResumed: Bool { SSL_session_reused(ssl) == 1 }

    // MARK: - Errors

    /// True when an SSL error means the transport ended without close_notify.
    private func isTruncationEOF(_ code: Int32) -> Bool {
        guard transportEnded else { return false }
        if code == SSL_ERROR_SYSCALL { return true }
        return code == SSL_ERROR_SSL
            && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING
    }

    /// Turns the current OpenSSL failure into a sticky `TLSError`, draining the error queue.
    private func fail(_ code: Int32) -> TLSError {
        let error = describeFailure(code)
        failure = error
        return error
    }

    private func describeFailure(_ code: Int32) -> TLSError {
        let handshakeDone = isHandshakeComplete
        if (!handshakeDone && isTruncationEOF(code)) || code == SSL_ERROR_ZERO_RETURN {
            return TLSError(
                .closedDuringHandshake, "the connection closed during the TLS handshake",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        let reason = ERR_reason_error_string(ERR_peek_error()).map { String(cString: $0) }
        let stack = TLSError.drainOpenSSLErrors()
        if let verificationFailure, let serverName {
            return verificationFailure.error(serverName: serverName, openSSLErrors: stack)
        }
        let peer = serverName ?? "the client"
        if code == SSL_ERROR_SYSCALL {
            return TLSError(
                handshakeDone ? .protocolError : .handshakeFailed,
                "TLS with \(peer) failed: the transport ended unexpectedly", openSSLErrors: stack)
        }
        let what =
            handshakeDone
            ? "TLS connection with \(peer) failed" : "TLS handshake with \(peer) failed"
        return TLSError(
            handshakeDone ? .protocolError : .handshakeFailed,
            reason.map { "\(what): \($0)" } ?? what, openSSLErrors: stack)
    }

    // MARK: - OpenSSL callbacks (non-capturing; they find the engine through SSL app data)

    private static func engine(of ssl: OpaquePointer?) -> TLSEngine? {
        guard let ssl, let raw = CWebProxyOpenSSL_SSL_get_app_data(ssl) else { return nil }
        return Unmanaged<TLSEngine>.fromOpaque(raw).takeUnretainedValue()
    }

    /// `SSL_CTX_set_cert_verify_callback`: OpenSSL's chain and hostname verification, then
    /// the pins; records the reason of a failure for `describeFailure`.
    static func verifyCertificateChain(_ store: OpaquePointer?, pins: Set<[UInt8]>) -> Int32 {
        guard let store else { return 0 }
        let verified = X509_verify_cert(store)
        let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx())
        let engine = engine(of: ssl.map(OpaquePointer.init))
        guard verified == 1 else {
            engine?.verificationFailure = VerificationFailure(
                code: X509_STORE_CTX_get_error(store),
                certificate: X509_STORE_CTX_get_current_cert(store).map(TLSCertificateInfo.init))
            return verified
        }
        guard !pins.isEmpty else { return 1 }
        var leaf: TLSCertificateInfo?
        if let chain = X509_STORE_CTX_get0_chain(store) {
            for index in 0..<max(OPENSSL_sk_num(chain), 0) {
                guard let certificate = OPENSSL_sk_value(chain, index).map(OpaquePointer.init)
                else { continue }
                if pins.contains(TLSCertificateInfo.spkiSHA256(of: certificate)) { return 1 }
                if index == 0 { leaf = TLSCertificateInfo(certificate: certificate) }
            }
        }
        X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION)
        engine?.verificationFailure = VerificationFailure(
            code: X509_V_ERR_APPLICATION_VERIFICATION, certificate: leaf, isPinMismatch: true)
        return 0
    }

    /// `SSL_CTX_sess_set_new_cb`: keeps resumable sessions in the context. Returns 1 when
    /// the context took over OpenSSL's reference.
    static func sessionReceived(ssl: OpaquePointer?, session: OpaquePointer?) -> Int32 {
        guard let session, SSL_SESSION_is_resumable(session) == 1,
            let engine = engine(of: ssl), let serverName = engine.serverName
        else { return 0 }
        engine.context.storeSession(session, for: serverName)
        return 1
    }
}

/// Why certificate verification failed, captured while the certificate is at hand.
private struct VerificationFailure {
    var code: Int32
    var certificate: TLSCertificateInfo?
    var isPinMismatch = false

    func error(serverName: String, openSSLErrors: [String]) -> TLSError {
        if isPinMismatch {
            let served =
                certificate.map { " (the leaf's pin-sha256 is \($0.spkiSHA256Base64))" } ?? ""
            return TLSError(
                .pinMismatch, "certificate pin mismatch\(served)", openSSLErrors: openSSLErrors)
        }
        switch code {
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            let names = certificate?.names ?? []
            let subject =
                names.isEmpty
                ? "certificate without names" : "certificate for \(names.joined(separator: ", "))"
            return TLSError(
                .certificateNameMismatch, "\(subject) does not match \(serverName)",
                openSSLErrors: openSSLErrors)
        case X509_V_ERR_CERT_HAS_EXPIRED:
            let date = certificate?.notAfterDescription ?? "an earlier date"
            return TLSError(
                .certificateExpired, "certificate expired on \(date)", openSSLErrors: openSSLErrors)
        case X509_V_ERR_CERT_NOT_YET_VALID:
            let date = certificate?.notBeforeDescription ?? "a later date"
            return TLSError(
                .certificateNotYetValid, "certificate is not valid before \(date)",
                openSSLErrors: openSSLErrors)
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
            let issuer = certificate?.issuerCommonName.map { "; issued by \"\($0)\"" } ?? ""
            return TLSError(
                .untrustedIssuer, "issuer not trusted (use ca-file to trust a private CA)\(issuer)",
                openSSLErrors: openSSLErrors)
        default:
            let reason =
                X509_verify_cert_error_string(Int(code)).map { String(cString: $0) }
                ?? "error \(code)"
            return TLSError(
                .certificateInvalid, "certificate verification failed: \(reason)",
                openSSLErrors: openSSLErrors)
        }
    }
}
