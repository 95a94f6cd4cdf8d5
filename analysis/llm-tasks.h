/* analysis/llm-tasks.h: task-level scores of a language model, because
 * perplexity can move little while a task collapses.
 *
 * Multiple choice (JSONL, one item per line):
 *   {"context": "...", "choices": ["...", ...], "label": 1}
 * Each choice is scored by the summed log-probability of its tokens after
 * the context (the context encoded with the tokenizer's special tokens,
 * i.e. BOS; each choice without, and appended), as lm-evaluation-harness
 * does; the prediction is the best choice (acc) and the best per byte of
 * the choice's text (acc_norm). Accuracy comes with the binomial
 * uncertainty sqrt(p (1 - p) / (n - 1)) (llama.cpp's).
 *
 * Exact match (JSONL):
 *   {"prompt": "...", "answer": "..."}
 * Greedy generation (KV cache) after the prompt (with BOS) of "n_tokens"
 * tokens when the item gives them, else as many as the answer's encoding
 * has, stopping at EOS; a match when the decoded text equals the answer
 * byte for byte.
 *
 * Items may carry their tokens instead ("context_ids", "choices_ids" as a
 * list of id lists; "prompt_ids", "answer_ids"): then no tokenizer is
 * needed, acc_norm divides by the choice's token count, and an exact match
 * compares ids. Each context runs once: the choices continue its cached
 * keys and values. */
#ifndef QP_ANALYSIS_LLM_TASKS_H
#define QP_ANALYSIS_LLM_TASKS_H

#include <stddef.h>

#include "core/progress.h"
#include "model/llm.h"

/* One item's outcome. */
struct qp_task_item {
    size_t line;            /* in the file */
    /* multiple choice */
    int label, pred, pred_norm;
    size_t n_choices;
    double *logprob;        /* [n_choices], owned */
    /* exact match */
    bool hit;
    size_t n_generated;
    char *text;             /* the decoded generation (owned; NULL for
                               items given as ids) */
};

struct qp_task_result {
    size_t items;
    size_t correct, correct_norm; /* multiple choice: acc and acc_norm hits */
    double acc, acc_unc, acc_norm, acc_norm_unc;
    double seconds;
    struct qp_task_item *item;    /* [items], owned: qp_task_result_release */
};

void qp_task_result_release(struct qp_task_result *r);

/* Scores every item of the multiple-choice file path; on success r (and
 * its items) belongs to the caller (qp_task_result_release), on failure
 * nothing is left in it. Errors name the file and line (malformed JSON, a
 * missing or ill-typed field, a label out of range, an empty choice). */
enum qp_status qp_llm_choices(struct qp_llm *m, const struct qp_splan *plan,
                              const char *path, const struct qp_progress *progress,
                              struct qp_task_result *r, struct qp_error *err);

/* The exact-match rate of the file path (correct and acc; the _norm
 * fields are unused). */
enum qp_status qp_llm_exact_match(struct qp_llm *m, const struct qp_splan *plan,
                                  const char *path,
                                  const struct qp_progress *progress,
                                  struct qp_task_result *r, struct qp_error *err);

#endif
