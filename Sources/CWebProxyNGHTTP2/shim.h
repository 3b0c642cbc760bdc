// Umbrella header for libnghttp2 (libnghttp2-dev): HTTP/2 framing, HPACK, flow control
// and stream states for the https carriers and the test relay.
#ifndef CWEBPROXY_NGHTTP2_SHIM_H
#define CWEBPROXY_NGHTTP2_SHIM_H

#include <nghttp2/nghttp2.h>

#endif
