#include "formats/dump-files.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/outfile.h"

#define ORDER_FILE ".qprobe-order"     /* file order, see qp_dump_scan_dir */
#define META_FILE ".qprobe-meta.json"  /* the dump's metadata, when it has some */

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


/* ---- reading ------------------------------------------------------------ */

struct listing {
    qp_dump_file_reader read;
    char **paths, **names; /* by backing index; names NULL for a file */
    size_t n;
};

void qp_dump_files_close(struct qp_dump *d)
{
    struct listing *l = d->impl;
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->paths[i]);
        free(l->names[i]);
    }
    free(l->paths);
    free(l->names);
    free(l);
    d->impl = NULL;
}

enum qp_status qp_dump_files_read(struct qp_dump *d, bool dir, const char *ext,
                                  qp_dump_file_reader read,
                                  struct qp_error *err)
{
    char **rel = NULL, dot[16];
    size_t n = 1;
    snprintf(dot, sizeof dot, ".%s", ext);
    enum qp_status st = dir ? qp_dump_scan_dir(d->path, dot, &rel, &n, err)
                            : QP_OK;
    if (st)
        return st;
    struct listing *l = calloc(1, sizeof *l);
    d->impl = l;
    d->entries = calloc(n ? n : 1, sizeof *d->entries);
    if (l) {
        l->read = read;
        l->paths = calloc(n ? n : 1, sizeof *l->paths);
        l->names = calloc(n ? n : 1, sizeof *l->names);
    }
    if (!l || !l->paths || !l->names || !d->entries)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        l->n = i + 1;
        if (rel) {
            l->paths[i] = qp_path_join(d->path, rel[i]);
            rel[i][strlen(rel[i]) - strlen(dot)] = '\0';
            qp_dump_unescape_name(rel[i]);
            l->names[i] = rel[i];
            rel[i] = NULL;
        } else {
            l->paths[i] = strdup(d->path);
        }
        if (!l->paths[i]) {
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        st = read(l->paths[i], l->names[i], true, &d->entries[i], err);
        if (!st)
            d->count = i + 1;
    }
    for (size_t i = 0; rel && i < n; i++)
        free(rel[i]);
    free(rel);
    if (!st && dir)
        st = qp_dump_attach_companions(d, err);
    char *meta = !st && dir ? qp_path_join(d->path, META_FILE) : NULL;
    if (meta)
        st = qp_dump_meta_load(meta, &d->meta, err);
    free(meta);
    return st;
}

enum qp_status qp_dump_files_load(struct qp_dump *d, size_t i,
                                  struct qp_tensor **out, struct qp_error *err)
{
    struct listing *l = d->impl;
    return l->read(l->paths[i], l->names[i], false, out, err);
}

/* ---- writing ------------------------------------------------------------ */

struct files {
    qp_dump_file_writer write;
    char ext[16];           /* ".pb" */
    struct qp_outdir *od;   /* directory form */
    FILE *order;
    struct qp_outfile *of;  /* single-file form */
    int count;
};

enum qp_status qp_dump_files_open(struct qp_dump_writer *w, bool dir,
                                  const char *ext, qp_dump_file_writer write,
                                  struct qp_error *err)
{
    struct files *f = calloc(1, sizeof *f);
    if (!f)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    f->write = write;
    snprintf(f->ext, sizeof f->ext, ".%s", ext);
    enum qp_status st;
    if (!dir) {
        st = qp_outfile_open(w->path, &f->of, err);
    } else {
        size_t len = strlen(w->path);
        while (len > 1 && w->path[len - 1] == '/')
            w->path[--len] = '\0';
        st = qp_outdir_open(w->path, &f->od, err);
        char *op = st ? NULL : qp_path_join(f->od->tmp_path, ORDER_FILE);
        if (!st && !(f->order = op ? fopen(op, "w") : NULL)) {
            st = qp_fail(err, QP_E_IO, "'%s': cannot write", w->path);
            qp_outdir_abort(f->od);
        }
        free(op);
    }
    if (st) {
        free(f);
        return st;
    }
    w->impl = f;
    return QP_OK;
}

static enum qp_status write_one(struct files *f, const struct qp_tensor *t,
                                struct qp_error *err)
{
    char *file = qp_dump_escape_name(t->name, f->ext);
    char *full = file ? qp_path_join(f->od->tmp_path, file) : NULL;
    enum qp_status st = full ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
    FILE *fp = NULL;
    if (!st && !(fp = fopen(full, "wb")))
        st = qp_fail(err, QP_E_IO, "cannot write '%s': %s", file, strerror(errno));
    if (!st)
        st = f->write(fp, t, err);
    if (fp && fclose(fp) != 0 && !st)
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", file,
                     strerror(errno));
    if (!st && fprintf(f->order, "%s\n", file) < 0)
        st = qp_fail(err, QP_E_IO, "order file: write failed: %s",
                     strerror(errno));
    free(file);
    free(full);
    return st;
}

enum qp_status qp_dump_files_add(struct qp_dump_writer *w,
                                 const struct qp_tensor *t,
                                 struct qp_error *err)
{
    struct files *f = w->impl;
    enum qp_status st;
    if (f->of) {
        if (f->count++)
            return qp_fail(err, QP_E_INVAL, "'%s': a %s file holds one "
                           "tensor; use a directory for a dump", w->path,
                           f->ext);
        if (t->qp)
            return qp_fail(err, QP_E_UNSUPPORTED, "'%s': a %s file cannot "
                           "carry the quantization parameters of '%s'",
                           w->path, f->ext, t->name);
        st = f->write(f->of->fp, t, err);
    } else {
        st = write_one(f, t, err);
        if (!st && t->qp && qp_dtype_is_int(t->dtype)) {
            struct qp_tensor *s, *z;
            st = qp_dump_companions(t, &s, &z, err);
            if (!st)
                st = write_one(f, s, err);
            if (!st && z)
                st = write_one(f, z, err);
            qp_tensor_free(s);
            qp_tensor_free(z);
        }
    }
    return st ? qp_error_prefix(err, "'%s': ", w->path) : QP_OK;
}

enum qp_status qp_dump_files_commit(struct qp_dump_writer *w,
                                    struct qp_error *err)
{
    struct files *f = w->impl;
    enum qp_status st;
    if (f->of && f->count != 1) {
        qp_outfile_abort(f->of);
        st = qp_fail(err, QP_E_INVAL, "'%s': no tensor written", w->path);
    } else if (f->of) {
        st = qp_outfile_commit(f->of, err);
    } else {
        st = (ferror(f->order) | fclose(f->order)) != 0
                 ? qp_fail(err, QP_E_IO, "'%s': write failed: %s", w->path,
                           strerror(errno))
                 : QP_OK;
        char *meta = !st && w->meta.count
                         ? qp_path_join(f->od->tmp_path, META_FILE) : NULL;
        if (meta)
            st = qp_dump_meta_save(meta, &w->meta, err);
        free(meta);
        if (st) {
            qp_error_rename(err, f->od->tmp_path, w->path);
            qp_outdir_abort(f->od);
        }
        else
            st = qp_outdir_commit(f->od, err);
    }
    free(f);
    return st;
}

void qp_dump_files_abort(struct qp_dump_writer *w)
{
    struct files *f = w->impl;
    if (f->of) {
        qp_outfile_abort(f->of);
    } else {
        fclose(f->order);
        qp_outdir_abort(f->od);
    }
    free(f);
}
