#include "CWebProxyLinux.h"

#include <errno.h>
#include <grp.h>
#include <unistd.h>

pid_t cwpl_spawn(const char *path, char *const argv[], char *const envp[], uid_t uid, gid_t gid) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    // The child: only async-signal-safe calls until execve.
    if (uid != (uid_t)-1) {
        if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
    }
    execve(path, argv, envp);
    _exit(127);
}
