// Umbrella header for the system OpenSSL 3 (libssl-dev).
//
// Swift imports plain functions but not function-like macros; every macro we need is
// wrapped below as a `static inline` function prefixed `CWebProxyOpenSSL_`.
#ifndef CWEBPROXY_OPENSSL_SHIM_H
#define CWEBPROXY_OPENSSL_SHIM_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/asn1.h>

#endif
