/* formats/safetensors-write.c: the streaming safetensors dump writer
 * (formats/safetensors.h). Tensor bytes go to an unlinked temporary file
 * beside the output as they are added; commit writes the header, copies
 * the data after it (copy_file_range when the kernel allows) and renames
 * the result into place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/outfile.h"
#include "formats/dump-info.h"
#include "formats/json.h"
#include "formats/safetensors.h"

struct st_rec {
    char *name;
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    uint64_t begin, end;
};

struct st_writer {
    struct qp_outfile *of;   /* the output */
    struct qp_outfile *data; /* tensor bytes; its name is unlinked at once */
    struct st_rec *recs;
    size_t n, cap;
    uint64_t off;
    struct qp_dump_infos infos;
};

static void writer_free(struct st_writer *sw)
{
    qp_outfile_abort(sw->of);
    qp_outfile_abort(sw->data);
    for (size_t i = 0; i < sw->n; i++)
        free(sw->recs[i].name);
    free(sw->recs);
    qp_dump_infos_release(&sw->infos);
    free(sw);
}

static enum qp_status stw_open(struct qp_dump_writer *w, struct qp_error *err)
{
    struct st_writer *sw = calloc(1, sizeof *sw);
    if (!sw)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    char *home = qp_outfile_temp_home(w->path);
    size_t len = home ? strlen(home) + sizeof ".data" : 0;
    char *dpath = home ? malloc(len) : NULL;
    enum qp_status st = dpath ? qp_outfile_open(w->path, &sw->of, err)
                              : qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st) {
        snprintf(dpath, len, "%s.data", home);
        st = qp_outfile_open(dpath, &sw->data, err);
    }
    free(dpath);
    free(home);
    if (st) {
        writer_free(sw);
        return st;
    }
    unlink(sw->data->tmp_path); /* nothing is left behind if we die */
    w->impl = sw;
    return QP_OK;
}

/* Appends t's bytes to the data file and records its header entry. */
static enum qp_status write_rec(void *ctx, const struct qp_tensor *t,
                                struct qp_error *err)
{
    struct st_writer *sw = ctx;
    if (sw->n == sw->cap) {
        size_t cap = sw->cap ? 2 * sw->cap : 64;
        struct st_rec *r = realloc(sw->recs, cap * sizeof *r);
        if (!r)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        sw->recs = r;
        sw->cap = cap;
    }
    struct st_rec *r = &sw->recs[sw->n];
    *r = (struct st_rec){strdup(t->name), t->dtype, t->ndim, {0}, sw->off,
                         sw->off + t->nbytes};
    if (!r->name)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    memcpy(r->shape, t->shape, sizeof r->shape);
    sw->n++;
    if (t->nbytes && fwrite(t->data, 1, t->nbytes, sw->data->fp) != t->nbytes)
        return qp_fail(err, QP_E_IO, "tensor '%s': write failed: %s", t->name,
                       strerror(errno));
    sw->off += t->nbytes;
    return QP_OK;
}

static enum qp_status stw_add(struct qp_dump_writer *w, const struct qp_tensor *t,
                              struct qp_error *err)
{
    struct st_writer *sw = w->impl;
    enum qp_status st = qp_dump_info_write(&sw->infos, t,
                                           !qp_st_dtype_name(t->dtype), write_rec,
                                           sw, err);
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

static int cmp_rec_name(const void *a, const void *b)
{
    return strcmp((*(const struct st_rec *const *)a)->name,
                  (*(const struct st_rec *const *)b)->name);
}

/* A companion NAME.scale may collide with a tensor added under that name. */
static enum qp_status check_unique(const struct st_writer *sw, const char *path,
                                   struct qp_error *err)
{
    const struct st_rec **v = malloc(sw->n * sizeof *v + 1);
    if (!v)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < sw->n; i++)
        v[i] = &sw->recs[i];
    qsort(v, sw->n, sizeof *v, cmp_rec_name);
    enum qp_status st = QP_OK;
    for (size_t i = 1; i < sw->n && !st; i++)
        if (!strcmp(v[i - 1]->name, v[i]->name))
            st = qp_fail(err, QP_E_INVAL, "'%s': tensor name '%s' is used twice "
                         "(by a tensor and a quantized tensor's companion)", path,
                         v[i]->name);
    free(v);
    return st;
}

static char *header_text(const struct st_writer *sw,
                         const struct qp_dump_meta *meta)
{
    struct qp_json *root = qp_json_new_object();
    bool ok = root != NULL;
    if (ok && (meta->count || sw->infos.n)) {
        struct qp_json *m = qp_json_add_object(root, "__metadata__");
        ok = m && qp_dump_meta_to_json(meta, m);
        if (ok && sw->infos.n) {
            char *info = qp_dump_infos_print(&sw->infos, NULL);
            ok = info && qp_json_add_str(m, QP_DUMP_META_RESERVED, info);
            free(info);
        }
    }
    for (size_t i = 0; ok && i < sw->n; i++) {
        const struct st_rec *r = &sw->recs[i];
        struct qp_json *o = qp_json_add_object(root, r->name), *sh, *off;
        ok = o && qp_json_add_str(o, "dtype", qp_st_dtype_name(r->dtype)) &&
             (sh = qp_json_add_array(o, "shape")) &&
             (off = qp_json_add_array(o, "data_offsets"));
        for (int k = 0; ok && k < r->ndim; k++)
            ok = qp_json_add_num(sh, NULL, (double)r->shape[k]) != NULL;
        ok = ok && qp_json_add_num(off, NULL, (double)r->begin) &&
             qp_json_add_num(off, NULL, (double)r->end);
    }
    char *text = ok ? qp_json_print(root, false) : NULL;
    qp_json_free(root);
    return text;
}

/* Copies the first len bytes of src after what dst holds. */
static enum qp_status copy_data(FILE *src, FILE *dst, uint64_t len,
                                const char *path, struct qp_error *err)
{
    int in = fileno(src), out = fileno(dst);
    if (fflush(src) != 0 || fflush(dst) != 0 || lseek(in, 0, SEEK_SET) != 0)
        return qp_fail(err, QP_E_IO, "'%s': write failed: %s", path,
                       strerror(errno));
    bool fallback = false;
    char *buf = NULL;
    while (len) {
        size_t chunk = len > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)len;
        ssize_t k;
        if (!fallback) {
            k = copy_file_range(in, NULL, out, NULL, chunk, 0);
            if (k < 0 && errno != EINTR) { /* other filesystems: copy by hand */
                fallback = true;
                continue;
            }
        } else {
            if (!buf && !(buf = malloc((size_t)1 << 20)))
                return qp_fail(err, QP_E_NOMEM, "out of memory");
            k = read(in, buf, chunk < ((size_t)1 << 20) ? chunk : (size_t)1 << 20);
            for (ssize_t done = 0, w; k > 0 && done < k; done += w)
                if ((w = write(out, buf + done, (size_t)(k - done))) <= 0) {
                    k = -1;
                    break;
                }
        }
        if (k == 0 || (k < 0 && errno != EINTR)) {
            free(buf);
            return qp_fail(err, QP_E_IO, "'%s': write failed: %s", path,
                           k ? strerror(errno) : "temporary data file is short");
        }
        if (k > 0)
            len -= (uint64_t)k;
    }
    free(buf);
    return QP_OK;
}

/* Writes the 8-byte length and the header text, padded with spaces so the
 * data section starts at a multiple of 8. */
static enum qp_status write_header(FILE *fp, const char *text, const char *path,
                                   struct qp_error *err)
{
    size_t n = strlen(text), padded = (n + 7) / 8 * 8;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    if (fwrite(len, 1, 8, fp) != 8 || fwrite(text, 1, n, fp) != n)
        return qp_fail(err, QP_E_IO, "'%s': write failed", path);
    for (size_t i = n; i < padded; i++)
        if (fputc(' ', fp) == EOF)
            return qp_fail(err, QP_E_IO, "'%s': write failed", path);
    return QP_OK;
}

static enum qp_status stw_commit(struct qp_dump_writer *w, struct qp_error *err)
{
    struct st_writer *sw = w->impl;
    enum qp_status st = check_unique(sw, w->path, err);
    char *text = st ? NULL : header_text(sw, &w->meta);
    if (!st && !text)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = write_header(sw->of->fp, text, w->path, err);
    free(text);
    if (!st)
        st = copy_data(sw->data->fp, sw->of->fp, sw->off, w->path, err);
    if (!st) {
        st = qp_outfile_commit(sw->of, err);
        sw->of = NULL;
    }
    writer_free(sw);
    return st;
}

static void stw_abort(struct qp_dump_writer *w)
{
    writer_free(w->impl);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_safetensors = {
    "safetensors", stw_open, stw_add, stw_commit, stw_abort,
};

/* ---- the streaming writer (qp_st_stream_*) -------------------------------- */

struct qp_st_stream {
    struct st_writer *sw; /* recs: the declared tensors; of: the output */
    uint64_t written;     /* data bytes written so far, of sw->off */
};

/* Records descriptor t as the next tensor of sw's data section. */
static enum qp_status declare(struct st_writer *sw, const struct qp_tensor *t,
                              const char *path, struct qp_error *err)
{
    size_t nbytes;
    if (!qp_st_dtype_name(t->dtype))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s': dtype %s "
                       "cannot be streamed", path, t->name, qp_dtype_name(t->dtype));
    enum qp_status st = qp_shape_check(t->name, t->dtype, t->ndim, t->shape,
                                       &nbytes, err);
    if (st)
        return qp_error_prefix(err, "'%s': ", path);
    if (sw->off > UINT64_MAX - nbytes)
        return qp_fail(err, QP_E_OVERFLOW, "'%s': the data section is too large",
                       path);
    struct st_rec *r = &sw->recs[sw->n];
    *r = (struct st_rec){strdup(t->name), t->dtype, t->ndim, {0}, sw->off,
                         sw->off + nbytes};
    if (!r->name)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    memcpy(r->shape, t->shape, sizeof r->shape);
    sw->n++;
    sw->off += nbytes;
    return QP_OK;
}

enum qp_status qp_st_stream_open(const char *path,
                                 struct qp_tensor *const *descs, size_t n,
                                 const struct qp_dump_meta *meta,
                                 struct qp_st_stream **out, struct qp_error *err)
{
    *out = NULL;
    struct qp_st_stream *s = calloc(1, sizeof *s);
    struct st_writer *sw = calloc(1, sizeof *sw);
    struct st_rec *recs = calloc(n ? n : 1, sizeof *recs);
    if (!s || !sw || !recs) {
        free(s);
        free(sw);
        free(recs);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    sw->recs = recs;
    sw->cap = n;
    s->sw = sw;
    enum qp_status st = QP_OK;
    for (size_t i = 0; i < n && !st; i++)
        st = declare(sw, descs[i], path, err);
    if (!st)
        st = check_unique(sw, path, err);
    const struct qp_dump_meta none = {0};
    char *text = st ? NULL : header_text(sw, meta ? meta : &none);
    if (!st && !text)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_outfile_open(path, &sw->of, err);
    if (!st)
        st = write_header(sw->of->fp, text, path, err);
    free(text);
    if (st) {
        qp_st_stream_abort(s);
        return st;
    }
    *out = s;
    return QP_OK;
}

enum qp_status qp_st_stream_write(struct qp_st_stream *s, const void *data,
                                  size_t len, struct qp_error *err)
{
    struct st_writer *sw = s->sw;
    if (len > sw->off - s->written)
        return qp_fail(err, QP_E_INVAL, "'%s': %zu bytes more than the %llu "
                       "declared", sw->of->path, len - (size_t)(sw->off - s->written),
                       (unsigned long long)sw->off);
    if (len && fwrite(data, 1, len, sw->of->fp) != len)
        return qp_fail(err, QP_E_IO, "'%s': write failed: %s", sw->of->path,
                       strerror(errno));
    s->written += len;
    return QP_OK;
}

enum qp_status qp_st_stream_commit(struct qp_st_stream *s, struct qp_error *err)
{
    struct st_writer *sw = s->sw;
    enum qp_status st = QP_OK;
    if (s->written != sw->off) {
        size_t i = 0;
        while (i + 1 < sw->n && sw->recs[i].end <= s->written)
            i++;
        st = qp_fail(err, QP_E_INVAL, "'%s': %llu of %llu data bytes written "
                     "(tensor '%s' is incomplete)", sw->of->path,
                     (unsigned long long)s->written, (unsigned long long)sw->off,
                     sw->recs[i].name);
    }
    if (!st) {
        st = qp_outfile_commit(sw->of, err);
        sw->of = NULL;
    }
    qp_st_stream_abort(s);
    return st;
}

void qp_st_stream_abort(struct qp_st_stream *s)
{
    if (!s)
        return;
    writer_free(s->sw);
    free(s);
}
