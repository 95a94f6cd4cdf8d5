/* formats/dump-npy.c: dumps made of .npy files: a single .npy file, or a
 * directory tree of them.
 *
 * In a directory, a tensor's name is the file's path relative to the
 * directory without ".npy", with %XX escapes decoded; writers escape every
 * byte outside [A-Za-z0-9._-] (so "a/b:0" is stored as "a%2Fb%3A0.npy").
 * Writers also record the order tensors were added in ".qprobe-order" (one
 * file name per line), which readers follow; files it does not name come
 * after, in natural order. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "formats/dump.h"
#include "formats/npy.h"

#define ORDER_FILE ".qprobe-order"
#define META_FILE ".qprobe-meta.json" /* the dump's metadata, when it has some */

/* ---- name escaping ------------------------------------------------------ */

static bool plain_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* malloc'd file name for tensor name + ext. A leading '.' is escaped too so
 * no tensor becomes a hidden file. */
char *qp_dump_escape_name(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    char *r = malloc(3 * n + e + 1);
    if (!r)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (plain_char(c) && !(i == 0 && c == '.')) {
            r[k++] = (char)c;
        } else {
            static const char hex[] = "0123456789ABCDEF";
            r[k++] = '%';
            r[k++] = hex[c >> 4];
            r[k++] = hex[c & 15];
        }
    }
    memcpy(r + k, ext, e + 1);
    return r;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes %XX escapes in place (an invalid escape is kept literally). */
void qp_dump_unescape_name(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0) {
            *w++ = (char)(hi << 4 | lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* ---- directory scanning, shared by directory dumps ------------------------ */

struct file_list {
    char **rel; /* paths relative to the root */
    size_t n, cap;
};

static enum qp_status list_push(struct file_list *l, const char *rel,
                                struct qp_error *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **nr = realloc(l->rel, cap * sizeof *nr);
        if (!nr)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        l->rel = nr;
        l->cap = cap;
    }
    if (!(l->rel[l->n] = strdup(rel)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    l->n++;
    return QP_OK;
}

static void list_free(struct file_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->rel[i]);
    free(l->rel);
}

static enum qp_status scan(const char *root, const char *rel, const char *ext,
                           int depth, struct file_list *l, struct qp_error *err)
{
    char *dir = *rel ? qp_path_join(root, rel) : strdup(root);
    if (!dir)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    DIR *d = opendir(dir);
    if (!d) {
        enum qp_status st = qp_fail(err, QP_E_IO, "'%s': cannot open directory: %s",
                                    dir, strerror(errno));
        free(dir);
        return st;
    }
    enum qp_status st = QP_OK;
    struct dirent *de;
    while (!st && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *r = *rel ? qp_path_join(rel, de->d_name) : strdup(de->d_name);
        char *full = qp_path_join(dir, de->d_name);
        if (!r || !full) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        } else {
            struct stat sb;
            if (stat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                if (depth < 8)
                    st = scan(root, r, ext, depth + 1, l, err);
            } else if (qp_str_ends_with(de->d_name, ext)) {
                st = list_push(l, r, err);
            }
        }
        free(r);
        free(full);
    }
    closedir(d);
    free(dir);
    return st;
}

static int cmp_natural(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Lists files ending in ext below root: first those named in the order
 * file, in its order, then the rest in natural order. */
enum qp_status qp_dump_scan_dir(const char *root, const char *ext,
                                char ***files, size_t *count,
                                struct qp_error *err)
{
    struct file_list l = {0};
    *files = NULL;
    *count = 0;
    enum qp_status st = scan(root, "", ext, 0, &l, err);
    if (st) {
        list_free(&l);
        return st;
    }
    if (l.n) /* l.rel is NULL when nothing matched */
        qsort(l.rel, l.n, sizeof *l.rel, cmp_natural);
    char *order_path = qp_path_join(root, ORDER_FILE), *text = NULL;
    if (order_path && qp_read_file(order_path, (size_t)1 << 30, &text, NULL,
                                   NULL) == QP_OK) {
        size_t k = 0; /* l.rel[0..k) are placed */
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            for (size_t i = k; i < l.n; i++)
                if (!strcmp(l.rel[i], line)) {
                    char *t = l.rel[i];
                    memmove(l.rel + k + 1, l.rel + k, (i - k) * sizeof *l.rel);
                    l.rel[k++] = t;
                    break;
                }
        }
    }
    free(text);
    free(order_path);
    *files = l.rel;
    *count = l.n;
    return QP_OK;
}

/* ---- npy directory reader -------------------------------------------------- */

struct npy_dir {
    char **paths; /* full paths, by backing index */
    size_t n;
};

static void npy_dir_close(struct qp_dump *d)
{
    struct npy_dir *nd = d->impl;
    if (!nd)
        return;
    for (size_t i = 0; i < nd->n; i++)
        free(nd->paths[i]);
    free(nd->paths);
    free(nd);
    d->impl = NULL;
}

static enum qp_status npy_dir_open(struct qp_dump *d, struct qp_error *err)
{
    char **rel;
    size_t n;
    enum qp_status st = qp_dump_scan_dir(d->path, ".npy", &rel, &n, err);
    if (st)
        return st;
    struct npy_dir *nd = calloc(1, sizeof *nd);
    d->entries = calloc(n ? n : 1, sizeof *d->entries);
    if (nd)
        nd->paths = calloc(n ? n : 1, sizeof *nd->paths);
    d->impl = nd;
    if (!nd || !nd->paths || !d->entries)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        nd->paths[i] = qp_path_join(d->path, rel[i]);
        nd->n = i + 1;
        if (!nd->paths[i]) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        rel[i][strlen(rel[i]) - 4] = '\0';
        qp_dump_unescape_name(rel[i]);
        st = qp_fmt_npy_load(nd->paths[i], rel[i], true, &d->entries[i], err);
        if (!st)
            d->count = i + 1;
    }
    for (size_t i = 0; i < n; i++)
        free(rel[i]);
    free(rel);
    if (!st)
        st = qp_dump_attach_companions(d, err);
    char *meta = st ? NULL : qp_path_join(d->path, META_FILE);
    if (meta)
        st = qp_dump_meta_load(meta, &d->meta, err);
    free(meta);
    return st;
}

static enum qp_status npy_dir_load(struct qp_dump *d, size_t i,
                                   struct qp_tensor **out, struct qp_error *err)
{
    struct npy_dir *nd = d->impl;
    return qp_fmt_npy_load(nd->paths[i], NULL, false, out, err);
}

const struct qp_dump_ops qp_dump_ops_npy_dir = {
    "npy-dir", npy_dir_open, npy_dir_load, npy_dir_close,
};

/* ---- single .npy file ----------------------------------------------------- */

static enum qp_status npy_open(struct qp_dump *d, struct qp_error *err)
{
    d->entries = calloc(1, sizeof *d->entries);
    if (!d->entries)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_fmt_npy_load(d->path, NULL, true, &d->entries[0], err);
    if (!st)
        d->count = 1;
    return st;
}

static enum qp_status npy_load(struct qp_dump *d, size_t i,
                               struct qp_tensor **out, struct qp_error *err)
{
    (void)i;
    return qp_fmt_npy_load(d->path, NULL, false, out, err);
}

const struct qp_dump_ops qp_dump_ops_npy = {"npy", npy_open, npy_load, NULL};

/* ---- writers ---------------------------------------------------------------- */

struct npy_dir_writer {
    struct qp_outdir *od;
    FILE *order;
};

static enum qp_status npy_dir_w_open(struct qp_dump_writer *w,
                                     struct qp_error *err)
{
    struct npy_dir_writer *nw = calloc(1, sizeof *nw);
    if (!nw)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t len = strlen(w->path);
    while (len > 1 && w->path[len - 1] == '/')
        w->path[--len] = '\0';
    enum qp_status st = qp_outdir_open(w->path, &nw->od, err);
    if (st) {
        free(nw);
        return st;
    }
    char *op = qp_path_join(nw->od->tmp_path, ORDER_FILE);
    nw->order = op ? fopen(op, "w") : NULL;
    free(op);
    if (!nw->order) {
        qp_outdir_abort(nw->od);
        free(nw);
        return qp_fail(err, QP_E_IO, "'%s': cannot write", w->path);
    }
    w->impl = nw;
    return QP_OK;
}

static enum qp_status write_one_npy(struct npy_dir_writer *nw,
                                    const struct qp_tensor *t,
                                    struct qp_error *err)
{
    char *file = qp_dump_escape_name(t->name, ".npy");
    char *full = file ? qp_path_join(nw->od->tmp_path, file) : NULL;
    enum qp_status st = full ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    FILE *fp = NULL;
    if (!st && !(fp = fopen(full, "wb")))
        st = qp_fail(err, QP_E_IO, "'%s': cannot write: %s", full, strerror(errno));
    if (!st)
        st = qp_fmt_npy_write(fp, t, err);
    if (fp && fclose(fp) != 0 && !st)
        st = qp_fail(err, QP_E_IO, "'%s': write failed", full);
    if (!st && fprintf(nw->order, "%s\n", file) < 0)
        st = qp_fail(err, QP_E_IO, "order file: write failed");
    free(file);
    free(full);
    return st;
}

static enum qp_status npy_dir_w_add(struct qp_dump_writer *w,
                                    const struct qp_tensor *t,
                                    struct qp_error *err)
{
    struct npy_dir_writer *nw = w->impl;
    enum qp_status st = write_one_npy(nw, t, err);
    if (!st && t->qp && qp_dtype_is_int(t->dtype)) {
        struct qp_tensor *s, *z;
        st = qp_dump_companions(t, &s, &z, err);
        if (!st)
            st = write_one_npy(nw, s, err);
        if (!st && z)
            st = write_one_npy(nw, z, err);
        qp_tensor_free(s);
        qp_tensor_free(z);
    }
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

static enum qp_status npy_dir_w_commit(struct qp_dump_writer *w,
                                       struct qp_error *err)
{
    struct npy_dir_writer *nw = w->impl;
    enum qp_status st = fclose(nw->order) != 0
                            ? qp_fail(err, QP_E_IO, "'%s': write failed", w->path)
                            : QP_OK;
    char *meta = !st && w->meta.count ? qp_path_join(nw->od->tmp_path, META_FILE)
                                      : NULL;
    if (meta)
        st = qp_dump_meta_save(meta, &w->meta, err);
    free(meta);
    if (st)
        qp_outdir_abort(nw->od);
    else
        st = qp_outdir_commit(nw->od, err);
    free(nw);
    return st;
}

static void npy_dir_w_abort(struct qp_dump_writer *w)
{
    struct npy_dir_writer *nw = w->impl;
    fclose(nw->order);
    qp_outdir_abort(nw->od);
    free(nw);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_npy_dir = {
    "npy-dir", npy_dir_w_open, npy_dir_w_add, npy_dir_w_commit, npy_dir_w_abort,
};

/* A single .npy: exactly one tensor. */
struct npy_writer {
    struct qp_outfile *of;
    int n;
};

static enum qp_status npy_w_open(struct qp_dump_writer *w, struct qp_error *err)
{
    struct npy_writer *nw = calloc(1, sizeof *nw);
    if (!nw)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = qp_outfile_open(w->path, &nw->of, err);
    if (st) {
        free(nw);
        return st;
    }
    w->impl = nw;
    return QP_OK;
}

static enum qp_status npy_w_add(struct qp_dump_writer *w,
                                const struct qp_tensor *t, struct qp_error *err)
{
    struct npy_writer *nw = w->impl;
    if (nw->n++)
        return qp_fail(err, QP_E_INVAL,
                       "'%s': a .npy file holds one tensor; use a directory, "
                       ".npz, .safetensors or .h5 for a dump", w->path);
    if (t->qp)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "'%s': a .npy file cannot carry the quantization "
                       "parameters of '%s'", w->path, t->name);
    enum qp_status st = qp_fmt_npy_write(nw->of->fp, t, err);
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

static enum qp_status npy_w_commit(struct qp_dump_writer *w,
                                   struct qp_error *err)
{
    struct npy_writer *nw = w->impl;
    enum qp_status st;
    if (nw->n != 1) {
        qp_outfile_abort(nw->of);
        st = qp_fail(err, QP_E_INVAL, "'%s': no tensor written", w->path);
    } else {
        st = qp_outfile_commit(nw->of, err);
    }
    free(nw);
    return st;
}

static void npy_w_abort(struct qp_dump_writer *w)
{
    struct npy_writer *nw = w->impl;
    qp_outfile_abort(nw->of);
    free(nw);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_npy = {
    "npy", npy_w_open, npy_w_add, npy_w_commit, npy_w_abort,
};
