internal import CWebProxyOpenSSL
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One OpenSSL `SSL_CTX` per configuration: trust, pins, ALPN and the client session cache.
///
/// Build it off the event loop (it reads the CA file or system store), then share it. From
/// a hash directory (the system store's, usually) a root is read when a handshake first
/// needs it, one small file on the handshake's thread, and kept in the context's store.
/// `@unchecked Sendable` because OpenSSL documents an `SSL_CTX` as safe to use from many
/// threads once set up, nothing here changes it after `init` (the store's cache of roots
/// read from a directory is OpenSSL's, under its own lock), and the one mutable part of
/// ours, the session cache, is behind a `Mutex`.
public final class TLSContext: @unchecked Sendable {
    /// Which side of the handshake engines made from this context play.
    public enum Role: Sendable, Equatable {
        case client
        case server
    }

    /// The side engines made from this context play.
    public let role: Role
    /// The `SSL_CTX*`.
    let handle: OpaquePointer
    /// Decoded SPKI SHA-256 pins; empty when pinning is off.
    let spkiPins: Set<[UInt8]>
    /// Server ALPN list in wire format, owned here because `SSL_select_next_proto` hands
    /// OpenSSL a pointer into it that must outlive the callback.
    private let serverALPN: UnsafeMutableBufferPointer<UInt8>?
    /// The latest resumable session per server name, newest last.
    private let sessions = Mutex<[CachedSession]>([])

    /// Most server names whose session is kept; a context normally serves one relay.
    static let maximumCachedSessions = 8
    /// Length of a SHA-256 pin.
    static let pinLength = 32

    /// Creates a client context: TLS 1.2+, verification per `configuration`, ALPN, session cache.
    public init(client configuration: TLSConfiguration.Client) throws(TLSError) {
        if configuration.insecureSkipVerificationForTesting && !configuration.spkiPins.isEmpty {
            throw TLSError(
                .configuration,
                "certificate pins cannot be combined with insecureSkipVerificationForTesting")
        }
        let pins = try Self.decodePins(configuration.spkiPins)
        let alpn = try Self.alpnWireFormat(configuration.alpnProtocols)
        let handle = try Self.makeContext(method: TLS_client_method())
        role = .client
        self.handle = handle
        spkiPins = pins
        serverALPN = nil

        try Self.offerWhatChromiumOffers(handle)
        try loadTrust(configuration.trust)
        if configuration.insecureSkipVerificationForTesting {
            SSL_CTX_set_verify(handle, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(handle, SSL_VERIFY_PEER, nil)
            // Runs the normal chain verification, then records why it failed (for a
            // readable error) or checks the pins on the verified chain.
            SSL_CTX_set_cert_verify_callback(
                handle,
                { store, argument in
                    // Fail closed: without the context there are no pins to check.
                    guard let argument else { return 0 }
                    let context = Unmanaged<TLSContext>.fromOpaque(argument).takeUnretainedValue()
                    return TLSEngine.verifyCertificateChain(store, pins: context.spkiPins)
                }, Unmanaged.passUnretained(self).toOpaque())
        }
        if !alpn.isEmpty {
            ERR_clear_error()
            let status = alpn.withUnsafeBufferPointer {
                SSL_CTX_set_alpn_protos(handle, $0.baseAddress, UInt32($0.count))
            }
            // Unlike its neighbours, SSL_CTX_set_alpn_protos returns 0 on success.
            guard status == 0 else {
                throw TLSError(
                    .configuration, "cannot set ALPN protocols",
                    openSSLErrors: TLSError.drainOpenSSLErrors())
            }
        }
        _ = CWebProxyOpenSSL_SSL_CTX_set_session_cache_mode(
            handle, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE))
        // TLS 1.3 tickets arrive after the handshake, so sessions are collected as OpenSSL
        // announces them rather than read once when the handshake ends.
        SSL_CTX_sess_set_new_cb(handle) { ssl, session in
            TLSEngine.sessionReceived(ssl: ssl, session: session)
        }
    }

    /// Creates a server context (for the test relay): certificate chain and key from PEM,
    /// TLS 1.2+, ALPN selected from `configuration.alpnProtocols`.
    public init(server configuration: TLSConfiguration.Server) throws(TLSError) {
        let alpn = try Self.alpnWireFormat(configuration.alpnProtocols)
        let handle = try Self.makeContext(method: TLS_server_method())
        role = .server
        self.handle = handle
        spkiPins = []
        if alpn.isEmpty {
            serverALPN = nil
        } else {
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: alpn.count)
            _ = buffer.initialize(from: alpn)
            serverALPN = buffer
        }
        try loadServerCredentials(configuration)
        if serverALPN != nil {
            SSL_CTX_set_alpn_select_cb(
                handle,
                { _, out, outLength, offered, offeredLength, argument in
                    guard let argument else { return SSL_TLSEXT_ERR_NOACK }
                    let context = Unmanaged<TLSContext>.fromOpaque(argument).takeUnretainedValue()
                    return context.selectALPN(out, outLength, offered, offeredLength)
                }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    deinit {
        sessions.withLock { entries in
            for entry in entries { SSL_SESSION_free(entry.session) }
            entries.removeAll()
        }
        SSL_CTX_free(handle)
        serverALPN?.deallocate()
    }

    // MARK: - Session cache

    /// Keeps `session` (taking over the caller's reference) as the one to resume for `serverName`.
    func storeSession(_ session: OpaquePointer, for serverName: String) {
        let entry = CachedSession(serverName: serverName, session: session)
        let evicted: [CachedSession] = sessions.withLock { entries in
            var dropped: [CachedSession] = []
            if let index = entries.firstIndex(where: { $0.serverName == serverName }) {
                dropped.append(entries.remove(at: index))
            }
            entries.append(entry)
            while entries.count > Self.maximumCachedSessions {
                dropped.append(entries.removeFirst())
            }
            return dropped
        }
        for dropped in evicted { SSL_SESSION_free(dropped.session) }
    }

    /// The session to resume for `serverName`, with a reference the caller must free.
    func cachedSession(for serverName: String) -> OpaquePointer? {
        let found: CachedSession? = sessions.withLock { entries in
            guard let entry = entries.last(where: { $0.serverName == serverName }) else {
                return nil
            }
            SSL_SESSION_up_ref(entry.session)
            return entry
        }
        return found?.session
    }

    /// A cached `SSL_SESSION*` and the name it was verified for. `@unchecked Sendable`:
    /// sessions are reference counted with atomics and only read once established, and the
    /// cache hands out a new reference under the lock.
    private struct CachedSession: @unchecked Sendable {
        let serverName: String
        let session: OpaquePointer
    }

    // MARK: - Setup helpers

    private static func makeContext(method: OpaquePointer?) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let handle = SSL_CTX_new(method) else {
            throw TLSError(
                .configuration, "cannot create a TLS context",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        guard CWebProxyOpenSSL_SSL_CTX_set_min_proto_version(handle, TLS1_2_VERSION) == 1 else {
            SSL_CTX_free(handle)
            throw TLSError(
                .configuration, "cannot require TLS 1.2 or newer",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        _ = SSL_CTX_set_options(handle, CWebProxyOpenSSL_SSL_OP_NO_RENEGOTIATION())
        // Partial writes let `write` report how much it consumed; a moving buffer lets the
        // caller retry from wherever its bytes now live; released buffers keep idle lanes small.
        _ = CWebProxyOpenSSL_SSL_CTX_set_mode(
            handle,
            Int(
                SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                    | SSL_MODE_RELEASE_BUFFERS))
        return handle
    }

    /// Chromium's TLS 1.3 suites, then its TLS 1.2 ciphers, in its order and nothing else
    /// (no FFDHE, no CBC-SHA256/384); its groups and signature algorithms as far as OpenSSL
    /// 3.0 has them. SECURITY.md lists what still differs and why.
    static let chromiumTLS13Suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
    static let chromiumTLS12Ciphers =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
        + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
        + "ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA:AES256-SHA"
    static let chromiumGroups = "X25519:P-256:P-384"
    static let chromiumSignatureAlgorithms =
        "ECDSA+SHA256:rsa_pss_rsae_sha256:RSA+SHA256:ECDSA+SHA384:rsa_pss_rsae_sha384:RSA+SHA384:"
        + "rsa_pss_rsae_sha512:RSA+SHA512"

    /// Shapes the ClientHello like current Chromium's, which is what a relay's visitors send:
    /// OpenSSL's defaults (31 suites with FFDHE, encrypt-then-MAC, no OCSP or SCT request)
    /// mark a script. Stapled OCSP and SCTs are asked for as browsers do; CT validation is
    /// permissive, so a server without SCTs is accepted exactly as before.
    private static func offerWhatChromiumOffers(_ handle: OpaquePointer) throws(TLSError) {
        ERR_clear_error()
        guard SSL_CTX_set_ciphersuites(handle, chromiumTLS13Suites) == 1,
            SSL_CTX_set_cipher_list(handle, chromiumTLS12Ciphers) == 1,
            CWebProxyOpenSSL_SSL_CTX_set1_groups_list(handle, chromiumGroups) == 1,
            CWebProxyOpenSSL_SSL_CTX_set1_sigalgs_list(handle, chromiumSignatureAlgorithms) == 1,
            // Also requests OCSP stapling (status_request): OpenSSL takes SCTs from either.
            SSL_CTX_enable_ct(handle, Int32(SSL_CT_VALIDATION_PERMISSIVE)) == 1
        else {
            throw TLSError(
                .configuration, "cannot shape the ClientHello", openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        _ = SSL_CTX_set_options(handle, CWebProxyOpenSSL_SSL_OP_NO_ENCRYPT_THEN_MAC())
    }

    private func loadTrust(_ trust: TLSConfiguration.Client.Trust) throws(TLSError) {
        ERR_clear_error()
        switch trust {
        case .system:
            if let directory = Self.systemTrustDirectory() {
                guard SSL_CTX_load_verify_dir(handle, directory) == 1 else {
                    throw TLSError(
                        .configuration, "cannot use the system trust store \(directory)",
                        openSSLErrors: TLSError.drainOpenSSLErrors())
                }
            } else {
                guard SSL_CTX_set_default_verify_paths(handle) == 1 else {
                    throw TLSError(
                        .configuration, "cannot load the system trust store",
                        openSSLErrors: TLSError.drainOpenSSLErrors())
                }
            }
        case .caDirectory(let path):
            guard SSL_CTX_load_verify_dir(handle, path) == 1 else {
                throw TLSError(
                    .configuration, "cannot use the CA directory \(path)",
                    openSSLErrors: TLSError.drainOpenSSLErrors())
            }
        case .caFile(let path):
            guard SSL_CTX_load_verify_locations(handle, path, nil) == 1 else {
                throw TLSError(
                    .configuration, "cannot load CA certificates from ca-file \(path)",
                    openSSLErrors: TLSError.drainOpenSSLErrors())
            }
        case .caPEM(let pem):
            let certificates = try Self.readCertificates(pem, what: "CA certificates")
            defer { certificates.forEach { X509_free($0) } }
            let store = SSL_CTX_get_cert_store(handle)
            for certificate in certificates where X509_STORE_add_cert(store, certificate) != 1 {
                throw TLSError(
                    .configuration, "cannot add a CA certificate to the trust store",
                    openSSLErrors: TLSError.drainOpenSSLErrors())
            }
        }
    }

    /// The system's certificate directory, when its roots can be read one by one as
    /// handshakes need them: OpenSSL's environment overrides are unset and the directory holds
    /// links named by subject hash (`openssl rehash`; Debian's ca-certificates keeps them).
    /// Parsing the whole bundle up front instead costs each context over 1 MiB (147 roots on
    /// Debian 12) to find the one a relay's chain ends in. Nil: load the default paths.
    static func systemTrustDirectory(
        environment: (String) -> String? = { getenv($0).map { String(cString: $0) } },
        defaultDirectory: String = String(cString: X509_get_default_cert_dir())
    ) -> String? {
        let overrides = [X509_get_default_cert_file_env(), X509_get_default_cert_dir_env()]
            .compactMap { $0.map { String(cString: $0) } }
        guard overrides.allSatisfy({ environment($0) == nil }),
            let directory = opendir(defaultDirectory)
        else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if isHashLinkName(name) { return defaultDirectory }
        }
        return nil
    }

    /// `5ad8a5d6.0`: eight hex digits of a subject hash, a dot, a counter.
    static func isHashLinkName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && parts[0].count == 8 && parts[0].allSatisfy { $0.isASCII && $0.isHexDigit }
            && !parts[1].isEmpty && parts[1].allSatisfy { $0.isASCII && $0.isNumber }
    }

    private func loadServerCredentials(_ configuration: TLSConfiguration.Server) throws(TLSError) {
        let chain = try Self.readCertificates(
            configuration.certificateChainPEM, what: "server certificate")
        defer { chain.forEach { X509_free($0) } }
        ERR_clear_error()
        guard SSL_CTX_use_certificate(handle, chain[0]) == 1 else {
            throw TLSError(
                .configuration, "cannot use the server certificate",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        for intermediate in chain.dropFirst()
        where CWebProxyOpenSSL_SSL_CTX_add1_chain_cert(handle, intermediate) != 1 {
            throw TLSError(
                .configuration, "cannot add an intermediate certificate",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        let key = try Self.readPrivateKey(configuration.privateKeyPEM)
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(handle, key) == 1, SSL_CTX_check_private_key(handle) == 1
        else {
            throw TLSError(
                .configuration, "the private key does not match the server certificate",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
    }

    /// Every certificate in `pem`, in order; at least one. The caller frees them.
    static func readCertificates(_ pem: String, what: String) throws(TLSError) -> [OpaquePointer] {
        ERR_clear_error()
        var certificates: [OpaquePointer] = []
        let bytes = Array(pem.utf8)
        bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else {
                return
            }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(certificate)
            }
        }
        // Reading past the last certificate always leaves "no start line" on the queue.
        ERR_clear_error()
        guard !certificates.isEmpty else {
            throw TLSError(.configuration, "no PEM certificate found in the \(what)")
        }
        return certificates
    }

    /// The private key in `pem`; the caller frees it. OpenSSL's messages are kept, never the key.
    static func readPrivateKey(_ pem: String) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else {
                return nil
            }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else {
            throw TLSError(
                .configuration, "cannot read the private key PEM",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        return key
    }

    private static func decodePins(_ pins: [String]) throws(TLSError) -> Set<[UInt8]> {
        var decoded = Set<[UInt8]>()
        for pin in pins {
            guard let hash = TLSCertificateInfo.decodeBase64(pin), hash.count == pinLength else {
                throw TLSError(
                    .configuration,
                    "pin \"\(pin)\" is not the base64 of a SHA-256 hash (44 characters ending in =)"
                )
            }
            decoded.insert(hash)
        }
        return decoded
    }

    /// ALPN names as length-prefixed bytes.
    static func alpnWireFormat(_ protocols: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError(.configuration, "ALPN protocol names must be 1 to 255 bytes long")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire
    }

    /// Server side of ALPN: the first of our protocols the client offered, or no ALPN at all.
    private func selectALPN(
        _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
        _ outLength: UnsafeMutablePointer<UInt8>?,
        _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32
    ) -> Int32 {
        guard let serverALPN, let out, let outLength, let offered else {
            return SSL_TLSEXT_ERR_NOACK
        }
        var selected: UnsafeMutablePointer<UInt8>?
        let status = SSL_select_next_proto(
            &selected, outLength, serverALPN.baseAddress, UInt32(serverALPN.count),
            offered, offeredLength)
        guard status == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
        out.pointee = UnsafePointer(selected)
        return SSL_TLSEXT_ERR_OK
    }
}
