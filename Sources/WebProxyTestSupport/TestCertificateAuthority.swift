internal import CWebProxyOpenSSL
import WebProxyNet

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway certificate authority for tests, the test relay and demos. NOT for production:
/// keys live in memory, validity is loose and nothing is revoked.
///
/// It makes EC P-256 keys and SHA-256 signed X.509 v3 certificates with OpenSSL, so tests can
/// run real TLS on loopback: a trusted leaf, a leaf for the wrong name, an expired leaf, and
/// (from a second authority) a leaf from an issuer the client does not trust.
public final class TestCertificateAuthority {
    /// When an issued certificate is valid.
    public enum Validity: Sendable, Equatable {
        /// From an hour ago to a week from now.
        case current
        /// From 30 days ago to yesterday.
        case expired
        /// Explicit bounds in seconds since the Unix epoch (UTC).
        case custom(notBefore: Int64, notAfter: Int64)
    }

    /// A certificate issued by this authority and its private key.
    public struct IssuedCertificate: Sendable, Equatable, CustomStringConvertible {
        /// The leaf certificate, PEM.
        public let certificatePEM: String
        /// The leaf's private key, PEM (unencrypted).
        public let privateKeyPEM: String
        /// Base64 SHA-256 of the leaf's SubjectPublicKeyInfo (a `pin-sha256` value).
        public let spkiPin: String

        /// Server settings that present this certificate and select `h2` when offered, as
        /// fronts do; with `WEBPROXY_TEST_HTTP=1.1` in the environment, HTTP/1.1 only, so
        /// the same tests, demo and benchmarks run over either.
        public var serverConfiguration: TLSConfiguration.Server {
            TLSConfiguration.Server(
                certificateChainPEM: certificatePEM, privateKeyPEM: privateKeyPEM,
                alpnProtocols: TestCertificateAuthority.testServerALPN)
        }

        // Even a test key stays out of logs and failure messages.
        public var description: String {
            "IssuedCertificate(pin: \(spkiPin), privateKey: <redacted>)"
        }
    }

    /// The ALPN list of test servers: `h2, http/1.1`, or `http/1.1` when forced.
    public static var testServerALPN: [String] {
        getenv("WEBPROXY_TEST_HTTP").map { String(cString: $0) } == "1.1" ? ["http/1.1"] : ["h2", "http/1.1"]
    }

    /// The authority's commonName.
    public let commonName: String
    /// The authority's self-signed certificate, PEM: what a client trusts (`caPEM`/`caFile`).
    public let certificatePEM: String
    /// Base64 SHA-256 of the authority's SubjectPublicKeyInfo (a `pin-sha256` value).
    public let spkiPin: String

    private let key: OpaquePointer
    private let certificate: OpaquePointer

    /// Seconds in a day.
    private static let day: Int64 = 86_400

    /// Creates a new authority with a fresh P-256 key, valid from yesterday for a year.
    public init(commonName: String = "webproxyd Test CA") throws(TLSError) {
        let key = try Self.generateKey()
        let now = Int64(time(nil))
        let certificate: OpaquePointer
        do {
            certificate = try Self.makeCertificate(
                commonName: commonName, publicKey: key, notBefore: now - Self.day,
                notAfter: now + 365 * Self.day, issuer: nil, signingKey: key,
                extensions: [
                    (NID_basic_constraints, "critical,CA:TRUE"),
                    (NID_key_usage, "critical,keyCertSign,cRLSign"),
                    (NID_subject_key_identifier, "hash"),
                ])
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        let certificatePEM: String
        do {
            certificatePEM = try Self.pem { PEM_write_bio_X509($0, certificate) }
        } catch {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw error
        }
        self.commonName = commonName
        self.key = key
        self.certificate = certificate
        self.certificatePEM = certificatePEM
        spkiPin = TLSCertificateInfo.base64(TLSCertificateInfo.spkiSHA256(of: certificate))
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// Issues a server certificate for `dnsNames` and `ipAddresses` (subjectAltName), with a
    /// fresh P-256 key. The commonName is the first DNS name (or IP address).
    public func issueLeaf(
        dnsNames: [String], ipAddresses: [String] = [], validity: Validity = .current
    ) throws(TLSError) -> IssuedCertificate {
        let alternativeNames = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        guard let commonName = dnsNames.first ?? ipAddresses.first else {
            throw TLSError(.configuration, "a test certificate needs at least one name")
        }
        guard alternativeNames.allSatisfy({ !$0.contains(",") && !$0.utf8.contains(0) }) else {
            throw TLSError(.configuration, "test certificate names cannot contain commas or NUL")
        }
        let now = Int64(time(nil))
        let notBefore: Int64
        let notAfter: Int64
        switch validity {
        case .current: (notBefore, notAfter) = (now - 3_600, now + 7 * Self.day)
        case .expired: (notBefore, notAfter) = (now - 30 * Self.day, now - Self.day)
        case .custom(let start, let end): (notBefore, notAfter) = (start, end)
        }
        let leafKey = try Self.generateKey()
        defer { EVP_PKEY_free(leafKey) }
        let leaf = try Self.makeCertificate(
            commonName: commonName, publicKey: leafKey, notBefore: notBefore, notAfter: notAfter,
            issuer: certificate, signingKey: key,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
                (NID_subject_alt_name, alternativeNames.joined(separator: ",")),
            ])
        defer { X509_free(leaf) }
        return IssuedCertificate(
            certificatePEM: try Self.pem { PEM_write_bio_X509($0, leaf) },
            privateKeyPEM: try Self.pem {
                PEM_write_bio_PrivateKey($0, leafKey, nil, nil, 0, nil, nil)
            },
            spkiPin: TLSCertificateInfo.base64(TLSCertificateInfo.spkiSHA256(of: leaf)))
    }

    // MARK: - OpenSSL building blocks

    private static func generateKey() throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let key = CWebProxyOpenSSL_EVP_EC_gen_P256() else {
            throw TLSError(
                .configuration, "cannot generate a P-256 key",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        return key
    }

    /// Builds and signs an X.509 v3 certificate; self-signed when `issuer` is nil.
    private static func makeCertificate(
        commonName: String, publicKey: OpaquePointer, notBefore: Int64, notAfter: Int64,
        issuer: OpaquePointer?, signingKey: OpaquePointer, extensions: [(Int32, String)]
    ) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let certificate = X509_new() else {
            throw TLSError(.configuration, "cannot allocate a certificate")
        }
        var serial = [UInt8](repeating: 0, count: 16)
        let subject = X509_get_subject_name(certificate)
        var built =
            X509_set_version(certificate, Int(X509_VERSION_3)) == 1
            && RAND_bytes(&serial, Int32(serial.count)) == 1
            && X509_set_pubkey(certificate, publicKey) == 1
            && ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notBefore)) != nil
            && ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notAfter)) != nil
            && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1
            && X509_set_issuer_name(
                certificate, issuer.map { X509_get_subject_name($0) } ?? subject) == 1
        if built {
            serial[0] &= 0x7f  // a positive serial number
            let number = BN_bin2bn(serial, Int32(serial.count), nil)
            built =
                number != nil
                && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil
            BN_free(number)
        }
        if built {
            var context = X509V3_CTX()
            X509V3_set_ctx(&context, issuer ?? certificate, certificate, nil, nil, 0)
            for (nid, value) in extensions where built {
                guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                    built = false
                    break
                }
                built = X509_add_ext(certificate, ext, -1) == 1
                X509_EXTENSION_free(ext)
            }
        }
        if built { built = X509_sign(certificate, signingKey, EVP_sha256()) > 0 }
        guard built else {
            X509_free(certificate)
            throw TLSError(
                .configuration, "cannot build the test certificate for \(commonName)",
                openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        return certificate
    }

    /// Runs a PEM writer against a memory BIO and returns what it wrote.
    private static func pem(_ write: (OpaquePointer) -> Int32) throws(TLSError) -> String {
        ERR_clear_error()
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw TLSError(.configuration, "cannot allocate a memory BIO")
        }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else {
            throw TLSError(
                .configuration, "cannot write PEM", openSSLErrors: TLSError.drainOpenSSLErrors())
        }
        let count = Int(BIO_ctrl_pending(bio))
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = max(0, Int(BIO_read(bio, buffer.baseAddress, Int32(count))))
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
