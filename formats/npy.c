#include "formats/npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/outfile.h"
#include "core/size.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    char code[3]; /* kind + item size, e.g. "f4" */
    enum qp_dtype dtype;
} descr_table[] = {
    {"f2", QP_DTYPE_F16}, {"f4", QP_DTYPE_F32}, {"f8", QP_DTYPE_F64},
    {"i1", QP_DTYPE_I8},  {"u1", QP_DTYPE_U8},  {"i2", QP_DTYPE_I16},
    {"u2", QP_DTYPE_U16}, {"i4", QP_DTYPE_I32}, {"u4", QP_DTYPE_U32},
    {"i8", QP_DTYPE_I64}, {"u8", QP_DTYPE_U64}, {"b1", QP_DTYPE_BOOL},
};

const char *qp_fmt_npy_descr(enum qp_dtype dtype)
{
    static const char *const names[] = {
        [QP_DTYPE_F32] = "<f4", [QP_DTYPE_F16] = "<f2", [QP_DTYPE_BF16] = NULL,
        [QP_DTYPE_F64] = "<f8", [QP_DTYPE_I8] = "|i1",  [QP_DTYPE_U8] = "|u1",
        [QP_DTYPE_I16] = "<i2", [QP_DTYPE_U16] = "<u2", [QP_DTYPE_I32] = "<i4",
        [QP_DTYPE_U32] = "<u4", [QP_DTYPE_I64] = "<i8", [QP_DTYPE_U64] = "<u8",
        [QP_DTYPE_I4] = NULL,   [QP_DTYPE_U4] = NULL,   [QP_DTYPE_BOOL] = "|b1",
        [QP_DTYPE_F8E4M3] = NULL, [QP_DTYPE_F8E5M2] = NULL,
        [QP_DTYPE_I2] = NULL,   [QP_DTYPE_U2] = NULL,   [QP_DTYPE_I3] = NULL,
        [QP_DTYPE_U3] = NULL,
    };
    _Static_assert(sizeof names / sizeof names[0] == QP_DTYPE_COUNT,
                   "names must cover every dtype");
    return names[dtype];
}

/* ---- header dict parser: {'descr': '<f4', 'fortran_order': False,
 *      'shape': (3, 4), } ---------------------------------------------- */

struct hdr {
    const char *start, *p, *end;
    const char *what;
    struct qp_error *err;
};

static void skip_ws(struct hdr *h)
{
    while (h->p < h->end && isspace((unsigned char)*h->p))
        h->p++;
}

static bool expect(struct hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A quoted string into buf (single or double quotes, no escapes). */
static bool parse_str(struct hdr *h, char *buf, size_t size)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return false;
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (n + 1 >= size)
            return false;
        buf[n++] = *h->p++;
    }
    if (h->p >= h->end)
        return false;
    h->p++;
    buf[n] = '\0';
    return true;
}

static enum qp_status hdr_fail(struct hdr *h, const char *msg)
{
    return qp_fail(h->err, QP_E_FORMAT,
                   "'%s': npy header: %s (at header byte %td)", h->what, msg,
                   h->p - h->start);
}

static enum qp_status parse_header(struct hdr *h, char *descr, size_t dsize,
                                   bool *fortran, int *ndim, int64_t *shape)
{
    bool have_descr = false, have_fortran = false, have_shape = false;
    if (!expect(h, '{'))
        return hdr_fail(h, "expected '{'");
    for (;;) {
        skip_ws(h);
        if (expect(h, '}'))
            break;
        char key[32];
        if (!parse_str(h, key, sizeof key))
            return hdr_fail(h, "expected a quoted key");
        if (!expect(h, ':'))
            return hdr_fail(h, "expected ':'");
        skip_ws(h);
        if (!strcmp(key, "descr")) {
            if (!parse_str(h, descr, dsize))
                return hdr_fail(h, "descr must be a quoted string (structured "
                                   "dtypes are not supported)");
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if ((size_t)(h->end - h->p) >= 4 && !memcmp(h->p, "True", 4)) {
                *fortran = true;
                h->p += 4;
            } else if ((size_t)(h->end - h->p) >= 5 && !memcmp(h->p, "False", 5)) {
                *fortran = false;
                h->p += 5;
            } else {
                return hdr_fail(h, "fortran_order must be True or False");
            }
            have_fortran = true;
        } else if (!strcmp(key, "shape")) {
            if (!expect(h, '('))
                return hdr_fail(h, "shape must be a tuple");
            *ndim = 0;
            for (;;) {
                skip_ws(h);
                if (expect(h, ')'))
                    break;
                if (*ndim >= QP_MAX_DIMS)
                    return qp_fail(h->err, QP_E_UNSUPPORTED,
                                   "'%s': more than %d dims", h->what,
                                   QP_MAX_DIMS);
                if (h->p >= h->end || !isdigit((unsigned char)*h->p))
                    return hdr_fail(h, "shape entries must be non-negative "
                                       "integers");
                int64_t v = 0;
                while (h->p < h->end && isdigit((unsigned char)*h->p)) {
                    if (v > (INT64_MAX - 9) / 10)
                        return hdr_fail(h, "shape entry too large");
                    v = v * 10 + (*h->p++ - '0');
                }
                if (h->p < h->end && *h->p == 'L') /* python 2 long */
                    h->p++;
                shape[(*ndim)++] = v;
                skip_ws(h);
                if (expect(h, ')'))
                    break;
                if (!expect(h, ','))
                    return hdr_fail(h, "expected ',' or ')' in shape");
            }
            have_shape = true;
        } else {
            return hdr_fail(h, "unknown key");
        }
        skip_ws(h);
        if (expect(h, '}'))
            break;
        if (!expect(h, ','))
            return hdr_fail(h, "expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape)
        return hdr_fail(h, "descr, fortran_order and shape are all required");
    return QP_OK;
}

static void byteswap(unsigned char *p, size_t n, size_t es)
{
    for (size_t i = 0; i < n; i++, p += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

enum qp_status qp_fmt_npy_parse(const char *what, const void *buf, size_t len,
                                const char *name, struct qp_mmap *map,
                                bool header_only, struct qp_tensor **out,
                                struct qp_error *err)
{
    const unsigned char *b = buf;
    *out = NULL;
    if (len < 10 || memcmp(b, magic, sizeof magic) != 0)
        return qp_fail(err, QP_E_FORMAT, "'%s': not an npy file (bad magic)",
                       what);
    unsigned major = b[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return qp_fail(err, QP_E_FORMAT, "'%s': truncated npy header", what);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
               (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': npy format version %u.%u",
                       what, major, b[7]);
    }
    if (hlen > len - hstart)
        return qp_fail(err, QP_E_FORMAT,
                       "'%s': npy header length %zu exceeds the file (%zu bytes)",
                       what, hlen, len);
    char descr[64];
    bool fortran = false;
    int ndim = 0;
    int64_t shape[QP_MAX_DIMS];
    struct hdr h = {(const char *)b + hstart, (const char *)b + hstart,
                    (const char *)b + hstart + hlen, what, err};
    enum qp_status st = parse_header(&h, descr, sizeof descr, &fortran, &ndim,
                                     shape);
    if (st)
        return st;
    char order = descr[0];
    const char *code = descr + 1;
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': npy descr '%s'", what, descr);
    enum qp_dtype dtype = QP_DTYPE_COUNT;
    for (size_t i = 0; i < sizeof descr_table / sizeof descr_table[0]; i++)
        if (!strcmp(code, descr_table[i].code))
            dtype = descr_table[i].dtype;
    if (dtype == QP_DTYPE_COUNT)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "'%s': npy descr '%s' is not a supported dtype", what,
                       descr);
    size_t nbytes, off = hstart + hlen;
    st = qp_shape_check(what, dtype, ndim, shape, &nbytes, err);
    if (st)
        return st;
    if (nbytes > len - off)
        return qp_fail(err, QP_E_FORMAT,
                       "'%s': npy data needs %zu bytes, file has %zu after the "
                       "header", what, nbytes, len - off);
    if (nbytes < len - off)
        return qp_fail(err, QP_E_FORMAT,
                       "'%s': %zu trailing bytes after the npy data", what,
                       len - off - nbytes);
    if (header_only)
        return qp_tensor_new_desc(name, dtype, ndim, shape, out, err);

    size_t es = qp_dtype_traits(dtype)->bits / 8;
    const unsigned char *data = b + off;
    bool swap = order == '>' && es > 1;
    bool aligned = ((uintptr_t)data % es) == 0;
    if (!swap && !fortran && aligned && map)
        return qp_tensor_wrap(name, dtype, ndim, shape, data, nbytes, map, out,
                              err);
    int64_t fshape[QP_MAX_DIMS];
    for (int i = 0; i < ndim; i++) /* Fortran data is C data of reversed dims */
        fshape[i] = fortran ? shape[ndim - 1 - i] : shape[i];
    struct qp_tensor *t;
    st = qp_tensor_new(name, dtype, ndim, fshape, &t, err);
    if (st)
        return st;
    if (nbytes)
        memcpy(t->data, data, nbytes);
    if (swap)
        byteswap(t->data, nbytes / es, es);
    if (fortran && ndim > 1) {
        int perm[QP_MAX_DIMS];
        for (int i = 0; i < ndim; i++)
            perm[i] = ndim - 1 - i;
        struct qp_tensor *c;
        st = qp_tensor_permute(t, perm, &c, err);
        qp_tensor_free(t);
        if (st)
            return st;
        t = c;
    }
    *out = t;
    return QP_OK;
}

static char *base_name_without(const char *path, const char *ext)
{
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    size_t n = strlen(s), e = strlen(ext);
    if (n > e && !strcmp(s + n - e, ext))
        n -= e;
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

enum qp_status qp_fmt_npy_load(const char *path, const char *name,
                               bool header_only, struct qp_tensor **out,
                               struct qp_error *err)
{
    struct qp_mmap *m;
    enum qp_status st = qp_mmap_open(path, &m, err);
    if (st)
        return st;
    char *own = name ? NULL : base_name_without(path, ".npy");
    if (!name && !own) {
        qp_mmap_unref(m);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    st = qp_fmt_npy_parse(path, m->data, m->size, name ? name : own, m,
                          header_only, out, err);
    free(own);
    qp_mmap_unref(m);
    return st;
}

enum qp_status qp_fmt_npy_write(FILE *fp, const struct qp_tensor *t,
                                struct qp_error *err)
{
    const char *descr = qp_fmt_npy_descr(t->dtype);
    if (!descr)
        return qp_fail(err, QP_E_UNSUPPORTED,
                       "tensor '%s': numpy has no %s dtype", t->name,
                       qp_dtype_name(t->dtype));
    char dict[64 + 24 * QP_MAX_DIMS];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s",
                      (long long)t->shape[i], i + 1 < t->ndim ? " " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* pad with spaces and a final newline so data starts at a multiple of 64 */
    size_t pre = 10;
    size_t total = (pre + (size_t)n + 1 + 63) / 64 * 64;
    size_t hlen = total - pre;
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                              (unsigned char)(hlen & 0xff),
                              (unsigned char)(hlen >> 8)};
    char pad[128];
    size_t npad = hlen - (size_t)n - 1;
    memset(pad, ' ', sizeof pad);
    if (fwrite(head, 1, sizeof head, fp) != sizeof head ||
        fwrite(dict, 1, (size_t)n, fp) != (size_t)n ||
        fwrite(pad, 1, npad, fp) != npad || fputc('\n', fp) == EOF ||
        (t->nbytes && fwrite(t->data, 1, t->nbytes, fp) != t->nbytes))
        return qp_fail(err, QP_E_IO, "tensor '%s': write failed: %s", t->name,
                       strerror(errno));
    return QP_OK;
}

enum qp_status qp_fmt_npy_save(const char *path, const struct qp_tensor *t,
                               struct qp_error *err)
{
    struct qp_outfile *of;
    enum qp_status st = qp_outfile_open(path, &of, err);
    if (st)
        return st;
    st = qp_fmt_npy_write(of->fp, t, err);
    if (st) {
        qp_outfile_abort(of);
        return qp_error_prefix(err, "'%s': ", path);
    }
    return qp_outfile_commit(of, err);
}
