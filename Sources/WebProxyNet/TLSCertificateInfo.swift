internal import CWebProxyOpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// What a person wants to know about a certificate: who it names, who issued it, when it
/// ends and its pin.
public struct TLSCertificateInfo: Sendable, Equatable {
    /// The subject's commonName, if any.
    public let subjectCommonName: String?
    /// DNS names from subjectAltName.
    public let dnsNames: [String]
    /// IP addresses from subjectAltName, as text.
    public let ipAddresses: [String]
    /// The issuer's commonName, if any.
    public let issuerCommonName: String?
    /// notAfter as seconds since the Unix epoch (UTC).
    public let notAfter: Int64
    /// notBefore as seconds since the Unix epoch (UTC).
    public let notBefore: Int64
    /// SHA-256 of the SubjectPublicKeyInfo, base64: the value to put in a pin.
    public let spkiSHA256Base64: String

    /// notAfter as "YYYY-MM-DD hh:mm:ss UTC".
    public var notAfterDescription: String { TLSCertificateInfo.formatUTC(notAfter) }
    /// notBefore as "YYYY-MM-DD hh:mm:ss UTC".
    public var notBeforeDescription: String { TLSCertificateInfo.formatUTC(notBefore) }

    /// The names a person would compare with the host: SAN DNS names and IPs, else the CN.
    public var names: [String] {
        let alternative = dnsNames + ipAddresses
        if !alternative.isEmpty { return alternative }
        return subjectCommonName.map { [$0] } ?? []
    }

    /// Reads the fields of an `X509*` (borrowed, not freed).
    init(certificate: OpaquePointer) {
        subjectCommonName = Self.commonName(of: X509_get_subject_name(certificate))
        issuerCommonName = Self.commonName(of: X509_get_issuer_name(certificate))
        var dns: [String] = []
        var ips: [String] = []
        Self.readSubjectAltNames(of: certificate, dns: &dns, ips: &ips)
        dnsNames = dns
        ipAddresses = ips
        notAfter = Self.epochSeconds(X509_get0_notAfter(certificate))
        notBefore = Self.epochSeconds(X509_get0_notBefore(certificate))
        spkiSHA256Base64 = Self.base64(Self.spkiSHA256(of: certificate))
    }

    // MARK: - X509 reading helpers shared with TLSContext and the tests' certificate authority

    /// SHA-256 over the DER SubjectPublicKeyInfo of an `X509*`; empty if it cannot be encoded.
    package static func spkiSHA256(of certificate: OpaquePointer) -> [UInt8] {
        guard let publicKey = X509_get_X509_PUBKEY(certificate) else { return [] }
        let length = i2d_X509_PUBKEY(publicKey, nil)
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509_PUBKEY(publicKey, &cursor)
        }
        guard written == length else { return [] }
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        der.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
    }

    /// Standard base64 with padding (OpenSSL's encoder).
    package static func base64(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "" }
        let capacity = 4 * ((bytes.count + 2) / 3) + 1
        var output = [UInt8](repeating: 0, count: capacity)
        let length = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { buffer in
                EVP_EncodeBlock(buffer.baseAddress, input.baseAddress, Int32(input.count))
            }
        }
        return String(decoding: output.prefix(Int(max(length, 0))), as: UTF8.self)
    }

    /// Decodes standard padded base64; nil if the text is not valid base64.
    static func decodeBase64(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard !input.isEmpty, input.count % 4 == 0 else { return nil }
        var output = [UInt8](repeating: 0, count: input.count / 4 * 3)
        let length = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { buffer in
                EVP_DecodeBlock(buffer.baseAddress, source.baseAddress, Int32(source.count))
            }
        }
        guard length >= 0 else { return nil }
        // EVP_DecodeBlock counts the zero bytes that stand for '=' padding.
        let padding = input.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
        guard padding <= 2, Int(length) >= padding else { return nil }
        return Array(output.prefix(Int(length) - padding))
    }

    /// The first commonName of an `X509_NAME*`, as UTF-8.
    static func commonName(of name: OpaquePointer?) -> String? {
        guard let name else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
            let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        return utf8String(data)
    }

    /// An ASN1 string converted to UTF-8 by OpenSSL.
    private static func utf8String(_ string: UnsafePointer<ASN1_STRING>) -> String? {
        var output: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&output, string)
        guard length >= 0, let output else { return nil }
        defer { CWebProxyOpenSSL_free(output) }
        return String(
            decoding: UnsafeBufferPointer(start: output, count: Int(length)), as: UTF8.self)
    }

    private static func readSubjectAltNames(
        of certificate: OpaquePointer, dns: inout [String], ips: inout [String]
    ) {
        guard let raw = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil) else {
            return
        }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        for index in 0..<max(OPENSSL_sk_num(names), 0) {
            guard let entry = OPENSSL_sk_value(names, index) else { continue }
            let general = entry.assumingMemoryBound(to: GENERAL_NAME.self).pointee
            switch general.type {
            case GEN_DNS:
                if let value = general.d.dNSName, let text = asciiString(value) {
                    dns.append(text)
                }
            case GEN_IPADD:
                if let value = general.d.iPAddress, let text = ipText(value) {
                    ips.append(text)
                }
            default:
                continue
            }
        }
    }

    private static func asciiString(_ string: UnsafePointer<ASN1_STRING>) -> String? {
        let length = Int(ASN1_STRING_length(string))
        guard length >= 0, let bytes = ASN1_STRING_get0_data(string) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    private static func ipText(_ string: UnsafePointer<ASN1_STRING>) -> String? {
        let length = Int(ASN1_STRING_length(string))
        guard let bytes = ASN1_STRING_get0_data(string), length == 4 || length == 16 else {
            return nil
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = length == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(
            decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An ASN1_TIME as seconds since the Unix epoch; 0 if unreadable.
    static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        guard let time else { return 0 }
        var fields = tm()
        guard ASN1_TIME_to_tm(time, &fields) == 1 else { return 0 }
        return Int64(timegm(&fields))
    }

    /// Seconds since the Unix epoch as "YYYY-MM-DD hh:mm:ss UTC".
    static func formatUTC(_ seconds: Int64) -> String {
        var value = time_t(seconds)
        var fields = tm()
        guard gmtime_r(&value, &fields) != nil else { return "\(seconds)" }
        func pad(_ number: Int32, _ width: Int) -> String {
            let digits = String(number)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let year = pad(fields.tm_year + 1900, 4)
        let date = "\(year)-\(pad(fields.tm_mon + 1, 2))-\(pad(fields.tm_mday, 2))"
        let time = "\(pad(fields.tm_hour, 2)):\(pad(fields.tm_min, 2)):\(pad(fields.tm_sec, 2))"
        return "\(date) \(time) UTC"
    }
}
