/* core/fdpass.h: one message over a Unix stream socket with a file
 * descriptor riding along (SCM_RIGHTS): how the HDF5 reader's worker
 * process (formats/hdf5-worker.c) hands back the shared memory it read a
 * dataset into, and how the fuzz sandbox (tests/fuzz/fuzz-sandbox.h)
 * hands out the socket to a new worker. */
#ifndef QP_CORE_FDPASS_H
#define QP_CORE_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Sends the n bytes at p over socket sock in one sendmsg, with fd when
 * fd >= 0 (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE; retried
 * on EINTR). Returns sendmsg's result: n when all went, else fewer, or -1
 * with errno set. */
ssize_t qp_fd_send(int sock, const void *p, size_t n, int fd);

/* Receives n bytes into p in one recvmsg (MSG_WAITALL; retried on EINTR)
 * and the descriptor sent with them into *fd (-1 when none; it is
 * close-on-exec and the caller's to close, also when fewer than n bytes
 * came). Returns recvmsg's result: n, fewer (0: the peer closed), or -1
 * with errno set. */
ssize_t qp_fd_recv(int sock, void *p, size_t n, int *fd);

#endif
