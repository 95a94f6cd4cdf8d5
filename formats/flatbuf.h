/* formats/flatbuf.h: verified reading of FlatBuffers binaries (the
 * container of TFLite models; formats/tflite.c reads their schema).
 *
 * Nothing is dereferenced before it is checked: a table's soffset, its
 * vtable (size, alignment, inside the buffer), every field's slot inside
 * the table's declared size, every uoffset's target, every vector's
 * length (elements * size inside the buffer, no overflow) and every
 * string's NUL terminator. Tables are reached with a nesting depth that
 * must stay below QP_FB_MAX_DEPTH (a schema reader never recurses, so a
 * cycle of offsets cannot loop it; the depth bounds what a reader
 * follows). Scalars are read little-endian with memcpy (no alignment is
 * assumed). Errors are QP_E_FORMAT with a message giving byte positions;
 * the caller prefixes the file name and what it was reading. */
#ifndef QP_FORMATS_FLATBUF_H
#define QP_FORMATS_FLATBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define QP_FB_MAX_DEPTH 64

/* A buffer being read; borrowed. */
struct qp_fb {
    const uint8_t *buf;
    size_t size;
};

/* A verified table. */
struct qp_fb_table {
    size_t pos;        /* the table's first byte (its soffset) */
    size_t vt;         /* its vtable */
    uint16_t vt_size;  /* bytes of the vtable */
    uint16_t tab_size; /* bytes of the table's inline data */
    int depth;         /* 0 for the root */
};

/* A verified vector (or string): n elements of elem bytes at pos. An
 * absent field gives n == 0 and present == false. */
struct qp_fb_vec {
    size_t pos;        /* first element */
    size_t n;
    size_t elem;
    bool present;
};

/* The root table; checks the buffer holds the root offset and, when
 * ident is non-NULL, the 4-byte file identifier at bytes 4..8. */
enum qp_status qp_fb_root(const struct qp_fb *fb, const char *ident,
                          struct qp_fb_table *out, struct qp_error *err);

/* Whether field (0-based, in schema order; a union takes two: its type,
 * then its value) is present in t. */
bool qp_fb_has(const struct qp_fb *fb, const struct qp_fb_table *t, int field);

/* Scalar fields: the default when absent; the field's slot must lie inside
 * the table. */
enum qp_status qp_fb_u8(const struct qp_fb *fb, const struct qp_fb_table *t,
                        int field, uint8_t def, uint8_t *out,
                        struct qp_error *err);
enum qp_status qp_fb_i8(const struct qp_fb *fb, const struct qp_fb_table *t,
                        int field, int8_t def, int8_t *out,
                        struct qp_error *err);
enum qp_status qp_fb_i32(const struct qp_fb *fb, const struct qp_fb_table *t,
                         int field, int32_t def, int32_t *out,
                         struct qp_error *err);
enum qp_status qp_fb_u32(const struct qp_fb *fb, const struct qp_fb_table *t,
                         int field, uint32_t def, uint32_t *out,
                         struct qp_error *err);
enum qp_status qp_fb_u64(const struct qp_fb *fb, const struct qp_fb_table *t,
                         int field, uint64_t def, uint64_t *out,
                         struct qp_error *err);
enum qp_status qp_fb_f32(const struct qp_fb *fb, const struct qp_fb_table *t,
                         int field, float def, float *out,
                         struct qp_error *err);

/* A sub-table field; *present false (out untouched) when absent. The
 * child's depth is t's + 1 and must stay below QP_FB_MAX_DEPTH. */
enum qp_status qp_fb_table(const struct qp_fb *fb, const struct qp_fb_table *t,
                           int field, bool *present, struct qp_fb_table *out,
                           struct qp_error *err);

/* A vector field of elem-byte scalars or of offsets (elem 4 for tables and
 * strings); n * elem must fit the buffer after the length word. */
enum qp_status qp_fb_vector(const struct qp_fb *fb, const struct qp_fb_table *t,
                            int field, size_t elem, struct qp_fb_vec *out,
                            struct qp_error *err);

/* A string field: *s points into the buffer (NUL-terminated there), *len
 * its length; NULL when absent. */
enum qp_status qp_fb_string(const struct qp_fb *fb, const struct qp_fb_table *t,
                            int field, const char **s, size_t *len,
                            struct qp_error *err);

/* Element i (< v->n) of a vector of tables, as a table at depth + 1. */
enum qp_status qp_fb_vec_table(const struct qp_fb *fb,
                               const struct qp_fb_vec *v, size_t i, int depth,
                               struct qp_fb_table *out, struct qp_error *err);

/* Element i (< v->n) of a vector of strings. */
enum qp_status qp_fb_vec_string(const struct qp_fb *fb,
                                const struct qp_fb_vec *v, size_t i,
                                const char **s, size_t *len,
                                struct qp_error *err);

/* Elements of verified scalar vectors (i < v->n; elem as the getter). */
int32_t qp_fb_vec_i32(const struct qp_fb *fb, const struct qp_fb_vec *v,
                      size_t i);
int64_t qp_fb_vec_i64(const struct qp_fb *fb, const struct qp_fb_vec *v,
                      size_t i);
float qp_fb_vec_f32(const struct qp_fb *fb, const struct qp_fb_vec *v,
                    size_t i);

/* Little-endian loads at a position the caller has checked. */
uint16_t qp_fb_le16(const uint8_t *p);
uint32_t qp_fb_le32(const uint8_t *p);
uint64_t qp_fb_le64(const uint8_t *p);

/* The byte position of field's slot in t (0 when absent), for editors
 * that patch a verified buffer in place (formats/tflite-edit.c). */
size_t qp_fb_slot(const struct qp_fb *fb, const struct qp_fb_table *t,
                  int field);

#endif
