// Umbrella header for the system OpenSSL 3 (libssl-dev).
//
// Swift imports plain functions but not function-like macros; every macro we need is
// wrapped below as a `static inline` function prefixed `CWebProxyOpenSSL_`.
#ifndef CWEBPROXY_OPENSSL_SHIM_H
#define CWEBPROXY_OPENSSL_SHIM_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/asn1.h>

// MARK: - TLS (WebProxyNet TLSContext / TLSEngine)

// SSL_OP_NO_RENEGOTIATION expands through the function-like SSL_OP_BIT macro.
static inline uint64_t CWebProxyOpenSSL_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}

// SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl.
static inline int CWebProxyOpenSSL_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

// SSL_OP_NO_ENCRYPT_THEN_MAC expands through SSL_OP_BIT too.
static inline uint64_t CWebProxyOpenSSL_SSL_OP_NO_ENCRYPT_THEN_MAC(void) {
    return SSL_OP_NO_ENCRYPT_THEN_MAC;
}

// The group and signature-algorithm list setters are macros over SSL_CTX_ctrl.
static inline int CWebProxyOpenSSL_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}
static inline int CWebProxyOpenSSL_SSL_CTX_set1_sigalgs_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_sigalgs_list(ctx, list);
}

// SSL_CTX_set_mode is a macro over SSL_CTX_ctrl.
static inline long CWebProxyOpenSSL_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

// SSL_CTX_set_session_cache_mode is a macro over SSL_CTX_ctrl.
static inline long CWebProxyOpenSSL_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

// SSL_CTX_add1_chain_cert is a macro over SSL_CTX_ctrl (server chain from PEM in memory).
static inline int CWebProxyOpenSSL_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

// SSL_set_tlsext_host_name (SNI) is a macro over SSL_ctrl.
static inline int CWebProxyOpenSSL_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

// The app-data accessors are macros over ex_data index 0; callbacks find their Swift
// owner through them.
static inline int CWebProxyOpenSSL_SSL_set_app_data(SSL *ssl, void *data) {
    return SSL_set_app_data(ssl, data);
}
static inline void *CWebProxyOpenSSL_SSL_get_app_data(const SSL *ssl) {
    return SSL_get_app_data(ssl);
}

// The retry-flag setters a BIO method's read callback uses are macros over BIO_set_flags.
static inline void CWebProxyOpenSSL_BIO_clear_retry_flags(BIO *bio) {
    BIO_clear_retry_flags(bio);
}
static inline void CWebProxyOpenSSL_BIO_set_retry_read(BIO *bio) {
    BIO_set_retry_read(bio);
}

// OPENSSL_free is a macro that passes __FILE__/__LINE__ to CRYPTO_free.
static inline void CWebProxyOpenSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

// EVP_EC_gen / EVP_PKEY_Q_keygen are variadic, which Swift cannot call; the curve name is
// a C literal here, so no temporary Swift string can dangle (pitfall 4).
static inline EVP_PKEY *CWebProxyOpenSSL_EVP_EC_gen_P256(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

#endif
