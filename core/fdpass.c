/* core/fdpass.c: see fdpass.h. */
#include "core/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

union fd_space {
    struct cmsghdr c;
    char space[CMSG_SPACE(sizeof(int))];
};

ssize_t qp_fd_send(int sock, const void *p, size_t n, int fd)
{
    struct iovec iov = {(void *)p, n};
    union fd_space u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof u);
        m.msg_control = u.space;
        m.msg_controllen = sizeof u.space;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t k;
    while ((k = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return k;
}

ssize_t qp_fd_recv(int sock, void *p, size_t n, int *fd)
{
    struct iovec iov = {p, n};
    union fd_space u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = u.space, .msg_controllen = sizeof u.space};
    ssize_t k;
    while ((k = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL)) < 0 &&
           errno == EINTR)
        ;
    *fd = -1;
    for (struct cmsghdr *c = k > 0 ? CMSG_FIRSTHDR(&m) : NULL; c;
         c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return k;
}
