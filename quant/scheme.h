/* quant/scheme.h: scheme strings (DESIGN.md §4), parsed and printed.
 *
 *   SCHEME  := WEIGHTS [ '+' ACTS ]
 *   WEIGHTS := 'w' BITS GRAN [ 'z' | 'n' ] [ '@' ALGO ] | GGML
 *   GGML    := 'q8_0' | 'q4_0' | 'q4_1' | 'q5_0' | 'q4_k' | 'q6_k'
 *   GRAN    := 't' | 'c' | 'g' N        per-tensor | per-channel | groups of N
 *   'z'     := asymmetric (zero point, unsigned storage); default symmetric
 *   'n'     := symmetric narrow range (qmin = -qmax, e.g. [-127, 127])
 *   ALGO    := 'rtn' (default) | 'mse' (clipping search) | 'gptq' [ ':' GOPTS ]
 *   GOPTS   := GOPT { ',' GOPT }     each option at most once, any order
 *   GOPT    := 'act'      act-order: columns by decreasing Hessian diagonal
 *            | 'static'   static groups: group parameters fitted on the
 *                         original weights first (needs 'g' N)
 *            | 'mse'      the reference's --mse clipping grid (|e|^2.4)
 *            | 'damp' D   dampening, a fraction of mean(diag H); 0 < D < 1,
 *                         at most 6 decimals (default 0.01)
 *            | 'blk' N    columns per lazy batch, 1..2^30 (default 128)
 *            | 'half'     scales rounded to float16 (nearest even), as GPTQ
 *                         checkpoints store them (analysis/export-gptq.h)
 *   ACTS    := 'a' BITS ( 't' | 'd' ) [ 'z' | 'n' ] [ ':' RANGE ]
 *   RANGE   := 'minmax' (default) | 'ema' | 'pct' P | 'mse' | 'kl'
 *   BITS    := 2..8 | 16;  N := 1..2^30;  0 < P <= 100
 *
 * Alias: '8da4w' [ ':g' N ] is ExecuTorch's 8da4w, w4gN+a8dz (N = 32 when
 * absent): int4 symmetric groups, 8-bit asymmetric dynamic activations
 * (the int mode runs it on kernels/gemm-qd8.h); it prints canonically.
 *
 * GGML names one of ggml's block types (core/ggml-block.h), quantized by
 * ggml's reference code (quant/ggml-quant.h) along the input axis: a whole
 * weight scheme with no granularity, symmetry or algorithm of its own.
 *
 * 'n' and 'ema' extend the DESIGN.md grammar: narrow range is what TFLite
 * uses for int8 weights, and 'ema' names the moving-average min/max
 * observer. A range applies to static ('t') activations only.
 *
 * e.g. w4g128@gptq:act,static,damp0.05 (quant/gptq.h says what they do).
 *
 * The canonical form printed by qp_scheme_format leaves out defaults
 * ("@rtn", ":minmax", "damp0.01", "blk128"), prints GPTQ options in the
 * order above and P, D in their shortest round-tripping form, so
 * format(parse(s)) == s for every canonical s, and parse(format(x)) == x. */
#ifndef QP_QUANT_SCHEME_H
#define QP_QUANT_SCHEME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ggml-block.h"
#include "core/status.h"

/* Only grow; each ends in _COUNT. */
enum qp_gran {
    QP_GRAN_TENSOR = 0, /* 't': one scale */
    QP_GRAN_CHANNEL,    /* 'c': one scale per output channel */
    QP_GRAN_GROUP,      /* 'g' N: groups of N along the input axis */
    QP_GRAN_COUNT
};

enum qp_walgo {
    QP_WALGO_RTN = 0,   /* min/max range, round to nearest */
    QP_WALGO_MSE,       /* MSE-optimal clipping per channel/group, then RTN */
    QP_WALGO_GPTQ,      /* second-order, on calibration inputs (quant/gptq.h) */
    QP_WALGO_COUNT
};

enum qp_arange {
    QP_ARANGE_MINMAX = 0,
    QP_ARANGE_EMA,      /* moving-average min/max */
    QP_ARANGE_PCT,      /* percentile P */
    QP_ARANGE_MSE,      /* MSE-optimal threshold over a histogram */
    QP_ARANGE_KL,       /* KL divergence over a histogram (TensorRT entropy) */
    QP_ARANGE_COUNT
};

/* How values map to integers, shared by weights and activations. */
struct qp_qformat {
    unsigned bits;      /* 2..8 or 16 */
    bool asym;          /* zero point and unsigned storage */
    bool narrow;        /* symmetric only: qmin = -qmax */
};

/* Which quantizer family a weight scheme belongs to. */
enum qp_wfamily {
    QP_WFAMILY_INT = 0, /* 'w' BITS ...: integers with scales (zeroed default) */
    QP_WFAMILY_GGML,    /* a ggml block type */
    QP_WFAMILY_COUNT
};

#define QP_GPTQ_DAMP_DEFAULT 0.01
#define QP_GPTQ_BLOCK_DEFAULT 128

/* Options of a '@gptq' scheme; all zero means the defaults. */
struct qp_gptq_options {
    bool act_order;     /* 'act' */
    bool static_groups; /* 'static' (only with QP_GRAN_GROUP) */
    bool mse;           /* 'mse' */
    double damp;        /* 'damp' D; 0 = QP_GPTQ_DAMP_DEFAULT */
    int64_t block;      /* 'blk' N; 0 = QP_GPTQ_BLOCK_DEFAULT */
    bool half_scales;   /* 'half' */
};

struct qp_wscheme {
    struct qp_qformat f;
    enum qp_gran gran;
    int64_t group;      /* QP_GRAN_GROUP: elements per group, else 0 */
    enum qp_walgo algo;
    /* QP_WFAMILY_GGML: the block type; f, gran and group then describe it
     * roughly for code that does not know the family (nominal bits,
     * asymmetric for q4_1 / q4_k, groups of the block size, @rtn) */
    enum qp_wfamily family;
    enum qp_ggml_type ggml;
    struct qp_gptq_options gptq; /* QP_WALGO_GPTQ only, else all zero */
};

struct qp_ascheme {
    struct qp_qformat f;
    bool dynamic;       /* 'd': per-token at run time; else static per-tensor */
    enum qp_arange range;
    double pct;         /* QP_ARANGE_PCT: percentile in (0, 100] */
};

struct qp_scheme {
    struct qp_wscheme w;
    bool has_acts;
    struct qp_ascheme a;
};

/* Longest scheme string accepted (longer ones are refused). */
#define QP_SCHEME_MAX 64

/* Parses s into *out. On error returns QP_E_INVAL and a message naming the
 * problem, followed by two more lines: the string and a caret under the
 * offending character, e.g.
 *     scheme 'w4g0': group size must be at least 1
 *       w4g0
 *          ^
 * *pos (may be NULL) receives the offending byte offset, or -1 on success. */
enum qp_status qp_scheme_parse(const char *s, struct qp_scheme *out, int *pos,
                               struct qp_error *err);

/* Parses an activation part alone ("a16t", "a8tz:kl"), as it follows '+'
 * in a scheme; errors as qp_scheme_parse's. */
enum qp_status qp_ascheme_parse(const char *s, struct qp_ascheme *out, int *pos,
                                struct qp_error *err);

/* Writes the canonical form of an activation part ("a8t:kl") into buf. */
void qp_ascheme_format(const struct qp_ascheme *a, char *buf, size_t size);

/* Writes the canonical form of s into buf (QP_SCHEME_MAX bytes suffice).
 * s must be valid (as produced by qp_scheme_parse). */
void qp_scheme_format(const struct qp_scheme *s, char *buf, size_t size);

/* True when a and b quantize weights the same way: every field that
 * matters (the ggml type of a ggml scheme, bits, symmetry, granularity,
 * group, algorithm), compared one by one (the struct has padding). A ggml
 * scheme and the integer scheme with the same nominal fields (q4_1 and
 * w4g32z) differ. */
bool qp_wscheme_equal(const struct qp_wscheme *a, const struct qp_wscheme *b);

/* h extended with a hash of the fields qp_wscheme_equal compares: equal
 * schemes hash alike (core/hash.h). */
uint64_t qp_wscheme_hash(uint64_t h, const struct qp_wscheme *ws);

/* Names: "t"/"c"/"g", "rtn"/"mse"/"gptq", "minmax"/"ema"/"pct"/"mse"/"kl". */
const char *qp_gran_name(enum qp_gran g);
const char *qp_walgo_name(enum qp_walgo a);
const char *qp_arange_name(enum qp_arange r);

#endif
