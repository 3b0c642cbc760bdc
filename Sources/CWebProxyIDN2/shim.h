// libidn2 (libidn2-dev): IDNA2008 with UTS#46 mapping. Used for hostname
// canonicalization (U-labels to A-labels); we do not hand-write IDNA tables.
#ifndef CWEBPROXY_IDN2_SHIM_H
#define CWEBPROXY_IDN2_SHIM_H

#include <idn2.h>

#endif
