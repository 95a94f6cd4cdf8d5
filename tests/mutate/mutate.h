/* tests/mutate/mutate.h: the CLI mutation test (build/qp-mutate, run by
 * `make test`). Valid files of every format qprobe reads are written by
 * qprobe's own writers (inputs.c), mutated deterministically
 * (mutations.c), and fed to the real binary with a time and memory limit
 * (mutate.c), which must neither crash, hang, grow beyond the limit,
 * leave files behind nor fail without naming the mutated file. */
#ifndef QP_TESTS_MUTATE_H
#define QP_TESTS_MUTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* xorshift64*: every run draws from its own generator, seeded from the
 * campaign's seed and the run's index, so a run is reproducible alone. */
struct mut_rng {
    uint64_t s;
};

static inline uint64_t mut_next(struct mut_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

static inline size_t mut_below(struct mut_rng *r, size_t n)
{
    return n ? (size_t)(mut_next(r) % n) : 0;
}

/* How the bytes of a file are laid out, for the mutations that aim at its
 * fields: a JSON text, or a binary file with a text header whose length
 * is stored before it (npy: u16 at 8, text at 10; safetensors: u64 at 0,
 * text at 8), or plain binary. */
enum mut_layout {
    MUT_BINARY,
    MUT_TEXT,
    MUT_NPY,
    MUT_SAFETENSORS,
};

/* A mutable byte buffer (malloc'd). */
struct mut_buf {
    uint8_t *p;
    size_t n;
};

/* Applies one mutation picked by r to b (bit flips, truncation, length
 * fields set to huge or negative values, insertions, deletions, NaN/Inf
 * values; for text and headers: duplicated keys, deep nesting, hostile
 * numbers and shapes whose products overflow). Writes its name to what.
 * False on no memory. */
bool mut_apply(struct mut_rng *r, struct mut_buf *b, enum mut_layout layout,
               char *what, size_t what_size);

/* ---- inputs (inputs.c) -------------------------------------------------- */

enum mut_kind {
    KIND_DUMP,   /* a checkpoint or dump: inspect, diff, quantize */
    KIND_RECIPE, /* quantize --recipe */
    KIND_MAP,    /* diff --map */
    KIND_MODEL,  /* an ONNX model: run, inspect, quantize */
    KIND_INPUT,  /* a model input: run --input */
};

struct mut_target {
    char name[32];      /* file or folder under base/, e.g. "t.h5", "traw" */
    enum mut_kind kind;
    bool dir;
    enum mut_layout layout; /* of the file (in a folder: of its .json) */
    char model[32];     /* KIND_MODEL/KIND_INPUT: the model under base/ */
    char input[96];     /* its --input argument's "NAME=" prefix, or "" */
};

#define MUT_MAX_TARGETS 32

/* Writes the valid files under base (a folder that exists) and lists them
 * in t[]; returns how many, or -1 (message on stderr). Models are the
 * fuzz seeds under root/tests/fuzz/seeds/onnx-run. */
int mut_inputs(const char *base, const char *root, struct mut_target *t);

/* Copies file src to dst; 0 or -1. */
int mut_copy_file(const char *src, const char *dst);

#endif
