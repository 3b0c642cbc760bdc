internal import CWebProxyOpenSSL

/// AES-256-CTR through OpenSSL's EVP: one direction of an obfuscated2 connection. The
/// counter runs on across calls, so bytes must be passed in stream order.
final class AESCounterCipher {
    private let context: OpaquePointer

    /// A cipher for a 32-byte key and 16-byte initial counter; nil if either has another
    /// length or OpenSSL refuses.
    init?(key: [UInt8], iv: [UInt8]) {
        guard key.count == 32, iv.count == 16, let context = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_EncryptInit_ex(context, EVP_aes_256_ctr(), nil, key, iv) == 1 else {
            EVP_CIPHER_CTX_free(context)
            return nil
        }
        self.context = context
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Encrypts or decrypts `input` (the same operation in CTR mode).
    func apply(_ input: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: input.count)
        var offset = 0
        // EVP takes an Int32 length: go in bounded chunks.
        while offset < input.count {
            let count = min(input.count - offset, 1 << 20)
            var written: Int32 = 0
            input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { target in
                    _ = EVP_EncryptUpdate(
                        context, target.baseAddress! + offset, &written, source.baseAddress! + offset, Int32(count))
                }
            }
            offset += count
        }
        return output
    }

    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
    }
}
