/* formats/flatbuf.c: verified FlatBuffers access (formats/flatbuf.h).
 *
 * Layout reminders (FlatBuffers binary format): the buffer starts with a
 * uoffset (u32) to the root table, then an optional 4-byte identifier. A
 * table starts with an soffset (i32): its vtable is at table - soffset.
 * A vtable is u16 vtable_size, u16 table_size, then one u16 per field:
 * the field's offset from the table start, 0 when absent. Offsets to
 * tables, vectors and strings are u32 uoffsets relative to where they are
 * stored. A vector is a u32 length then its elements; a string is a
 * vector of bytes followed by a NUL. */
#include "formats/flatbuf.h"

#include <string.h>

#include "core/size.h"

uint16_t qp_fb_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

uint32_t qp_fb_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

uint64_t qp_fb_le64(const uint8_t *p)
{
    return (uint64_t)qp_fb_le32(p) | (uint64_t)qp_fb_le32(p + 4) << 32;
}

/* [pos, pos + n) inside the buffer */
static bool inside(const struct qp_fb *fb, size_t pos, size_t n)
{
    return pos <= fb->size && n <= fb->size - pos;
}

static enum qp_status table_at(const struct qp_fb *fb, size_t pos, int depth,
                               struct qp_fb_table *out, struct qp_error *err)
{
    if (depth >= QP_FB_MAX_DEPTH)
        return qp_fail(err, QP_E_FORMAT, "tables nested deeper than %d "
                       "levels at byte %zu", QP_FB_MAX_DEPTH, pos);
    if (pos % 4 || !inside(fb, pos, 4))
        return qp_fail(err, QP_E_FORMAT, "table offset %zu is %s (file of "
                       "%zu bytes)", pos, pos % 4 ? "misaligned" : "past the end",
                       fb->size);
    int64_t vt = (int64_t)pos - (int32_t)qp_fb_le32(fb->buf + pos);
    if (vt < 0 || vt % 2 || !inside(fb, (size_t)vt, 4))
        return qp_fail(err, QP_E_FORMAT, "the table at byte %zu has its "
                       "vtable at %lld, outside the file (%zu bytes)", pos,
                       (long long)vt, fb->size);
    uint16_t vsz = qp_fb_le16(fb->buf + vt), tsz = qp_fb_le16(fb->buf + vt + 2);
    if (vsz < 4 || vsz % 2 || !inside(fb, (size_t)vt, vsz))
        return qp_fail(err, QP_E_FORMAT, "the vtable at byte %lld declares %u "
                       "bytes (file of %zu bytes)", (long long)vt, vsz, fb->size);
    if (tsz < 4 || !inside(fb, pos, tsz))
        return qp_fail(err, QP_E_FORMAT, "the table at byte %zu declares %u "
                       "bytes, past the end of the file (%zu bytes)", pos, tsz,
                       fb->size);
    *out = (struct qp_fb_table){pos, (size_t)vt, vsz, tsz, depth};
    return QP_OK;
}

enum qp_status qp_fb_root(const struct qp_fb *fb, const char *ident,
                          struct qp_fb_table *out, struct qp_error *err)
{
    size_t need = ident ? 8 : 4;
    if (fb->size < need)
        return qp_fail(err, QP_E_FORMAT, "%zu bytes is too short for a "
                       "FlatBuffer (at least %zu)", fb->size, need);
    if (ident && memcmp(fb->buf + 4, ident, 4)) {
        char got[5];
        for (int i = 0; i < 4; i++) {
            unsigned char c = fb->buf[4 + i];
            got[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
        got[4] = '\0';
        return qp_fail(err, QP_E_FORMAT, "file identifier is \"%s\", expected "
                       "\"%s\"", got, ident);
    }
    return table_at(fb, qp_fb_le32(fb->buf), 0, out, err);
}

/* The field's offset inside the table, 0 when absent. */
static size_t field_off(const struct qp_fb *fb, const struct qp_fb_table *t,
                        int field)
{
    size_t at = 4 + 2 * (size_t)field;
    if (field < 0 || at + 2 > t->vt_size)
        return 0;
    return qp_fb_le16(fb->buf + t->vt + at);
}

bool qp_fb_has(const struct qp_fb *fb, const struct qp_fb_table *t, int field)
{
    return field_off(fb, t, field) != 0;
}

size_t qp_fb_slot(const struct qp_fb *fb, const struct qp_fb_table *t,
                  int field)
{
    size_t off = field_off(fb, t, field);
    return off ? t->pos + off : 0;
}

/* The position of a present scalar's n-byte slot, or 0 when absent. */
static enum qp_status slot(const struct qp_fb *fb, const struct qp_fb_table *t,
                           int field, size_t n, size_t *pos,
                           struct qp_error *err)
{
    size_t off = field_off(fb, t, field);
    *pos = 0;
    if (!off)
        return QP_OK;
    if (off < 4 || off + n > t->tab_size)
        return qp_fail(err, QP_E_FORMAT, "field %d of the table at byte %zu "
                       "lies outside the table (offset %zu, %u bytes)", field,
                       t->pos, off, t->tab_size);
    *pos = t->pos + off;
    return QP_OK;
}

#define SCALAR_GETTER(fn, type, n, load)                                       \
    enum qp_status fn(const struct qp_fb *fb, const struct qp_fb_table *t,     \
                      int field, type def, type *out, struct qp_error *err)    \
    {                                                                          \
        size_t p;                                                              \
        enum qp_status st = slot(fb, t, field, n, &p, err);                    \
        if (st)                                                                \
            return st;                                                         \
        *out = p ? (type)(load) : def;                                         \
        return QP_OK;                                                          \
    }

SCALAR_GETTER(qp_fb_u8, uint8_t, 1, fb->buf[p])
SCALAR_GETTER(qp_fb_i8, int8_t, 1, (int8_t)fb->buf[p])
SCALAR_GETTER(qp_fb_i32, int32_t, 4, (int32_t)qp_fb_le32(fb->buf + p))
SCALAR_GETTER(qp_fb_u32, uint32_t, 4, qp_fb_le32(fb->buf + p))
SCALAR_GETTER(qp_fb_u64, uint64_t, 8, qp_fb_le64(fb->buf + p))

enum qp_status qp_fb_f32(const struct qp_fb *fb, const struct qp_fb_table *t,
                         int field, float def, float *out, struct qp_error *err)
{
    uint32_t bits;
    enum qp_status st = qp_fb_u32(fb, t, field, 0, &bits, err);
    if (st)
        return st;
    if (!qp_fb_has(fb, t, field)) {
        *out = def;
        return QP_OK;
    }
    memcpy(out, &bits, sizeof *out);
    return QP_OK;
}

/* The target of the uoffset stored at pos (checked inside the buffer). */
static enum qp_status follow(const struct qp_fb *fb, size_t pos, size_t *target,
                             struct qp_error *err)
{
    if (!inside(fb, pos, 4))
        return qp_fail(err, QP_E_FORMAT, "offset at byte %zu is past the end "
                       "of the file (%zu bytes)", pos, fb->size);
    uint32_t rel = qp_fb_le32(fb->buf + pos);
    if (rel == 0 || rel > fb->size - pos)
        return qp_fail(err, QP_E_FORMAT, "offset %u at byte %zu points %s "
                       "(file of %zu bytes)", rel, pos,
                       rel ? "past the end" : "at itself", fb->size);
    *target = pos + rel;
    return QP_OK;
}

/* The uoffset field's target, 0 when absent. */
static enum qp_status ref(const struct qp_fb *fb, const struct qp_fb_table *t,
                          int field, size_t *target, struct qp_error *err)
{
    size_t p;
    enum qp_status st = slot(fb, t, field, 4, &p, err);
    *target = 0;
    if (st || !p)
        return st;
    return follow(fb, p, target, err);
}

enum qp_status qp_fb_table(const struct qp_fb *fb, const struct qp_fb_table *t,
                           int field, bool *present, struct qp_fb_table *out,
                           struct qp_error *err)
{
    size_t target;
    enum qp_status st = ref(fb, t, field, &target, err);
    *present = false;
    if (st || !target)
        return st;
    *present = true;
    return table_at(fb, target, t->depth + 1, out, err);
}

/* The vector whose length word is at pos. */
static enum qp_status vector_at(const struct qp_fb *fb, size_t pos, size_t elem,
                                struct qp_fb_vec *out, struct qp_error *err)
{
    if (pos % 4 || !inside(fb, pos, 4))
        return qp_fail(err, QP_E_FORMAT, "vector at byte %zu is %s (file of "
                       "%zu bytes)", pos, pos % 4 ? "misaligned" : "past the end",
                       fb->size);
    size_t n = qp_fb_le32(fb->buf + pos), bytes;
    if (qp_size_mul(n, elem, &bytes) || !inside(fb, pos + 4, bytes))
        return qp_fail(err, QP_E_FORMAT, "vector at byte %zu has %zu elements "
                       "of %zu bytes, more than the file holds (%zu bytes)", pos,
                       n, elem, fb->size);
    *out = (struct qp_fb_vec){pos + 4, n, elem, true};
    return QP_OK;
}

enum qp_status qp_fb_vector(const struct qp_fb *fb, const struct qp_fb_table *t,
                            int field, size_t elem, struct qp_fb_vec *out,
                            struct qp_error *err)
{
    size_t target;
    enum qp_status st = ref(fb, t, field, &target, err);
    *out = (struct qp_fb_vec){0, 0, elem, false};
    if (st || !target)
        return st;
    return vector_at(fb, target, elem, out, err);
}

static enum qp_status string_at(const struct qp_fb *fb, size_t pos,
                                const char **s, size_t *len,
                                struct qp_error *err)
{
    struct qp_fb_vec v;
    enum qp_status st = vector_at(fb, pos, 1, &v, err);
    if (st)
        return st;
    if (!inside(fb, v.pos + v.n, 1) || fb->buf[v.pos + v.n] != 0)
        return qp_fail(err, QP_E_FORMAT, "string at byte %zu (%zu bytes) has "
                       "no NUL terminator", pos, v.n);
    if (memchr(fb->buf + v.pos, 0, v.n))
        return qp_fail(err, QP_E_FORMAT, "string at byte %zu holds a NUL byte",
                       pos);
    *s = (const char *)fb->buf + v.pos;
    *len = v.n;
    return QP_OK;
}

enum qp_status qp_fb_string(const struct qp_fb *fb, const struct qp_fb_table *t,
                            int field, const char **s, size_t *len,
                            struct qp_error *err)
{
    size_t target;
    enum qp_status st = ref(fb, t, field, &target, err);
    *s = NULL;
    *len = 0;
    if (st || !target)
        return st;
    return string_at(fb, target, s, len, err);
}

enum qp_status qp_fb_vec_table(const struct qp_fb *fb,
                               const struct qp_fb_vec *v, size_t i, int depth,
                               struct qp_fb_table *out, struct qp_error *err)
{
    size_t target;
    enum qp_status st = follow(fb, v->pos + 4 * i, &target, err);
    return st ? st : table_at(fb, target, depth + 1, out, err);
}

enum qp_status qp_fb_vec_string(const struct qp_fb *fb,
                                const struct qp_fb_vec *v, size_t i,
                                const char **s, size_t *len,
                                struct qp_error *err)
{
    size_t target;
    enum qp_status st = follow(fb, v->pos + 4 * i, &target, err);
    return st ? st : string_at(fb, target, s, len, err);
}

int32_t qp_fb_vec_i32(const struct qp_fb *fb, const struct qp_fb_vec *v,
                      size_t i)
{
    return (int32_t)qp_fb_le32(fb->buf + v->pos + 4 * i);
}

int64_t qp_fb_vec_i64(const struct qp_fb *fb, const struct qp_fb_vec *v,
                      size_t i)
{
    return (int64_t)qp_fb_le64(fb->buf + v->pos + 8 * i);
}

float qp_fb_vec_f32(const struct qp_fb *fb, const struct qp_fb_vec *v,
                    size_t i)
{
    uint32_t bits = qp_fb_le32(fb->buf + v->pos + 4 * i);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
