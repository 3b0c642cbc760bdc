#include "CWebProxyLinux.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/syscall.h>

int cwpl_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cwpl_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &event);
}

struct epoll_event *cwpl_epoll_events_alloc(int count) {
    return calloc((size_t)count, sizeof(struct epoll_event));
}

void cwpl_epoll_events_free(struct epoll_event *events) { free(events); }

int cwpl_epoll_wait(int epfd, struct epoll_event *events, int count, int timeout_ms) {
    return epoll_wait(epfd, events, count, timeout_ms);
}

uint64_t cwpl_epoll_event_token(const struct epoll_event *events, int index) {
    return events[index].data.u64;
}

uint32_t cwpl_epoll_event_mask(const struct epoll_event *events, int index) {
    return events[index].events;
}

int cwpl_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int cwpl_timerfd_create(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

int cwpl_timerfd_arm(int fd, uint64_t deadline_ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

uint64_t cwpl_monotonic_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static int fill_set(sigset_t *set, const int *signals, int count) {
    if (sigemptyset(set) != 0) return -1;
    for (int i = 0; i < count; i++) {
        if (sigaddset(set, signals[i]) != 0) return -1;
    }
    return 0;
}

int cwpl_block_signals(const int *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    int result = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (result != 0) {
        errno = result;
        return -1;
    }
    return 0;
}

int cwpl_signalfd_create(const int *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int cwpl_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    for (;;) {
        ssize_t n = read(fd, &info, sizeof info);
        if (n == (ssize_t)sizeof info) return (int)info.ssi_signo;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n >= 0) errno = EIO;
        return -1;
    }
}

int cwpl_ignore_sigpipe(void) { return signal(SIGPIPE, SIG_IGN) == SIG_ERR ? -1 : 0; }

int cwpl_raise_in_thread(int signal) {
    return (int)syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), signal);
}

int cwpl_accept(int fd, struct sockaddr_storage *address, socklen_t *length) {
    return accept4(fd, (struct sockaddr *)address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int cwpl_tcp_socket(int family) {
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
}

int cwpl_socket_error(int fd, int *error) {
    socklen_t length = sizeof *error;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, error, &length);
}

int cwpl_setsockopt_int(int fd, int level, int name, int value) {
    return setsockopt(fd, level, name, &value, sizeof value);
}

int cwpl_set_linger_zero(int fd) {
    struct linger linger = {.l_onoff = 1, .l_linger = 0};
    return setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, sizeof linger);
}

ssize_t cwpl_sendv(int fd, const struct iovec *iov, int count) {
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = (struct iovec *)iov;
    message.msg_iovlen = (size_t)count;
    return sendmsg(fd, &message, MSG_NOSIGNAL);
}

void cwpl_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = '\0';
    pthread_setname_np(pthread_self(), truncated);
}

const char *cwpl_strerror(int error, char *buffer, size_t length) {
    return strerror_r(error, buffer, length);
}
