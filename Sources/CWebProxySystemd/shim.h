// Umbrella header for libsystemd (libsystemd-dev): sd_notify, sd_journal_sendv,
// sd_listen_fds_with_names. Variadic calls (sd_journal_send, sd_notifyf) do not import
// into Swift; use the vector and preformatted forms instead.
#ifndef CWEBPROXY_SYSTEMD_SHIM_H
#define CWEBPROXY_SYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#endif
