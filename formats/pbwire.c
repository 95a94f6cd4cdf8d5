#include "formats/pbwire.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

#define RAW_DATA_FIELD 9 /* TensorProto.raw_data */
#define MARKER_LEN 4

/* Growable output buffer plus the spans found so far. */
struct rw {
    const char *what, *kind;
    const uint8_t *base; /* start of the original buffer */
    uint8_t *out;
    size_t n, cap;
    struct qp_pb_span *spans;
    size_t n_spans, cap_spans;
    struct qp_error *err;
};

static enum qp_status nomem(struct rw *w)
{
    return qp_fail(w->err, QP_E_NOMEM, "'%s': out of memory", w->what);
}

static enum qp_status bad(struct rw *w, const uint8_t *at, const char *msg)
{
    return qp_fail(w->err, QP_E_FORMAT,
                   "'%s': not a valid %s protobuf: %s at byte %zu", w->what,
                   w->kind, msg, (size_t)(at - w->base));
}

static enum qp_status reserve(struct rw *w, size_t more)
{
    size_t need;
    if (__builtin_add_overflow(w->n, more, &need))
        return nomem(w);
    if (need <= w->cap)
        return QP_OK;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need)
        if (__builtin_mul_overflow(cap, 2, &cap))
            return nomem(w);
    uint8_t *p = realloc(w->out, cap);
    if (!p)
        return nomem(w);
    w->out = p;
    w->cap = cap;
    return QP_OK;
}

static enum qp_status emit(struct rw *w, const void *p, size_t len)
{
    enum qp_status st = reserve(w, len);
    if (!st && len) {
        memcpy(w->out + w->n, p, len);
        w->n += len;
    }
    return st;
}

/* Reads a varint at *p (before end); false when truncated or longer than
 * 10 bytes. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < 10 && *p < end; i++) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* A 5-byte varint (padded with continuation bits), so a length can be
 * patched in after the bytes it counts were written. */
static void put_varint5(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 7)
        p[i] = (uint8_t)((v & 0x7f) | 0x80);
    p[4] = (uint8_t)(v & 0x7f);
}

static enum qp_status add_span(struct rw *w, size_t off, size_t len)
{
    if (w->n_spans == w->cap_spans) {
        size_t cap = w->cap_spans ? 2 * w->cap_spans : 16;
        struct qp_pb_span *s = realloc(w->spans, cap * sizeof *s);
        if (!s)
            return nomem(w);
        w->spans = s;
        w->cap_spans = cap;
    }
    if (w->n_spans >= UINT32_MAX)
        return qp_fail(w->err, QP_E_UNSUPPORTED, "'%s': too many tensors",
                       w->what);
    w->spans[w->n_spans++] = (struct qp_pb_span){off, len};
    return QP_OK;
}

/* Copies the message p[0..end) of type desc into w, rewriting as described
 * in the header. */
static enum qp_status walk(struct rw *w, const uint8_t *p, const uint8_t *end,
                           const ProtobufCMessageDescriptor *desc, int depth)
{
    if (depth > QP_PB_MAX_DEPTH)
        return qp_fail(w->err, QP_E_UNSUPPORTED,
                       "'%s': %s nests messages more than %d levels deep",
                       w->what, w->kind, QP_PB_MAX_DEPTH);
    while (p < end) {
        const uint8_t *field = p;
        uint64_t tag, v;
        if (!read_varint(&p, end, &tag))
            return bad(w, field, "truncated field tag");
        uint64_t number = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (number == 0 || number > 0x1fffffff)
            return bad(w, field, "invalid field number");
        if (wt == 0) {
            if (!read_varint(&p, end, &v))
                return bad(w, field, "truncated varint");
        } else if (wt == 1 || wt == 5) {
            size_t n = wt == 1 ? 8 : 4;
            if ((size_t)(end - p) < n)
                return bad(w, field, "truncated fixed-size field");
            p += n;
        } else if (wt == 2) {
            const ProtobufCFieldDescriptor *fd =
                protobuf_c_message_descriptor_get_field(desc, (unsigned)number);
            const uint8_t *lp = p;
            if (!read_varint(&p, end, &v))
                return bad(w, lp, "truncated length");
            if (v > (uint64_t)(end - p))
                return bad(w, lp, "field length beyond the end of its message");
            const uint8_t *body = p, *body_end = p + v;
            p = body_end;
            if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
                enum qp_status st = emit(w, field, (size_t)(lp - field));
                if (!st)
                    st = reserve(w, 5);
                if (st)
                    return st;
                size_t at = w->n;
                w->n += 5;
                st = walk(w, body, body_end, fd->descriptor, depth + 1);
                if (st)
                    return st;
                size_t len = w->n - at - 5;
                if (len > INT_MAX)
                    return qp_fail(w->err, QP_E_UNSUPPORTED,
                                   "'%s': a %s message exceeds 2 GiB without "
                                   "its raw data", w->what, w->kind);
                put_varint5(w->out + at, (uint32_t)len);
                continue;
            }
            if (desc == &onnx__tensor_proto__descriptor &&
                number == RAW_DATA_FIELD) {
                uint8_t m[2 + MARKER_LEN] = {RAW_DATA_FIELD << 3 | 2, MARKER_LEN};
                uint32_t idx = (uint32_t)w->n_spans;
                for (int i = 0; i < MARKER_LEN; i++)
                    m[2 + i] = (uint8_t)(idx >> (8 * i));
                enum qp_status st =
                    add_span(w, (size_t)(body - w->base), (size_t)v);
                if (!st)
                    st = emit(w, m, sizeof m);
                if (st)
                    return st;
                continue;
            }
        } else {
            return bad(w, field, wt == 3 || wt == 4 ? "groups are not supported"
                                                    : "invalid wire type");
        }
        enum qp_status st = emit(w, field, (size_t)(p - field));
        if (st)
            return st;
    }
    return QP_OK;
}

enum qp_status qp_pb_unpack(const char *what, const char *kind,
                            const uint8_t *data, size_t len,
                            const ProtobufCMessageDescriptor *desc,
                            struct qp_pb_msg *m, struct qp_error *err)
{
    memset(m, 0, sizeof *m);
    struct rw w = {.what = what, .kind = kind, .base = data, .err = err};
    enum qp_status st = walk(&w, data, data + len, desc, 0);
    if (!st) {
        /* protobuf-c reads lengths as at most INT_MAX */
        if (w.n > INT_MAX)
            st = qp_fail(err, QP_E_UNSUPPORTED,
                         "'%s': the %s exceeds 2 GiB without its raw data",
                         what, kind);
        else if (!(m->msg = protobuf_c_message_unpack(desc, NULL, w.n,
                                                      w.out ? w.out : data)))
            st = qp_fail(err, QP_E_FORMAT,
                         "'%s': not a valid %s protobuf (a field has the wrong "
                         "type or an invalid value)", what, kind);
    }
    free(w.out);
    if (st) {
        free(w.spans);
        return st;
    }
    m->spans = w.spans;
    m->n_spans = w.n_spans;
    return QP_OK;
}

void qp_pb_msg_release(struct qp_pb_msg *m)
{
    if (m->msg)
        protobuf_c_message_free_unpacked(m->msg, NULL);
    free(m->spans);
    memset(m, 0, sizeof *m);
}

enum qp_status qp_pb_raw_span(const struct qp_pb_msg *m, int has,
                              const ProtobufCBinaryData *bytes,
                              const struct qp_pb_span **span,
                              struct qp_error *err)
{
    *span = NULL;
    if (!has)
        return QP_OK;
    uint32_t idx = 0;
    if (bytes->len == MARKER_LEN)
        for (int i = 0; i < MARKER_LEN; i++)
            idx |= (uint32_t)bytes->data[i] << (8 * i);
    if (bytes->len != MARKER_LEN || idx >= m->n_spans)
        return qp_fail(err, QP_E_FORMAT, "raw_data marker is invalid");
    *span = &m->spans[idx];
    return QP_OK;
}
