/* formats/npz.c: .npz dump reader and writer over libzip (formats/npz.h). */
#include "formats/npz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "formats/dump-info.h"
#include "formats/npy.h"

/* Largest npy header read while listing (numpy itself stops at 10000). */
#define MAX_NPY_HEADER ((size_t)1 << 20)
/* Largest info member. */
#define MAX_INFO ((zip_uint64_t)256 << 20)

struct npz_ref { /* a tensor member, by backing index */
    zip_uint64_t zi;
    zip_uint64_t size; /* uncompressed */
    char *member;      /* owned */
    const struct qp_dump_info *bytes_of;
};

struct npz_reader {
    zip_t *za;
    struct npz_ref *refs;
    size_t nrefs;
    struct qp_dump_infos infos;
};

static enum qp_status zip_open_error(const char *path, int code,
                                     struct qp_error *err)
{
    if (code == ZIP_ER_EXISTS) /* libzip's word for a repeated member name */
        return qp_fail(err, QP_E_FORMAT, "'%s': two members of the archive have "
                       "the same name", path);
    zip_error_t ze;
    zip_error_init_with_code(&ze, code);
    enum qp_status st = qp_fail(err, code == ZIP_ER_OPEN || code == ZIP_ER_READ ||
                                             code == ZIP_ER_NOENT
                                         ? QP_E_IO : QP_E_FORMAT,
                                "'%s': cannot open as a zip archive: %s", path,
                                zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return st;
}

/* Reads the first n bytes of member zi into buf; with `all`, n is the
 * member's whole size and reaching its end verifies the CRC. */
static enum qp_status read_member(const char *path, zip_t *za, zip_uint64_t zi,
                                  const char *member, void *buf, size_t n,
                                  bool all, struct qp_error *err)
{
    zip_file_t *zf = zip_fopen_index(za, zi, 0);
    if (!zf)
        return qp_fail(err, QP_E_FORMAT, "'%s': member '%s': %s", path, member,
                       zip_strerror(za));
    enum qp_status st = QP_OK;
    size_t got = 0;
    while (got < n) {
        zip_int64_t k = zip_fread(zf, (char *)buf + got, n - got);
        if (k <= 0) {
            st = qp_fail(err, QP_E_FORMAT, "'%s': member '%s': %s", path, member,
                         k ? zip_file_strerror(zf) : "truncated");
            break;
        }
        got += (size_t)k;
    }
    char extra;
    if (!st && all) { /* one more read hits the end, where the CRC is checked */
        zip_int64_t k = zip_fread(zf, &extra, 1);
        if (k != 0)
            st = qp_fail(err, QP_E_FORMAT, "'%s': member '%s': %s", path, member,
                         k < 0 ? zip_file_strerror(zf) : "longer than its size");
    }
    zip_fclose(zf);
    return st;
}

/* The npy descriptor of a member from its first bytes only. */
static enum qp_status list_member(const char *path, zip_t *za, zip_uint64_t zi,
                                  const char *member, const char *name,
                                  zip_uint64_t size, struct qp_tensor **out,
                                  struct qp_error *err)
{
    unsigned char head[12];
    size_t n = size < sizeof head ? (size_t)size : sizeof head;
    enum qp_status st = read_member(path, za, zi, member, head, n, false, err);
    if (st)
        return st;
    size_t need = n; /* bytes up to the end of the npy header */
    if (n == sizeof head && !memcmp(head, "\x93NUMPY", 6)) {
        if (head[6] == 1)
            need = 10 + ((size_t)head[8] | (size_t)head[9] << 8);
        else if (head[6] == 2 || head[6] == 3)
            need = 12 + ((size_t)head[8] | (size_t)head[9] << 8 |
                         (size_t)head[10] << 16 | (size_t)head[11] << 24);
    }
    if (need > size)
        need = (size_t)size; /* the parser reports the short header */
    if (need > MAX_NPY_HEADER)
        return qp_fail(err, QP_E_FORMAT, "'%s': member '%s': npy header of %zu "
                       "bytes is too large", path, member, need);
    unsigned char *buf = malloc(need + 1);
    if (!buf)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    st = read_member(path, za, zi, member, buf, need, false, err);
    if (!st) {
        char what[600];
        snprintf(what, sizeof what, "%s: member %s", path, member);
        /* header_only reads no further than the header: len is the size */
        st = qp_fmt_npy_parse(what, buf, (size_t)size, name, NULL, true, out, err);
    }
    free(buf);
    return st;
}

static void npz_close(struct qp_dump *d)
{
    struct npz_reader *r = d->impl;
    if (!r)
        return;
    if (r->za)
        zip_discard(r->za);
    for (size_t i = 0; i < r->nrefs; i++)
        free(r->refs[i].member);
    free(r->refs);
    qp_dump_infos_release(&r->infos);
    free(r);
    d->impl = NULL;
}

static enum qp_status read_info(struct qp_dump *d, struct npz_reader *r,
                                zip_uint64_t zi, zip_uint64_t size,
                                struct qp_error *err)
{
    if (size > MAX_INFO)
        return qp_fail(err, QP_E_FORMAT, "'%s': member '%s' is too large", d->path,
                       QP_NPZ_INFO_MEMBER);
    char *text = malloc((size_t)size + 1);
    if (!text)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = read_member(d->path, r->za, zi, QP_NPZ_INFO_MEMBER, text,
                                    (size_t)size, true, err);
    if (!st) {
        text[size] = '\0';
        char what[600];
        snprintf(what, sizeof what, "'%s': member %s", d->path, QP_NPZ_INFO_MEMBER);
        if (memchr(text, 0, (size_t)size))
            st = qp_fail(err, QP_E_FORMAT, "%s holds a NUL byte", what);
        else
            st = qp_dump_infos_parse(text, what, &r->infos, &d->meta, err);
    }
    free(text);
    return st;
}

/* Checks member zi can be read and returns its uncompressed size. */
static enum qp_status member_stat(const char *path, zip_t *za, zip_uint64_t zi,
                                  const char *member, zip_uint64_t *size,
                                  struct qp_error *err)
{
    zip_stat_t zs;
    if (zip_stat_index(za, zi, 0, &zs) != 0 ||
        (zs.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
            (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
        return qp_fail(err, QP_E_FORMAT, "'%s': member '%s': cannot stat: %s",
                       path, member, zip_strerror(za));
    if ((zs.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
        zs.encryption_method != ZIP_EM_NONE)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': member '%s' is encrypted",
                       path, member);
    if (!zip_compression_method_supported(zs.comp_method, 0))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': member '%s': compression "
                       "method %d is not supported", path, member,
                       (int)zs.comp_method);
    /* deflate expands at most ~1032:1; a larger claim is a corrupt size */
    if (zs.comp_method != ZIP_CM_STORE &&
        zs.size / 1100 > zs.comp_size + 1024)
        return qp_fail(err, QP_E_FORMAT, "'%s': member '%s' claims %llu bytes "
                       "from %llu compressed ones", path, member,
                       (unsigned long long)zs.size,
                       (unsigned long long)zs.comp_size);
    if (zs.size > SIZE_MAX / 2)
        return qp_fail(err, QP_E_OVERFLOW, "'%s': member '%s' is too large", path,
                       member);
    *size = zs.size;
    return QP_OK;
}

static enum qp_status add_member(struct qp_dump *d, struct npz_reader *r,
                                 zip_uint64_t zi, const char *member,
                                 struct qp_error *err)
{
    zip_uint64_t size = 0;
    enum qp_status st = member_stat(d->path, r->za, zi, member, &size, err);
    if (st)
        return st;
    if (!strcmp(member, QP_NPZ_INFO_MEMBER))
        return read_info(d, r, zi, size, err);
    size_t len = strlen(member);
    char *name = strdup(member), *own = strdup(member);
    if (!name || !own) {
        free(name);
        free(own);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if (len > 4 && !strcmp(member + len - 4, ".npy"))
        name[len - 4] = '\0';
    r->refs[r->nrefs++] = (struct npz_ref){zi, size, own, NULL};
    st = list_member(d->path, r->za, zi, member, name, size,
                     &d->entries[d->count], err);
    free(name);
    if (!st)
        d->count++;
    return st;
}

static enum qp_status npz_open(struct qp_dump *d, struct qp_error *err)
{
    struct stat sb;
    if (stat(d->path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0)
        return qp_fail(err, QP_E_FORMAT, "'%s': empty file, not an npz archive",
                       d->path);
    struct npz_reader *r = calloc(1, sizeof *r);
    if (!r)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    d->impl = r;
    int code = 0;
    if (!(r->za = zip_open(d->path, ZIP_RDONLY | ZIP_CHECKCONS, &code)))
        return zip_open_error(d->path, code, err);
    zip_int64_t n = zip_get_num_entries(r->za, 0);
    if (n < 0)
        return qp_fail(err, QP_E_FORMAT, "'%s': %s", d->path, zip_strerror(r->za));
    r->refs = calloc((size_t)n + 1, sizeof *r->refs);
    d->entries = calloc((size_t)n + 1, sizeof *d->entries);
    if (!r->refs || !d->entries)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = QP_OK;
    for (zip_uint64_t i = 0; i < (zip_uint64_t)n && !st; i++) {
        const char *member = zip_get_name(r->za, i, ZIP_FL_ENC_RAW);
        if (!member)
            st = qp_fail(err, QP_E_FORMAT, "'%s': member %llu: %s", d->path,
                         (unsigned long long)i, zip_strerror(r->za));
        else if (*member && member[strlen(member) - 1] != '/') /* not a folder */
            st = add_member(d, r, i, member, err);
    }
    /* restore tensors stored as bytes; entries and refs share indices */
    for (size_t i = 0; i < d->count && !st; i++) {
        const struct qp_dump_info *info = qp_dump_infos_find(&r->infos,
                                                             d->entries[i]->name);
        if (info && info->bytes) {
            st = qp_dump_info_retype(d->entries[i], info, d->path, err);
            r->refs[i].bytes_of = info;
        }
    }
    if (!st)
        st = qp_dump_attach_companions(d, err);
    if (!st)
        st = qp_dump_infos_apply(d, &r->infos, err);
    return st;
}

static enum qp_status npz_load(struct qp_dump *d, size_t i, struct qp_tensor **out,
                               struct qp_error *err)
{
    struct npz_reader *r = d->impl;
    const struct npz_ref *ref = &r->refs[i];
    char *buf = malloc((size_t)ref->size + 1);
    if (!buf)
        return qp_fail(err, QP_E_NOMEM, "'%s': member '%s': cannot allocate %llu "
                       "bytes", d->path, ref->member,
                       (unsigned long long)ref->size);
    enum qp_status st = read_member(d->path, r->za, ref->zi, ref->member, buf,
                                    (size_t)ref->size, true, err);
    if (!st) {
        char what[600];
        snprintf(what, sizeof what, "%s: member %s", d->path, ref->member);
        st = qp_fmt_npy_parse(what, buf, (size_t)ref->size, ref->member, NULL,
                              false, out, err);
    }
    free(buf);
    if (!st && ref->bytes_of &&
        (st = qp_dump_info_retype(*out, ref->bytes_of, d->path, err))) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

const struct qp_dump_ops qp_dump_ops_npz = {"npz", npz_open, npz_load, npz_close};

/* ---- writer ------------------------------------------------------------------ */

struct npz_member {
    char *name; /* member name, owned */
    zip_uint64_t start, len;
};

struct npz_writer {
    struct qp_outdir *od; /* temporary folder beside the output */
    char *data_path;      /* every member's npy image, back to back */
    FILE *data;
    struct npz_member *m;
    size_t n, cap;
    struct qp_dump_infos infos;
};

static void npzw_free(struct npz_writer *nw)
{
    if (nw->data)
        fclose(nw->data);
    qp_outdir_abort(nw->od);
    free(nw->data_path);
    for (size_t i = 0; i < nw->n; i++)
        free(nw->m[i].name);
    free(nw->m);
    qp_dump_infos_release(&nw->infos);
    free(nw);
}

static enum qp_status npzw_open(struct qp_dump_writer *w, struct qp_error *err)
{
    struct npz_writer *nw = calloc(1, sizeof *nw);
    if (!nw)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    char *home = qp_outfile_temp_home(w->path);
    enum qp_status st = home ? qp_outdir_open(home, &nw->od, err)
                             : qp_fail(err, QP_E_NOMEM, "out of memory");
    free(home);
    if (!st && !(nw->data_path = qp_path_join(nw->od->tmp_path, "members")))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && !(nw->data = fopen(nw->data_path, "wb")))
        st = qp_fail(err, QP_E_IO, "'%s': cannot write: %s", w->path,
                     strerror(errno));
    if (st) {
        npzw_free(nw);
        return st;
    }
    w->impl = nw;
    return QP_OK;
}

static enum qp_status write_member(void *ctx, const struct qp_tensor *t,
                                   struct qp_error *err)
{
    struct npz_writer *nw = ctx;
    if (nw->n == nw->cap) {
        size_t cap = nw->cap ? 2 * nw->cap : 64;
        struct npz_member *m = realloc(nw->m, cap * sizeof *m);
        if (!m)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        nw->m = m;
        nw->cap = cap;
    }
    long start = ftell(nw->data);
    enum qp_status st = start < 0 ? qp_fail(err, QP_E_IO, "write failed")
                                  : qp_fmt_npy_write(nw->data, t, err);
    long end = st ? -1 : ftell(nw->data);
    if (!st && end < 0)
        st = qp_fail(err, QP_E_IO, "write failed");
    if (st)
        return st;
    size_t len = strlen(t->name) + sizeof ".npy";
    struct npz_member *m = &nw->m[nw->n];
    if (!(m->name = malloc(len)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    snprintf(m->name, len, "%s.npy", t->name);
    m->start = (zip_uint64_t)start;
    m->len = (zip_uint64_t)(end - start);
    nw->n++;
    return QP_OK;
}

static enum qp_status npzw_add(struct qp_dump_writer *w, const struct qp_tensor *t,
                               struct qp_error *err)
{
    struct npz_writer *nw = w->impl;
    enum qp_status st = qp_dump_info_write(&nw->infos, t,
                                           !qp_fmt_npy_descr(t->dtype),
                                           write_member, nw, err);
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

/* Adds every member to za (stored, as numpy.savez does). */
static enum qp_status add_members(struct qp_dump_writer *w, zip_t *za,
                                  struct qp_error *err)
{
    struct npz_writer *nw = w->impl;
    for (size_t i = 0; i < nw->n; i++) {
        zip_source_t *src = zip_source_file(za, nw->data_path, nw->m[i].start,
                                            (zip_int64_t)nw->m[i].len);
        zip_int64_t idx = src ? zip_file_add(za, nw->m[i].name, src, 0) : -1;
        if (idx < 0) {
            bool dup = zip_error_code_zip(zip_get_error(za)) == ZIP_ER_EXISTS;
            zip_source_free(src);
            if (dup)
                return qp_fail(err, QP_E_INVAL, "'%s': member '%s' is used twice "
                               "(by a tensor and a quantized tensor's companion)",
                               w->path, nw->m[i].name);
            return qp_fail(err, QP_E_IO, "'%s': %s", w->path, zip_strerror(za));
        }
        if (zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0))
            return qp_fail(err, QP_E_IO, "'%s': %s", w->path, zip_strerror(za));
    }
    if (!nw->infos.n && !w->meta.count && nw->n)
        return QP_OK;
    char *info = qp_dump_infos_print(&nw->infos, &w->meta);
    zip_source_t *src = info ? zip_source_buffer(za, info, strlen(info), 1) : NULL;
    if (!src) {
        free(info);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if (zip_file_add(za, QP_NPZ_INFO_MEMBER, src, 0) < 0) {
        zip_source_free(src);
        return qp_fail(err, QP_E_IO, "'%s': %s", w->path, zip_strerror(za));
    }
    return QP_OK;
}

static enum qp_status npzw_commit(struct qp_dump_writer *w, struct qp_error *err)
{
    struct npz_writer *nw = w->impl;
    enum qp_status st = QP_OK;
    int bad = ferror(nw->data) | fclose(nw->data);
    nw->data = NULL;
    char *archive = qp_path_join(nw->od->tmp_path, "archive.npz");
    if (bad)
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", w->path,
                     strerror(errno));
    else if (!archive)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    int code = 0;
    zip_t *za = st ? NULL : zip_open(archive, ZIP_CREATE | ZIP_EXCL, &code);
    if (!st && !za)
        st = zip_open_error(w->path, code, err);
    if (!st && (st = add_members(w, za, err)))
        zip_discard(za);
    else if (!st && zip_close(za) != 0) {
        st = qp_fail(err, QP_E_IO, "'%s': cannot write the archive: %s", w->path,
                     zip_strerror(za));
        zip_discard(za);
    }
    if (!st) { /* durable, then in place */
        int fd = open(archive, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0)
            st = qp_fail(err, QP_E_IO, "'%s': cannot write the archive: %s",
                         w->path, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (!st)
        st = qp_outfile_place(archive, w->path, err);
    free(archive);
    npzw_free(nw);
    return st;
}

static void npzw_abort(struct qp_dump_writer *w)
{
    npzw_free(w->impl);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_npz = {
    "npz", npzw_open, npzw_add, npzw_commit, npzw_abort,
};
