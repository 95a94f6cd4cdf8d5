/* formats/hdf5-worker.c: the HDF5 dump backend (formats/hdf5.h).
 *
 * libhdf5 1.10 is not safe on hostile files: fuzzing its readers finds
 * reads and writes out of bounds, divisions by zero, allocations of
 * terabytes and endless loops in its own code (global heaps, chunk
 * indexes, object headers), none of which qprobe can check for first.
 * So a dump file is read by a worker process, forked at open: it lists
 * the file and reads each dataset on request into shared memory (a
 * memfd, passed back over a socket and mapped read-only as the tensor's
 * data, so nothing is copied). A worker that dies, or does not answer in
 * time, fails the open or the load with a message naming the file; this
 * process never runs libhdf5's reader. File images (qp_h5_open_image, the
 * fuzz target's way in) are read in this process.
 *
 * Messages, worker to here: a header {u32 status, u32 message length,
 * u64 blob length} (carrying the data's fd when a load succeeds), the
 * message, the blob (the listing). Here to worker: {u32 op, u32 0, u64
 * index}. Everything the worker sends is checked as if read from a file. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fdpass.h"
#include "core/memlimit.h"
#include "core/size.h"
#include "formats/hdf5-reader.h"
#include "formats/hdf5.h"

enum { OP_LOAD = 1 };

struct h5_dump {
    bool local;               /* read in this process (a file image) */
    struct qp_h5_reader r;    /* when local */
    pid_t pid;                /* the worker, else */
    int sock;
};

struct header {
    uint32_t status, msglen;
    uint64_t bloblen;
};

/* ---- byte buffers -------------------------------------------------------- */

struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool bad;
};

static void put(struct wbuf *b, const void *v, size_t n)
{
    if (b->bad || n > SIZE_MAX / 2 - b->n)
        return (void)(b->bad = true);
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2 + 256;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            return (void)(b->bad = true);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

static void put_u64(struct wbuf *b, uint64_t v) { put(b, &v, sizeof v); }

static void put_str(struct wbuf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

struct rbuf {
    const uint8_t *p;
    size_t n, at;
    bool bad;
};

static bool get(struct rbuf *b, void *v, size_t n)
{
    if (b->bad || n > b->n - b->at)
        return !(b->bad = true);
    memcpy(v, b->p + b->at, n);
    b->at += n;
    return true;
}

static uint64_t get_u64(struct rbuf *b)
{
    uint64_t v = 0;
    get(b, &v, sizeof v);
    return v;
}

/* A malloc'd string of at most max bytes; NULL when malformed. */
static char *get_str(struct rbuf *b, size_t max)
{
    uint64_t n = get_u64(b);
    if (b->bad || n > max || n > b->n - b->at)
        return (b->bad = true), NULL;
    char *s = malloc((size_t)n + 1);
    if (s && get(b, s, (size_t)n))
        s[n] = '\0';
    return s;
}

/* ---- the listing, both ways --------------------------------------------- */

static void put_entry(struct wbuf *b, const struct qp_tensor *e)
{
    put_str(b, e->name);
    put_u64(b, (uint64_t)e->dtype);
    put_u64(b, (uint64_t)e->ndim);
    put(b, e->shape, (size_t)e->ndim * sizeof e->shape[0]);
    put_str(b, e->layout ? e->layout : "");
    put_u64(b, e->qp ? e->qp->count : 0);
    if (!e->qp)
        return;
    put_u64(b, (uint64_t)(int64_t)e->qp->axis);
    put_u64(b, (uint64_t)e->qp->block_size);
    put(b, e->qp->scale, e->qp->count * sizeof(float));
    put_u64(b, e->qp->zero_point != NULL);
    if (e->qp->zero_point)
        put(b, e->qp->zero_point, e->qp->count * sizeof(int32_t));
}

static void put_listing(struct wbuf *b, const struct qp_dump *d)
{
    put_u64(b, d->count);
    for (size_t i = 0; i < d->count; i++)
        put_entry(b, d->entries[i]);
    put_u64(b, d->meta.count);
    for (size_t i = 0; i < d->meta.count; i++) {
        put_str(b, d->meta.keys[i]);
        put_str(b, d->meta.values[i]);
    }
}

/* One entry of the worker's listing, validated as a descriptor. */
static enum qp_status get_entry(struct rbuf *b, const char *path,
                                struct qp_tensor **out, struct qp_error *err)
{
    *out = NULL;
    char *name = get_str(b, 1 << 20), *layout = NULL;
    uint64_t dtype = get_u64(b), ndim = get_u64(b);
    int64_t shape[QP_MAX_DIMS] = {0};
    if (ndim <= QP_MAX_DIMS)
        get(b, shape, (size_t)ndim * sizeof shape[0]);
    layout = get_str(b, 1 << 16);
    uint64_t count = get_u64(b);
    enum qp_status st = b->bad || !name || !layout || ndim > QP_MAX_DIMS ||
                                dtype >= QP_DTYPE_COUNT
                            ? qp_fail(err, QP_E_FORMAT, "'%s': garbled listing "
                                      "from the HDF5 reader", path)
                            : qp_tensor_new_desc(name, (enum qp_dtype)dtype,
                                                 (int)ndim, shape, out, err);
    if (!st && *layout)
        st = qp_tensor_set_layout(*out, layout, err);
    float *scale = NULL;
    int32_t *zp = NULL;
    if (!st && count) {
        int64_t axis = (int64_t)get_u64(b), block = (int64_t)get_u64(b);
        bool ok = !b->bad && count <= (b->n - b->at) / sizeof *scale &&
                  (scale = malloc((size_t)count * sizeof *scale)) &&
                  get(b, scale, (size_t)count * sizeof *scale);
        bool has_zp = ok && get_u64(b);
        ok = ok && (!has_zp || ((zp = malloc((size_t)count * sizeof *zp)) &&
                                get(b, zp, (size_t)count * sizeof *zp)));
        st = !ok || axis < -1 || axis >= QP_MAX_DIMS
                 ? qp_fail(err, QP_E_FORMAT, "'%s': garbled listing from the "
                           "HDF5 reader", path)
                 : qp_tensor_set_qparams(*out, (size_t)count, scale, zp,
                                         (int)axis, block, err);
    }
    free(scale);
    free(zp);
    free(name);
    free(layout);
    if (st) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static enum qp_status get_listing(struct qp_dump *d, struct rbuf *b,
                                  struct qp_error *err)
{
    uint64_t n = get_u64(b);
    if (b->bad || n > b->n / 16 || !(d->entries = calloc((size_t)n + 1,
                                                         sizeof *d->entries)))
        return qp_fail(err, QP_E_FORMAT, "'%s': garbled listing from the HDF5 "
                       "reader", d->path);
    enum qp_status st = QP_OK;
    for (uint64_t i = 0; i < n && !st; i++)
        if (!(st = get_entry(b, d->path, &d->entries[d->count], err)))
            d->count++;
    uint64_t nm = st ? 0 : get_u64(b);
    for (uint64_t i = 0; i < nm && !st && !b->bad; i++) {
        char *k = get_str(b, 1 << 20), *v = get_str(b, (size_t)1 << 30);
        st = k && v ? qp_dump_meta_set(&d->meta, k, v, err) : QP_OK;
        free(k);
        free(v);
    }
    if (!st && b->bad)
        st = qp_fail(err, QP_E_FORMAT, "'%s': garbled listing from the HDF5 "
                     "reader", d->path);
    return st;
}

/* ---- the worker ------------------------------------------------------------ */

static bool wait_readable(int sock, long deadline);

/* Writes n bytes (deadline < 0), or reads them by the deadline. */
static bool xfer(int fd, void *p, size_t n, long deadline)
{
    for (char *c = p; n;) {
        if (deadline >= 0 && !wait_readable(fd, deadline))
            return false;
        ssize_t k = deadline < 0 ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        c += k;
        n -= (size_t)k;
    }
    return true;
}

static bool write_all(int fd, const void *p, size_t n)
{
    return xfer(fd, (void *)p, n, -1);
}

/* Sends a reply (and fd, when >= 0); false when here has gone. */
static bool reply(int sock, enum qp_status st, const struct qp_error *err,
                  const struct wbuf *blob, int fd)
{
    const char *msg = st && err ? err->msg : "";
    struct header h = {(uint32_t)st, (uint32_t)strlen(msg),
                       blob ? (uint64_t)blob->n : 0};
    return qp_fd_send(sock, &h, sizeof h, fd) == (ssize_t)sizeof h &&
           write_all(sock, msg, h.msglen) &&
           (!blob || write_all(sock, blob->p, blob->n));
}

struct shm {
    int fd;
    void *map;
    size_t n;
};

/* qp_h5_buf_fn: the data in a memfd, to be passed back. */
static void *shm_buf(void *ctx, size_t nbytes)
{
    static char none;
    struct shm *s = ctx;
    s->n = nbytes;
    s->fd = memfd_create("qprobe-h5", MFD_CLOEXEC);
    if (s->fd < 0 || ftruncate(s->fd, (off_t)nbytes) != 0)
        return NULL;
    if (!nbytes)
        return &none;
    s->map = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    return s->map == MAP_FAILED ? (s->map = NULL) : s->map;
}

static void worker_dies(void)
{
    _exit(99);
}

/* A fault in the worker is the file's, reported by the parent: the
 * worker dies of it plainly, without the handlers it inherited (a
 * sanitizer's report, a fuzzer's crash file). Its address space is capped
 * at what it has plus the allocation limit and 1 GiB, so a size libhdf5
 * believes fails its malloc (not under a sanitizer, whose shadow memory
 * needs the address space). */
static void worker_setup(void)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                 SIGTRAP};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        signal(faults[i], SIG_DFL);
    extern void __sanitizer_set_report_fd(void *) __attribute__((weak));
    extern void __sanitizer_set_death_callback(void (*)(void))
        __attribute__((weak));
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(worker_dies);
    if (__sanitizer_set_report_fd) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        __sanitizer_set_report_fd((void *)(intptr_t)null);
        return;
    }
    size_t limit, pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%zu", &pages) != 1 || qp_mem_limit(&limit, NULL)) {
        if (f)
            fclose(f);
        return;
    }
    fclose(f);
    size_t have = pages * (size_t)sysconf(_SC_PAGESIZE), cap;
    if (qp_size_add(have, limit, &cap) || qp_size_add(cap, (size_t)1 << 30, &cap))
        return;
    struct rlimit as = {(rlim_t)cap, (rlim_t)cap};
    setrlimit(RLIMIT_AS, &as);
}

static _Noreturn void worker(struct qp_dump *d, int sock)
{
    worker_setup();
    struct qp_h5_reader r;
    memset(&r, 0, sizeof r);
    struct qp_error err;
    struct wbuf b = {0};
    enum qp_status st = qp_h5_reader_open(d, &r, &err);
    if (!st)
        put_listing(&b, d);
    if (!st && b.bad)
        st = qp_fail(&err, QP_E_NOMEM, "out of memory");
    if (!reply(sock, st, &err, st ? NULL : &b, -1) || st)
        _exit(0);
    free(b.p);
    for (;;) {
        struct {
            uint32_t op, pad;
            uint64_t index;
        } req;
        ssize_t k = read(sock, &req, sizeof req);
        if (k < 0 && errno == EINTR)
            continue;
        if (k != (ssize_t)sizeof req || req.op != OP_LOAD || req.index >= r.n)
            _exit(0);
        struct shm s = {-1, NULL, 0};
        struct qp_tensor *t;
        st = qp_h5_reader_load(d, &r, (size_t)req.index, shm_buf, &s, &t, &err);
        qp_tensor_free(t);
        if (s.map)
            munmap(s.map, s.n);
        bool ok = reply(sock, st, &err, NULL, st ? -1 : s.fd);
        if (s.fd >= 0)
            close(s.fd);
        if (!ok)
            _exit(0);
    }
}

/* ---- here -------------------------------------------------------------------- */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits until sock is readable or the deadline passes (false). */
static bool wait_readable(int sock, long deadline)
{
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {sock, POLLIN, 0};
        int k = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (k > 0)
            return true;
        if (k < 0 && errno != EINTR)
            return false;
    }
}


/* Ends the worker and says why it did not answer what it was doing. */
static enum qp_status worker_lost(struct qp_dump *d, struct h5_dump *h,
                                  const char *doing, bool late,
                                  struct qp_error *err)
{
    int status = 0;
    kill(h->pid, SIGKILL);
    waitpid(h->pid, &status, 0);
    h->pid = 0;
    if (late)
        return qp_fail(err, QP_E_FORMAT, "'%s': the HDF5 library did not finish "
                       "%s in time: the file is malformed (or the disk very "
                       "slow)", d->path, doing);
    char how[64] = "stopped";
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
        snprintf(how, sizeof how, "crashed (signal %d)", WTERMSIG(status));
    else if (WIFEXITED(status))
        snprintf(how, sizeof how, "failed (exit %d)", WEXITSTATUS(status));
    return qp_fail(err, QP_E_FORMAT, "'%s': the HDF5 library %s %s: the file "
                   "is malformed", d->path, how, doing);
}

/* Receives a reply: its status and message into err, the blob (malloc'd)
 * and the fd passed with it (-1 if none). */
static enum qp_status receive(struct qp_dump *d, struct h5_dump *h,
                              const char *doing, long timeout_ms,
                              struct wbuf *blob, int *fd, struct qp_error *err)
{
    long deadline = now_ms() + timeout_ms;
    *fd = -1;
    struct header hd;
    ssize_t k = wait_readable(h->sock, deadline)
                    ? qp_fd_recv(h->sock, &hd, sizeof hd, fd)
                    : -1;
    bool late = k < 0 && now_ms() >= deadline;
    char msg[QP_ERROR_MSG_MAX];
    bool ok = k == (ssize_t)sizeof hd && hd.msglen < sizeof msg &&
              hd.status < QP_E_COUNT && hd.bloblen < ((uint64_t)1 << 40) &&
              xfer(h->sock, msg, hd.msglen, deadline);
    if (ok && hd.bloblen) {
        ok = !qp_mem_check("the HDF5 listing", (size_t)hd.bloblen, NULL) &&
             (blob->p = malloc((size_t)hd.bloblen)) &&
             xfer(h->sock, blob->p, (size_t)hd.bloblen, deadline);
        blob->n = (size_t)hd.bloblen;
    }
    if (!ok) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return worker_lost(d, h, doing, late || now_ms() >= deadline, err);
    }
    msg[hd.msglen] = '\0';
    if (hd.status)
        return qp_fail(err, (enum qp_status)hd.status, "%s", msg);
    return QP_OK;
}

static enum qp_status start_worker(struct qp_dump *d, struct h5_dump *h,
                                   struct qp_error *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return qp_fail(err, QP_E_IO, "'%s': cannot start the HDF5 reader: %s",
                       d->path, strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return qp_fail(err, QP_E_IO, "'%s': cannot start the HDF5 reader: %s",
                       d->path, strerror(errno));
    }
    if (pid == 0) {
        close(sv[0]);
        worker(d, sv[1]);
    }
    close(sv[1]);
    h->pid = pid;
    h->sock = sv[0];
    return QP_OK;
}

/* Time a worker may take: 10 s, and a second per 20 MB of data. */
static long budget_ms(size_t bytes)
{
    return 10000 + (long)(bytes / 20000);
}

static enum qp_status h5_open(struct qp_dump *d, struct qp_error *err)
{
    struct h5_dump *h = d->impl; /* set by qp_h5_open_image */
    if (h)
        return qp_h5_reader_open(d, &h->r, err);
    if (!(h = d->impl = calloc(1, sizeof *h)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    h->sock = -1;
    enum qp_status st = start_worker(d, h, err);
    struct wbuf blob = {0};
    int fd = -1;
    struct stat sb;
    size_t size = stat(d->path, &sb) == 0 ? (size_t)sb.st_size : 0;
    if (!st)
        st = receive(d, h, "listing it", budget_ms(size / 4), &blob, &fd, err);
    if (fd >= 0)
        close(fd);
    if (!st) {
        struct rbuf b = {blob.p, blob.n, 0, false};
        st = get_listing(d, &b, err);
    }
    free(blob.p);
    return st;
}

static enum qp_status h5_load(struct qp_dump *d, size_t i, struct qp_tensor **out,
                              struct qp_error *err)
{
    *out = NULL;
    struct h5_dump *h = d->impl;
    if (h->local)
        return qp_h5_reader_load(d, &h->r, i, NULL, NULL, out, err);
    const struct qp_tensor *e = d->entries[i]; /* no companions: i is i */
    char doing[600];
    snprintf(doing, sizeof doing, "reading dataset '%.500s'", e->name);
    if (!h->pid)
        return qp_fail(err, QP_E_IO, "'%s': the HDF5 reader stopped earlier",
                       d->path);
    struct {
        uint32_t op, pad;
        uint64_t index;
    } req = {OP_LOAD, 0, i};
    if (!write_all(h->sock, &req, sizeof req))
        return worker_lost(d, h, doing, false, err);
    struct wbuf none = {0};
    int fd;
    size_t nbytes = 0;
    qp_dtype_bytes(e->dtype, qp_tensor_numel(e), &nbytes);
    enum qp_status st = receive(d, h, doing, budget_ms(nbytes), &none, &fd, err);
    free(none.p);
    if (!st && fd < 0)
        st = qp_fail(err, QP_E_FORMAT, "'%s': the HDF5 reader sent no data for "
                     "'%s'", d->path, e->name);
    if (st)
        return st;
    if (!nbytes) { /* no mapping: an empty tensor of its own */
        close(fd);
        st = qp_tensor_new(e->name, e->dtype, e->ndim, e->shape, out, err);
        return st ? qp_error_in_file(err, d->path) : QP_OK;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct qp_mmap *m;
    st = qp_mmap_open(path, &m, err);
    close(fd);
    if (!st) {
        st = qp_tensor_wrap(e->name, e->dtype, e->ndim, e->shape, m->data,
                            m->size, m, out, err);
        qp_mmap_unref(m);
    }
    return st ? qp_error_in_file(err, d->path) : QP_OK;
}

static void h5_close(struct qp_dump *d)
{
    struct h5_dump *h = d->impl;
    if (!h)
        return;
    if (h->local) {
        qp_h5_reader_release(&h->r);
    } else if (h->pid) {
        kill(h->pid, SIGKILL);
        waitpid(h->pid, NULL, 0);
    }
    if (h->sock >= 0)
        close(h->sock);
    free(h);
    d->impl = NULL;
}

enum qp_status qp_h5_open_image(const char *name, const void *image,
                                size_t size, struct qp_dump **out,
                                struct qp_error *err)
{
    *out = NULL;
    struct h5_dump *h = calloc(1, sizeof *h);
    if (!h)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    h->local = true;
    h->sock = -1;
    h->r.file = H5I_INVALID_HID;
    h->r.image = image;
    h->r.image_size = size;
    return qp_dump_open_impl(name, QP_DUMP_HDF5, h, out, err);
}

const struct qp_dump_ops qp_dump_ops_hdf5 = {"h5", h5_open, h5_load, h5_close};
