#include "core/mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum qp_status qp_mmap_open(const char *path, struct qp_mmap **out,
                            struct qp_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return qp_fail(err, QP_E_IO, "'%s': cannot open: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return qp_fail(err, QP_E_IO, "'%s': cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return qp_fail(err, QP_E_IO, "'%s': not a regular file", path);
    }
    struct qp_mmap *m = calloc(1, sizeof *m);
    char *p = strdup(path);
    if (!m || !p) {
        free(m);
        free(p);
        close(fd);
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", path);
    }
    m->path = p;
    m->refs = 1;
    m->size = (size_t)st.st_size;
    if (m->size > 0) {
        void *d = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (d == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(p);
            free(m);
            return qp_fail(err, QP_E_IO, "'%s': cannot map: %s", path,
                           strerror(e));
        }
        m->data = d;
    }
    close(fd);
    *out = m;
    return QP_OK;
}

struct qp_mmap *qp_mmap_ref(struct qp_mmap *m)
{
    if (m)
        __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
    return m;
}

void qp_mmap_unref(struct qp_mmap *m)
{
    if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    if (m->data)
        munmap((void *)m->data, m->size);
    free(m->path);
    free(m);
}

static void page_range(const struct qp_mmap *m, size_t off, size_t len,
                       char **start, size_t *n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (off > m->size)
        off = m->size;
    if (len > m->size - off)
        len = m->size - off;
    size_t a = off / page * page;
    *start = (char *)m->data + a;
    *n = off + len - a;
}

void qp_mmap_prefetch(const struct qp_mmap *m, size_t off, size_t len)
{
    if (!m || !m->data)
        return;
    char *s;
    size_t n;
    page_range(m, off, len, &s, &n);
    if (n)
        madvise(s, n, MADV_WILLNEED);
}

void qp_mmap_release_range(const struct qp_mmap *m, size_t off, size_t len)
{
    if (!m || !m->data)
        return;
    char *s;
    size_t n;
    page_range(m, off, len, &s, &n);
    if (n)
        madvise(s, n, MADV_DONTNEED);
}
