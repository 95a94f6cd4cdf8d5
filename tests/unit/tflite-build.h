/* tests/unit/tflite-build.h: a small forward FlatBuffers writer for the
 * tests' own .tflite files (malformed cases, one-operator models for the
 * oracle, fuzz seeds). Parents are written before their children, so
 * every uoffset points forward, as the format requires. Tables get one
 * 8-byte slot per field (aligned to 8), vectors their elements' alignment.
 * Allocation failures abort the test binary (tests only). */
#ifndef QP_TESTS_TFLITE_BUILD_H
#define QP_TESTS_TFLITE_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct fbb {
    uint8_t *b;
    size_t n, cap;
};

static inline void fbb_grow(struct fbb *f, size_t more)
{
    if (f->n + more <= f->cap)
        return;
    size_t cap = f->cap ? f->cap : 256;
    while (cap < f->n + more)
        cap *= 2;
    uint8_t *b = realloc(f->b, cap);
    if (!b)
        abort();
    memset(b + f->cap, 0, cap - f->cap);
    f->b = b;
    f->cap = cap;
}

static inline void fbb_put(struct fbb *f, size_t pos, const void *p, size_t n)
{
    memcpy(f->b + pos, p, n);
}

static inline void fbb_put32(struct fbb *f, size_t pos, uint32_t v)
{
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                     (uint8_t)(v >> 24)};
    fbb_put(f, pos, le, 4);
}

/* Pads with zeros until (n + off) % a == 0; returns n. */
static inline size_t fbb_pad(struct fbb *f, size_t a, size_t off)
{
    while ((f->n + off) % a) {
        fbb_grow(f, 1);
        f->b[f->n++] = 0;
    }
    return f->n;
}

static inline size_t fbb_raw(struct fbb *f, const void *p, size_t n)
{
    fbb_grow(f, n);
    size_t at = f->n;
    if (p)
        memcpy(f->b + at, p, n);
    f->n += n;
    return at;
}

/* The file header: root offset (patched by fbb_root) and identifier. */
static inline void fbb_begin(struct fbb *f, const char *ident)
{
    fbb_raw(f, NULL, 4);
    fbb_raw(f, ident, 4);
}

static inline void fbb_root(struct fbb *f, size_t table)
{
    fbb_put32(f, 0, (uint32_t)table);
}

/* A table of nf fields, all absent; returns its position. */
static inline size_t fbb_table(struct fbb *f, int nf)
{
    uint16_t vsz = (uint16_t)(4 + 2 * nf), tsz = (uint16_t)(4 + 8 * nf);
    fbb_pad(f, 2, 0);
    /* the table must follow at n % 8 == 4 */
    size_t lead = (f->n + vsz) % 8;
    size_t pad = lead <= 4 ? 4 - lead : 12 - lead;
    fbb_raw(f, NULL, pad);
    size_t vt = fbb_raw(f, NULL, vsz);
    fbb_put(f, vt, &vsz, 2);
    fbb_put(f, vt + 2, &tsz, 2);
    size_t t = fbb_raw(f, NULL, tsz);
    fbb_put32(f, t, (uint32_t)(t - vt));
    return t;
}

/* Marks field present and returns its slot. */
static inline size_t fbb_slot(struct fbb *f, size_t t, int field)
{
    int32_t so;
    memcpy(&so, f->b + t, 4);
    size_t vt = t - (size_t)so;
    uint16_t off = (uint16_t)(4 + 8 * field);
    fbb_put(f, vt + 4 + 2 * (size_t)field, &off, 2);
    return t + off;
}

static inline void fbb_i32(struct fbb *f, size_t t, int field, int32_t v)
{
    fbb_put32(f, fbb_slot(f, t, field), (uint32_t)v);
}

static inline void fbb_u8(struct fbb *f, size_t t, int field, uint8_t v)
{
    fbb_put(f, fbb_slot(f, t, field), &v, 1);
}

static inline void fbb_f32(struct fbb *f, size_t t, int field, float v)
{
    fbb_put(f, fbb_slot(f, t, field), &v, 4);
}

static inline void fbb_u64(struct fbb *f, size_t t, int field, uint64_t v)
{
    fbb_put(f, fbb_slot(f, t, field), &v, 8);
}

/* field -> target (written later than the table). */
static inline void fbb_ref(struct fbb *f, size_t t, int field, size_t target)
{
    size_t s = fbb_slot(f, t, field);
    fbb_put32(f, s, (uint32_t)(target - s));
}

/* A vector of n elements of elem bytes; returns the position of its
 * length word. */
static inline size_t fbb_vec(struct fbb *f, size_t elem, size_t n,
                             const void *data)
{
    fbb_pad(f, elem > 4 ? elem : 4, 4);
    size_t at = fbb_raw(f, NULL, 4);
    fbb_put32(f, at, (uint32_t)n);
    fbb_raw(f, data, elem * n);
    return at;
}

static inline size_t fbb_str(struct fbb *f, const char *s)
{
    size_t at = fbb_vec(f, 1, strlen(s), s);
    fbb_raw(f, "", 1);
    return at;
}

/* Element i of a vector of offsets (at vec) -> target. */
static inline void fbb_vec_ref(struct fbb *f, size_t vec, size_t i,
                               size_t target)
{
    size_t s = vec + 4 + 4 * i;
    fbb_put32(f, s, (uint32_t)(target - s));
}

/* ---- TFLite models ----------------------------------------------------- */

struct tb_tensor {
    const char *name;
    int type;                 /* TensorType */
    int ndim;
    int32_t shape[9];
    uint32_t buffer;
    int nq;                   /* scales; 0: no quantization */
    float scale[8];
    int64_t zp[8];
    int nzp;                  /* -1: as nq */
    int32_t qdim;
};

struct tb_op {
    int32_t opcode;
    int n_in, n_out;
    int32_t in[6], out[2];
    uint8_t opt_type;         /* BuiltinOptions type, 0: none */
    int n_opt;                /* option fields set in opt_i32 (as int32) */
    int32_t opt_i32[8];
    int8_t opt_kind[8];       /* per field: 0 int32, 1 byte, 2 float */
};

struct tb_model {
    int n_tensors, n_ops, n_opcodes, n_buffers, n_inputs, n_outputs;
    struct tb_tensor t[16];
    struct tb_op op[8];
    int32_t opcode[8];
    const uint8_t *buf[16];
    size_t buf_len[16];
    uint64_t buf_offset[16];  /* > 1: data after the FlatBuffer (len bytes) */
    int32_t inputs[4], outputs[4];
    const char *ident;        /* NULL: "TFL3" */
    uint32_t version;         /* 0: 3 */
    /* positions recorded while writing, for tests that damage them */
    size_t pos_tensors_vec, pos_name[16], pos_shape_vec[16];
};

/* Writes m; returns the bytes (malloc'd) and their length. */
static inline uint8_t *tb_write(struct tb_model *m, size_t *len)
{
    struct fbb f = {0};
    fbb_begin(&f, m->ident ? m->ident : "TFL3");
    size_t root = fbb_table(&f, 8);
    fbb_root(&f, root);
    fbb_i32(&f, root, 0, (int32_t)(m->version ? m->version : 3));
    size_t ocv = fbb_vec(&f, 4, (size_t)m->n_opcodes, NULL);
    fbb_ref(&f, root, 1, ocv);
    for (int i = 0; i < m->n_opcodes; i++) {
        size_t oc = fbb_table(&f, 4);
        fbb_vec_ref(&f, ocv, (size_t)i, oc);
        fbb_u8(&f, oc, 0, (uint8_t)(m->opcode[i] < 127 ? m->opcode[i] : 127));
        fbb_i32(&f, oc, 2, 1);
        fbb_i32(&f, oc, 3, m->opcode[i]);
    }
    size_t sgv = fbb_vec(&f, 4, 1, NULL);
    fbb_ref(&f, root, 2, sgv);
    size_t sg = fbb_table(&f, 5);
    fbb_vec_ref(&f, sgv, 0, sg);
    size_t tv = fbb_vec(&f, 4, (size_t)m->n_tensors, NULL);
    m->pos_tensors_vec = tv;
    fbb_ref(&f, sg, 0, tv);
    fbb_ref(&f, sg, 1, fbb_vec(&f, 4, (size_t)m->n_inputs, m->inputs));
    fbb_ref(&f, sg, 2, fbb_vec(&f, 4, (size_t)m->n_outputs, m->outputs));
    size_t opv = fbb_vec(&f, 4, (size_t)m->n_ops, NULL);
    fbb_ref(&f, sg, 3, opv);
    for (int i = 0; i < m->n_tensors; i++) {
        const struct tb_tensor *t = &m->t[i];
        size_t tt = fbb_table(&f, 8);
        fbb_vec_ref(&f, tv, (size_t)i, tt);
        m->pos_shape_vec[i] = fbb_vec(&f, 4, (size_t)t->ndim, t->shape);
        fbb_ref(&f, tt, 0, m->pos_shape_vec[i]);
        fbb_u8(&f, tt, 1, (uint8_t)t->type);
        fbb_i32(&f, tt, 2, (int32_t)t->buffer);
        m->pos_name[i] = fbb_str(&f, t->name);
        fbb_ref(&f, tt, 3, m->pos_name[i]);
        if (t->nq) {
            size_t q = fbb_table(&f, 7);
            fbb_ref(&f, tt, 4, q);
            fbb_ref(&f, q, 2, fbb_vec(&f, 4, (size_t)t->nq, t->scale));
            fbb_ref(&f, q, 3, fbb_vec(&f, 8, (size_t)(t->nzp < 0 ? t->nq : t->nzp),
                                      t->zp));
            fbb_i32(&f, q, 6, t->qdim);
        }
    }
    for (int i = 0; i < m->n_ops; i++) {
        const struct tb_op *o = &m->op[i];
        size_t ot = fbb_table(&f, 5);
        fbb_vec_ref(&f, opv, (size_t)i, ot);
        fbb_i32(&f, ot, 0, o->opcode);
        fbb_ref(&f, ot, 1, fbb_vec(&f, 4, (size_t)o->n_in, o->in));
        fbb_ref(&f, ot, 2, fbb_vec(&f, 4, (size_t)o->n_out, o->out));
        if (o->opt_type) {
            fbb_u8(&f, ot, 3, o->opt_type);
            size_t opt = fbb_table(&f, o->n_opt ? o->n_opt : 1);
            fbb_ref(&f, ot, 4, opt);
            for (int k = 0; k < o->n_opt; k++) {
                if (o->opt_kind[k] == 1)
                    fbb_u8(&f, opt, k, (uint8_t)o->opt_i32[k]);
                else if (o->opt_kind[k] == 2) {
                    float v;
                    memcpy(&v, &o->opt_i32[k], sizeof v);
                    fbb_f32(&f, opt, k, v);
                }
                else
                    fbb_i32(&f, opt, k, o->opt_i32[k]);
            }
        }
    }
    size_t bv = fbb_vec(&f, 4, (size_t)m->n_buffers, NULL);
    fbb_ref(&f, root, 4, bv);
    for (int i = 0; i < m->n_buffers; i++) {
        size_t bt = fbb_table(&f, 3);
        fbb_vec_ref(&f, bv, (size_t)i, bt);
        if (m->buf_offset[i] > 1) {
            fbb_u64(&f, bt, 1, m->buf_offset[i]);
            fbb_u64(&f, bt, 2, m->buf_len[i]);
        } else if (m->buf_len[i]) {
            fbb_pad(&f, 16, 4);
            fbb_ref(&f, bt, 0, fbb_vec(&f, 1, m->buf_len[i], m->buf[i]));
        }
    }
    *len = f.n;
    return f.b;
}

#endif
