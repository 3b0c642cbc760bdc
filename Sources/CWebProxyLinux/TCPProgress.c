// TCP_INFO through the kernel's own header: glibc's `struct tcp_info` stops before
// `tcpi_bytes_acked`, and <linux/tcp.h> clashes with <netinet/tcp.h>, so this file
// includes only the former and repeats the prototype from CWebProxyLinux.h.
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>

int cwpl_tcp_progress(int fd, uint64_t *acknowledged, uint64_t *received);

int cwpl_tcp_progress(int fd, uint64_t *acknowledged, uint64_t *received) {
    struct tcp_info info;
    socklen_t length = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
    size_t needed = offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received);
    if (length < needed) return -1;
    *acknowledged = info.tcpi_bytes_acked;
    *received = info.tcpi_bytes_received;
    return 0;
}
