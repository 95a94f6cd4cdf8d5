/* model/llm.h: what every LLM command shares (run, eval, generate): a
 * Hugging Face Llama-family folder opened as a session with its config,
 * token ids read from files, feeds, calibration sets of token sequences,
 * and one forward pass giving logits.
 *
 *   qp_llm_open -> qp_llm_read_ids / qp_llm_feed -> qp_llm_forward (any
 *   plan of qp_llm_session's session, with or without a KV cache) ->
 *   qp_llm_free */
#ifndef QP_MODEL_LLM_H
#define QP_MODEL_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/kvcache.h"
#include "model/llama-config.h"
#include "model/session.h"

struct qp_tokenizer;

struct qp_llm {
    struct qp_session *s;        /* owned */
    struct qp_llama_config cfg;
    char *dir;
    int64_t vocab;               /* rows of the embedding table */
    struct qp_tokenizer *tok;    /* the folder's tokenizer.json, or NULL */
    /* release the mapped pages of each layer's weights after their last
     * use in a pass (model/exec.h), so that a model larger than memory
     * runs; qp_llm_open sets it when the weights exceed a quarter of the
     * machine's memory */
    bool release_weights;
};

/* Opens the model folder dir (model/llama-import.h) and its tokenizer
 * (formats/tokenizer.h) when the folder has a tokenizer.json (a malformed
 * one is an error naming it). *out belongs to the caller (qp_llm_free). */
enum qp_status qp_llm_open(const char *dir, struct qp_llm **out,
                           struct qp_error *err);
void qp_llm_free(struct qp_llm *m);

/* Token ids from an .npy file of int32 or int64 (any shape: read in C
 * order), or from a dump's tensor "input_ids" (or its only tensor: a
 * PyTorch capture's inputs), each checked to lie in [0, vocab). *ids (malloc'd, *n entries)
 * belongs to the caller; shape/ndim (may be NULL) receive the array's
 * shape (rank 1 or 2 only when ndim is asked for). Errors name the file
 * and, for an id outside the vocabulary, its position and value. */
enum qp_status qp_llm_read_ids(const char *path, int64_t vocab, int32_t **ids,
                               size_t *n, int64_t *shape, int *ndim,
                               struct qp_error *err);

/* The model's input tensor for ids [b, t] (b 0: one sequence [t]). *out
 * belongs to the caller. */
enum qp_status qp_llm_feed(const int32_t *ids, int64_t b, int64_t t,
                           struct qp_tensor **out, struct qp_error *err);

/* The graph inputs (one tensor) for a run on the ids file path: [T] or
 * [B, T] as stored. *feed belongs to the caller (qp_session_free_inputs). */
enum qp_status qp_llm_load_feed(const struct qp_llm *m, const char *path,
                                struct qp_tensor ***feed, struct qp_error *err);

/* Calibration sets from the ids in path: consecutive sequences of ctx
 * tokens (the last partial one dropped unless it is the only one), at most
 * max_seqs of them (0: all). *added (may be NULL) counts them. */
enum qp_status qp_llm_add_calib_ids(struct qp_llm *m, const int32_t *ids,
                                    size_t n, int64_t ctx, size_t max_seqs,
                                    size_t *added, struct qp_error *err);

/* Token ids from a file: an .npy of ids or a .safetensors/.npz/.h5 dump
 * (qp_llm_read_ids, flattened), or any other file as text through the model's tokenizer (with its special
 * tokens added, as llama.cpp tokenizes an evaluation text). Errors name
 * the file. */
enum qp_status qp_llm_read_tokens(const struct qp_llm *m, const char *path,
                                  int32_t **ids, size_t *n, struct qp_error *err);

/* The text of the file path through the model's tokenizer, special
 * tokens added (BOS), as llama.cpp tokenizes an evaluation text. */
enum qp_status qp_llm_read_text(const struct qp_llm *m, const char *path,
                                int32_t **ids, size_t *n, struct qp_error *err);

/* The graph inputs for a run on the text of path ([T]); *feed as
 * qp_llm_load_feed's. */
enum qp_status qp_llm_text_feed(const struct qp_llm *m, const char *path,
                                struct qp_tensor ***feed, struct qp_error *err);

/* Text to ids through the model's tokenizer (tokenizer.json in its
 * folder); add_special adds what its post-processor adds (BOS). *ids
 * (malloc'd, *n entries) belongs to the caller. QP_E_NOTFOUND when the
 * folder has no tokenizer; QP_E_INVAL when an id is outside the model's
 * vocabulary. */
enum qp_status qp_llm_encode(const struct qp_llm *m, const char *text,
                             size_t len, bool add_special, int32_t **ids,
                             size_t *n, struct qp_error *err);

/* Ids to text (the bytes the tokens stand for; special tokens kept).
 * *text (malloc'd, NUL-terminated, *len bytes) belongs to the caller. */
enum qp_status qp_llm_decode(const struct qp_llm *m, const int32_t *ids,
                             size_t n, char **text, size_t *len,
                             struct qp_error *err);

/* The BOS id a chunk or a prompt starts with: the tokenizer's when it
 * adds one, else config.json's bos_token_id without a tokenizer, else -1. */
int32_t qp_llm_bos(const struct qp_llm *m);
/* The EOS id generation stops at (tokenizer, else config.json), or -1. */
int32_t qp_llm_eos(const struct qp_llm *m);

/* A plan for cfg (model/session.h) after adding calibration sequences of
 * ctx tokens from calib[n_calib] (NULL: none; at most max_seqs, 0: all).
 * *seqs (may be NULL) counts the sequences added. */
enum qp_status qp_llm_plan(struct qp_llm *m, const struct qp_session_cfg *cfg,
                           const int32_t *calib, size_t n_calib, int64_t ctx,
                           size_t max_seqs, size_t *seqs, struct qp_splan **out,
                           struct qp_error *err);

/* One forward pass on ids [b, t] (b 0: one sequence) under plan (NULL:
 * fp32) with kv (NULL: no cache; else the tokens continue its sequences).
 * *logits ([t, vocab] or [b, t, vocab]) belongs to the caller. capture and
 * on_capture as in qp_session_run_opts (NULL: none). */
struct qp_llm_pass {
    const struct qp_splan *plan;
    struct qp_kv_cache *kv;
    const char *capture;
    enum qp_status (*on_capture)(void *ctx, const struct qp_graph *g, int value,
                                 const struct qp_tensor *t, struct qp_error *err);
    void *capture_ctx;
    const struct qp_progress *progress;
};
enum qp_status qp_llm_forward(struct qp_llm *m, const struct qp_llm_pass *p,
                              const int32_t *ids, int64_t b, int64_t t,
                              struct qp_tensor **logits, struct qp_error *err);

#endif
