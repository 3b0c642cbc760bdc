// Umbrella header for libqrencode (libqrencode-dev): QRcode_encodeString for
// `webproxyd link --qr`.
#ifndef CWEBPROXY_QRENCODE_SHIM_H
#define CWEBPROXY_QRENCODE_SHIM_H

#include <qrencode.h>

#endif
