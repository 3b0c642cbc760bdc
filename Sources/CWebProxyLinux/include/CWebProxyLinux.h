// Linux system calls that Glibc does not export to Swift. Built with _GNU_SOURCE.
#ifndef CWEBPROXY_LINUX_H
#define CWEBPROXY_LINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>

#endif
