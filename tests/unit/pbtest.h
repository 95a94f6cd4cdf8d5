/* tests/unit/pbtest.h: a minimal protobuf wire-format encoder and reader
 * for the ONNX tests, written independently of protobuf-c and of
 * formats/pbwire.c: tests craft messages byte by byte with the encoder and
 * check the parsers against what the reader finds in real files.
 *
 * Field numbers come from onnx.proto (ModelProto.graph = 7, ...). */
#ifndef QP_TESTS_PBTEST_H
#define QP_TESTS_PBTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- encoder ------------------------------------------------------------ */

struct pbe {
    uint8_t *p;
    size_t n, cap;
};

static inline void pbe_raw(struct pbe *e, const void *d, size_t n)
{
    if (e->n + n > e->cap) {
        size_t cap = e->cap ? e->cap : 64;
        while (cap < e->n + n)
            cap *= 2;
        e->p = realloc(e->p, cap);
        e->cap = cap;
    }
    if (n)
        memcpy(e->p + e->n, d, n);
    e->n += n;
}

static inline void pbe_varint(struct pbe *e, uint64_t v)
{
    uint8_t b[10];
    size_t k = 0;
    do {
        b[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            b[k] |= 0x80;
        k++;
    } while (v);
    pbe_raw(e, b, k);
}

static inline void pbe_tag(struct pbe *e, unsigned field, unsigned wt)
{
    pbe_varint(e, (uint64_t)field << 3 | wt);
}

static inline void pbe_int(struct pbe *e, unsigned field, int64_t v)
{
    pbe_tag(e, field, 0);
    pbe_varint(e, (uint64_t)v);
}

static inline void pbe_bytes(struct pbe *e, unsigned field, const void *d,
                             size_t n)
{
    pbe_tag(e, field, 2);
    pbe_varint(e, n);
    pbe_raw(e, d, n);
}

static inline void pbe_str(struct pbe *e, unsigned field, const char *s)
{
    pbe_bytes(e, field, s, strlen(s));
}

/* Embeds sub as field and frees it. */
static inline void pbe_msg(struct pbe *e, unsigned field, struct pbe *sub)
{
    pbe_bytes(e, field, sub->p, sub->n);
    free(sub->p);
    *sub = (struct pbe){0};
}

static inline void pbe_f32(struct pbe *e, unsigned field, float f)
{
    pbe_tag(e, field, 5);
    pbe_raw(e, &f, 4);
}

/* Packed repeated fields. */
static inline void pbe_packed_varint(struct pbe *e, unsigned field,
                                     const int64_t *v, size_t n)
{
    struct pbe b = {0};
    for (size_t i = 0; i < n; i++)
        pbe_varint(&b, (uint64_t)v[i]);
    pbe_msg(e, field, &b);
}

static inline void pbe_packed_fixed(struct pbe *e, unsigned field,
                                    const void *v, size_t n, size_t size)
{
    pbe_bytes(e, field, v, n * size);
}

/* A TensorProto header: dims (non-packed, as protobuf-c writes them),
 * data_type and name. */
static inline void pbe_tensor_head(struct pbe *e, const int64_t *dims,
                                   int ndim, int type, const char *name)
{
    for (int i = 0; i < ndim; i++)
        pbe_int(e, 1, dims[i]);
    pbe_int(e, 2, type);
    if (name)
        pbe_str(e, 8, name);
}

/* ---- reader ---------------------------------------------------------------- */

struct pbr {
    const uint8_t *p, *end;
};

struct pbf {
    unsigned field, wt;
    uint64_t v;      /* wire types 0, 1, 5 */
    struct pbr body; /* wire type 2 */
};

static inline bool pbr_varint(struct pbr *r, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 70 && r->p < r->end; s += 7) {
        uint8_t b = *r->p++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The next field; false at the end or on malformed input (*ok = false). */
static inline bool pbr_next(struct pbr *r, struct pbf *f, bool *ok)
{
    if (r->p >= r->end)
        return false;
    uint64_t tag;
    *ok = false;
    if (!pbr_varint(r, &tag))
        return false;
    f->field = (unsigned)(tag >> 3);
    f->wt = (unsigned)(tag & 7);
    f->v = 0;
    if (f->wt == 0) {
        if (!pbr_varint(r, &f->v))
            return false;
    } else if (f->wt == 1 || f->wt == 5) {
        size_t n = f->wt == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return false;
        memcpy(&f->v, r->p, n);
        r->p += n;
    } else if (f->wt == 2) {
        uint64_t len;
        if (!pbr_varint(r, &len) || len > (uint64_t)(r->end - r->p))
            return false;
        f->body = (struct pbr){r->p, r->p + len};
        r->p += len;
    } else {
        return false;
    }
    *ok = true;
    return true;
}

/* Copies a length-delimited body as a NUL-terminated string into buf. */
static inline void pbr_str(const struct pbr *b, char *buf, size_t size)
{
    size_t n = (size_t)(b->end - b->p);
    if (n >= size)
        n = size - 1;
    memcpy(buf, b->p, n);
    buf[n] = '\0';
}

#endif
