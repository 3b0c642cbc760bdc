// Linux system calls that Glibc does not export to Swift. Built with _GNU_SOURCE.
//
// Why each wrapper exists:
// - epoll/eventfd/timerfd/signalfd flags are C enums or macros whose imported types differ
//   between headers (and once broke only in release builds), so they are re-exported here as
//   plain `int`/`uint32_t` constants.
// - `struct epoll_event` is packed on x86_64; reading its union through the wrappers below
//   keeps Swift from touching a misaligned field.
// - `tcpi_bytes_acked` is missing from glibc's `struct tcp_info`; the kernel's header has it
//   but cannot be included beside <netinet/tcp.h>, so it is read in a file of its own.
// - `fork` cannot be called from Swift, and the child must run no Swift code before
//   `execve`; `cwpl_spawn` does both in C.
// - `SIG_IGN`, `sigset_t` manipulation and `strerror_r` (GNU flavour) are macros or have
//   two prototypes; small functions give Swift one clear signature.
// - `malloc_trim` is declared in <malloc.h>, which Glibc's Swift module does not include.
#ifndef CWEBPROXY_LINUX_H
#define CWEBPROXY_LINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stddef.h>

// MARK: constants

static const uint32_t CWPL_EPOLLIN = EPOLLIN;
static const uint32_t CWPL_EPOLLOUT = EPOLLOUT;
static const uint32_t CWPL_EPOLLERR = EPOLLERR;
static const uint32_t CWPL_EPOLLHUP = EPOLLHUP;
static const uint32_t CWPL_EPOLLRDHUP = EPOLLRDHUP;
static const int CWPL_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int CWPL_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int CWPL_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

static const int CWPL_SOCK_STREAM = SOCK_STREAM;
static const int CWPL_SOCK_NONBLOCK = SOCK_NONBLOCK;
static const int CWPL_SOCK_CLOEXEC = SOCK_CLOEXEC;
static const int CWPL_MSG_NOSIGNAL = MSG_NOSIGNAL;
static const int CWPL_IPPROTO_TCP = IPPROTO_TCP;
static const int CWPL_TCP_NODELAY = TCP_NODELAY;
static const int CWPL_SHUT_WR = SHUT_WR;

// MARK: epoll

/// Creates a close-on-exec epoll instance.
int cwpl_epoll_create(void);
/// Adds, modifies or deletes `fd` with `events`, tagging it with `token`.
int cwpl_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);
/// Allocates room for `count` events (free with `cwpl_epoll_events_free`).
struct epoll_event *cwpl_epoll_events_alloc(int count);
void cwpl_epoll_events_free(struct epoll_event *events);
/// Waits like `epoll_wait`; `timeout_ms` of -1 blocks.
int cwpl_epoll_wait(int epfd, struct epoll_event *events, int count, int timeout_ms);
/// The token and event mask of `events[index]`.
uint64_t cwpl_epoll_event_token(const struct epoll_event *events, int index);
uint32_t cwpl_epoll_event_mask(const struct epoll_event *events, int index);

// MARK: eventfd, timerfd

/// A non-blocking, close-on-exec eventfd starting at zero.
int cwpl_eventfd_create(void);
/// A non-blocking, close-on-exec CLOCK_MONOTONIC timerfd.
int cwpl_timerfd_create(void);
/// Arms `fd` to fire once at the absolute CLOCK_MONOTONIC time `deadline_ns`; 0 disarms.
int cwpl_timerfd_arm(int fd, uint64_t deadline_ns);
/// CLOCK_MONOTONIC now, in nanoseconds.
uint64_t cwpl_monotonic_now_ns(void);

// MARK: signals

/// Blocks `signals[0..<count]` in the calling thread's mask (threads created later inherit it).
int cwpl_block_signals(const int *signals, int count);
/// A non-blocking, close-on-exec signalfd for `signals[0..<count]`.
int cwpl_signalfd_create(const int *signals, int count);
/// Reads one `signalfd_siginfo`; returns the signal number, 0 when none is pending, -1 on error.
int cwpl_signalfd_read(int fd);
/// Sets SIGPIPE's disposition to ignore for the whole process.
int cwpl_ignore_sigpipe(void);
/// Sends `signal` to the calling thread only.
int cwpl_raise_in_thread(int signal);

// MARK: sockets

/// `accept4` with SOCK_NONBLOCK | SOCK_CLOEXEC.
int cwpl_accept(int fd, struct sockaddr_storage *address, socklen_t *length);
/// A non-blocking, close-on-exec TCP socket of `family`.
int cwpl_tcp_socket(int family);
/// Reads and clears SO_ERROR; returns -1 if getsockopt itself failed.
int cwpl_socket_error(int fd, int *error);
/// Sets an integer socket option.
int cwpl_setsockopt_int(int fd, int level, int name, int value);
/// SO_LINGER on with a zero timeout: the next close sends RST.
int cwpl_set_linger_zero(int fd);
/// `sendmsg` of `count` buffers with MSG_NOSIGNAL (writev that cannot raise SIGPIPE).
ssize_t cwpl_sendv(int fd, const struct iovec *iov, int count);
/// From TCP_INFO: the bytes the peer acknowledged and the bytes received on `fd`, as the
/// kernel counts them (Linux 4.2 and later). Returns -1 when the kernel does not say.
int cwpl_tcp_progress(int fd, uint64_t *acknowledged, uint64_t *received);

// MARK: threads

/// Names the calling thread (truncated to 15 bytes) for ps/top/gdb.
void cwpl_set_thread_name(const char *name);

// MARK: processes

/// Starts `path` with `argv` and `envp` (NULL-terminated) and returns the child's pid, or -1
/// with errno. With `uid` other than (uid_t)-1 the child first drops to `uid` and `gid`
/// (and no other group). The child exits 126 if it cannot drop, 127 if execve fails.
pid_t cwpl_spawn(const char *path, char *const argv[], char *const envp[], uid_t uid, gid_t gid);

// MARK: errors

/// The strerror text for `error` (thread-safe; `buffer` may be unused).
const char *cwpl_strerror(int error, char *buffer, size_t length);

#endif
