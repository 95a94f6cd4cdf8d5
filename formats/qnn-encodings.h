/* formats/qnn-encodings.h: QNN / AIMET quantization encodings JSON.
 *
 * Two shapes are read, each for "activation_encodings" and
 * "param_encodings":
 *   legacy (AIMET, QNN quantization overrides):
 *     {"activation_encodings": {"NAME": [{"bitwidth": 8, "offset": -128,
 *        "scale": 0.0123, "is_symmetric": "False", "dtype": "int", ...}]}}
 *     one object per channel (a single object is accepted too);
 *   AIMET 1.0.0:
 *     {"activation_encodings": [{"name": "NAME", "bw": 8, "dtype": "INT",
 *        "enc_type": "PER_TENSOR", "is_sym": false, "scale": [...],
 *        "offset": [...]}]}.
 * QNN's offset is the negated zero point (real = scale * (q + offset)), so
 * zero_point = -offset. Float encodings, encodings without a scale
 * (min/max only) and per-block types are skipped.
 *
 * Names: the QNN converter turns tensor names into C identifiers (every
 * character outside [A-Za-z0-9_] becomes '_', a leading digit gets a '_'
 * in front), and qnn-net-run names its output files after those. That
 * mangling loses information, so it is applied to the encodings' names and
 * compared, never reversed. */
#ifndef QP_FORMATS_QNN_ENCODINGS_H
#define QP_FORMATS_QNN_ENCODINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct qp_json;

struct qp_qnn_encoding {
    char *name;          /* owned */
    int bitwidth;        /* 1..32 */
    bool symmetric;
    size_t count;        /* 1 per tensor, else one per channel */
    float *scale;        /* [count], owned */
    int32_t *zero_point; /* [count] = -offset, owned */
};

struct qp_qnn_encodings {
    struct qp_qnn_encoding *v;
    size_t n, cap;
    struct qp_qnn_key *keys; /* lookup index, built on first find */
    size_t nkeys;
};

/* True when root looks like an encodings document. */
bool qp_qnn_is_encodings(const struct qp_json *root);

/* Appends the encodings of root to e; `what` names the document in
 * messages. QP_E_FORMAT names the group, tensor and field that is wrong. */
enum qp_status qp_qnn_encodings_parse(const struct qp_json *root,
                                      const char *what,
                                      struct qp_qnn_encodings *e,
                                      struct qp_error *err);

/* The encoding of tensor name: exact match first, then an encoding whose
 * mangled name equals name. NULL when none. */
const struct qp_qnn_encoding *qp_qnn_encodings_find(struct qp_qnn_encodings *e,
                                                    const char *name);

void qp_qnn_encodings_release(struct qp_qnn_encodings *e);

/* Writes the QNN-mangled form of name into out (at most strlen(name) + 2
 * bytes). collapse: a run of other characters becomes one '_'. */
void qp_qnn_mangle(const char *name, bool collapse, char *out);

/* ---- writing (formats/qnn-encodings-write.c) ------------------------------
 *
 * The legacy shape above, version "0.6.1" of AIMET's encoding format
 * specification (AIMET docs, "Encoding Format Specification"): one list
 * of encodings per tensor name (one per channel), each
 *   {"bitwidth": B, "dtype": "int", "is_symmetric": "True"|"False",
 *    "max": M, "min": m, "offset": O, "scale": S}
 * on AIMET's unsigned grid q in [0, 2^B - 1], real = S * (q + O): O is
 * minus the zero point on that grid (a signed symmetric tensor's zero
 * point 0 is 2^(B-1) there, so O = -2^(B-1)), m = O * S and
 * M = (O + 2^B - 1) * S, computed in double from the float scale. A
 * float tensor is {"bitwidth": B, "dtype": "float"}. */

struct qp_qnn_enc_entry {
    const char *name;
    bool param;                /* param_encodings, else activation_encodings */
    bool is_float;             /* dtype "float": bitwidth only */
    int bitwidth;              /* 1..32 */
    bool symmetric;
    size_t count;              /* 1 per tensor, else one per channel */
    const float *scale;        /* [count] */
    const int32_t *zero_point; /* [count], on the unsigned grid */
};

/* Writes entries e[0..n) to path atomically. QP_E_INVAL names an entry
 * that appears twice in its group, has a bitwidth outside 1..32, a scale
 * that is not finite and positive, or a zero point outside its grid. */
enum qp_status qp_qnn_encodings_save(const char *path,
                                     const struct qp_qnn_enc_entry *e, size_t n,
                                     struct qp_error *err);

#endif
