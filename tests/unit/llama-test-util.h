/* tests/unit/llama-test-util.h: tiny random Llama-family checkpoints for
 * the tests, and a reference forward pass written independently of
 * model/ (plain loops in double precision, following Hugging Face's
 * LlamaForCausalLM / Qwen2ForCausalLM): the values a correct float32
 * forward must reproduce to about 1e-6. */
#ifndef QP_TESTS_LLAMA_TEST_UTIL_H
#define QP_TESTS_LLAMA_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"

struct tl_cfg {
    const char *model_type;  /* "llama" (default), "mistral", "qwen2", ... */
    const char *arch;        /* NULL: the family's */
    int hidden, inter, layers, heads, kv_heads, head_dim, vocab;
    bool tie, bias;          /* bias: q/k/v biases (qwen2's) */
    const char *rope;        /* NULL, "linear" or "llama3" */
    double theta, factor;    /* rope_theta; rope_scaling factor */
    int orig_max;            /* llama3 original_max_position_embeddings */
    int window;              /* mistral sliding_window (0: null) */
    int max_pos;             /* max_position_embeddings (0: 64) */
    enum qp_dtype dtype;     /* F32, F16 or BF16 storage */
    int shards;              /* 0/1: model.safetensors; 2: two shards + index */
    unsigned seed;
};

/* A small default: hidden 32, inter 48, 2 layers, 4 heads / 2 kv heads of
 * 8, vocab 50, untied, F32. */
struct tl_cfg tl_default(void);

/* The weights as float32 values (exactly those stored, after rounding to
 * the storage dtype). */
struct tl_layer {
    float *ln1, *q, *qb, *k, *kb, *v, *vb, *o, *ln2, *gate, *up, *down;
};
struct tl_model {
    struct tl_cfg c;
    float *embed, *lm, *norm; /* lm == embed when tied */
    struct tl_layer *l;
};

/* Writes config.json and the weights into the existing folder dir (names,
 * shapes and layout of a Hugging Face checkpoint); *m (may be NULL) gets the
 * weights for tl_ref_forward (tl_model_free). False on failure. */
bool tl_write_model(const char *dir, const struct tl_cfg *c, struct tl_model *m);
void tl_model_free(struct tl_model *m);

/* (Re)writes only dir/config.json for c. */
bool tl_write_config(const char *dir, const struct tl_cfg *c);

/* The reference forward of one sequence ids[T]: logits [T, vocab] and,
 * when hidden is non-NULL, the residual stream after each block
 * (hidden[l * T * H ...]); both malloc'd by the caller. */
void tl_ref_forward(const struct tl_model *m, const int32_t *ids, int T,
                    double *logits, double *hidden);

/* ||a - b|| / ||b|| over n floats against doubles. */
double tl_rel_l2(const float *a, const double *b, size_t n);

#endif
