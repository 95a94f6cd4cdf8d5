/* tests/unit/test-fdpass.c: core/fdpass, a message with a descriptor
 * riding along: the bytes arrive, the descriptor names the same file (what
 * one end writes the other reads), and a message without one, a closed
 * peer and a short message say so. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/fdpass.h"
#include "tests/test.h"

QP_TEST(fdpass_message_and_descriptor)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    int mf = memfd_create("fdpass-test", 0);
    REQUIRE(mf >= 0);
    REQUIRE(write(mf, "shared", 6) == 6);
    const char msg[12] = "header-bytes";
    CHECK_INT(qp_fd_send(sv[0], msg, sizeof msg, mf), sizeof msg);
    char got[12] = {0};
    int fd = -2;
    CHECK_INT(qp_fd_recv(sv[1], got, sizeof got, &fd), sizeof got);
    CHECK(!memcmp(got, msg, sizeof msg));
    REQUIRE(fd >= 0);
    CHECK(fd != mf);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    char back[6] = {0};
    CHECK_INT(pread(fd, back, sizeof back, 0), 6);
    CHECK(!memcmp(back, "shared", 6));
    CHECK_INT(pwrite(fd, "S", 1, 0), 1); /* the same file, not a copy */
    CHECK_INT(pread(mf, back, 1, 0), 1);
    CHECK_INT(back[0], 'S');
    close(fd);

    /* no descriptor: *fd says -1 */
    CHECK_INT(qp_fd_send(sv[1], "xy", 2, -1), 2);
    fd = -2;
    CHECK_INT(qp_fd_recv(sv[0], got, 2, &fd), 2);
    CHECK_INT(fd, -1);
    CHECK(!memcmp(got, "xy", 2));

    /* a short message, then the peer gone: fewer bytes, then 0 */
    CHECK_INT(qp_fd_send(sv[1], "z", 1, -1), 1);
    close(sv[1]);
    CHECK_INT(qp_fd_recv(sv[0], got, 4, &fd), 1);
    CHECK_INT(fd, -1);
    CHECK_INT(qp_fd_recv(sv[0], got, 4, &fd), 0);
    /* sending to a closed peer fails without SIGPIPE */
    CHECK_INT(qp_fd_send(sv[0], "w", 1, -1), -1);
    close(sv[0]);
    close(mf);
}
