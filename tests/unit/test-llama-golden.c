/* tests/unit/test-llama-golden.c: the Llama-family forward, perplexity and
 * greedy generation against tests/golden/llama (written once with a plain
 * torch forward following transformers, scripts/llama-golden.py; see its
 * README and PROVENANCE.md): every captured module within a relative L2
 * error of 1e-5 (the acceptance tolerance), the rotary frequencies bit for
 * bit, llama.cpp-style perplexity of data/llama-tiny on its held-out text
 * at three context sizes, and the exact-match generations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/llm-eval.h"
#include "analysis/llm-tasks.h"
#include "formats/dump.h"
#include "formats/json.h"
#include "model/llm-generate.h"
#include "tests/test.h"

#define GOLDEN "tests/golden/llama/"

struct cmp {
    struct qp_dump *ref;
    int compared;
    double worst;
    char worst_name[128];
    bool bad_shape;
};

static enum qp_status compare(void *ctx, const struct qp_graph *g, int v,
                              const struct qp_tensor *t, struct qp_error *err)
{
    struct cmp *c = ctx;
    long i = qp_dump_find(c->ref, g->values[v].name);
    if (i < 0 || t->dtype != QP_DTYPE_F32)
        return QP_OK;
    struct qp_tensor *r;
    enum qp_status st = qp_dump_load(c->ref, (size_t)i, &r, err);
    if (st)
        return st;
    if (!qp_shape_equal(r->ndim, r->shape, t->ndim, t->shape)) {
        c->bad_shape = true;
        snprintf(c->worst_name, sizeof c->worst_name, "%s (shape)", t->name);
    } else {
        double e = 0, s = 0;
        const float *a = t->data, *b = r->data;
        for (size_t k = 0; k < qp_tensor_numel(t); k++) {
            e += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
            s += (double)b[k] * b[k];
        }
        double rel = sqrt(e / s);
        if (!(rel <= c->worst)) {
            c->worst = rel;
            snprintf(c->worst_name, sizeof c->worst_name, "%s", t->name);
        }
        c->compared++;
    }
    qp_tensor_free(r);
    return QP_OK;
}

/* The model at dir on ref's input_ids; every module within 1e-5. */
static void check_golden(struct qp_test_ctx *ctx, const char *dir, const char *ref,
                         int want_tensors)
{
    struct qp_llm *m = NULL;
    struct qp_error err;
    struct cmp c = {0};
    struct qp_tensor *ids = NULL, *inv = NULL, *out = NULL;
    REQUIRE_OK(qp_llm_open(dir, &m, &err), &err);
    if (qp_dump_open(ref, QP_DUMP_AUTO, &c.ref, &err) ||
        qp_dump_load(c.ref, (size_t)qp_dump_find(c.ref, "input_ids"), &ids, &err) ||
        qp_dump_load(c.ref, (size_t)qp_dump_find(c.ref, "model.rotary_emb.inv_freq"),
                     &inv, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", ref, err.msg);
        goto done;
    }
    const struct qp_graph *g = qp_session_graph(m->s);
    const struct qp_tensor *f = g->values[qp_graph_find(g, "model.rotary_emb.inv_freq")].konst;
    CHECK(f->nbytes == inv->nbytes && !memcmp(f->data, inv->data, f->nbytes));
    struct qp_llm_pass p = {.capture = "*", .on_capture = compare, .capture_ctx = &c};
    int64_t b = ids->ndim == 2 ? ids->shape[0] : 0, t = ids->shape[ids->ndim - 1];
    CHECK_OK(qp_llm_forward(m, &p, ids->data, b, t, &out, &err), &err);
    CHECK_INT(c.compared, want_tensors);
    CHECK(!c.bad_shape);
    if (!(c.worst <= 1e-5))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s: '%s' rel L2 %.3g", ref,
                      c.worst_name, c.worst);
done:
    qp_tensor_free(out);
    qp_tensor_free(ids);
    qp_tensor_free(inv);
    qp_dump_close(c.ref);
    qp_llm_free(m);
}

/* per layer 10 modules (norms, projections, the block), plus embed_tokens,
 * norm and lm_head; attention, attn_residual and swiglu have no HF module */
QP_TEST(llama_golden_variants)
{
    const char *v[] = {"llama3-rope", "linear-rope-f16", "qwen2-bias", "mistral"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char dir[256], ref[256];
        snprintf(dir, sizeof dir, GOLDEN "%s", v[i]);
        snprintf(ref, sizeof ref, GOLDEN "%s/ref.safetensors", v[i]);
        check_golden(ctx, dir, ref, 2 * 10 + 3);
    }
}

QP_TEST(llama_golden_tiny)
{
    check_golden(ctx, "data/llama-tiny", GOLDEN "tiny-t16.safetensors", 4 * 10 + 3);
    check_golden(ctx, "data/llama-tiny", GOLDEN "tiny-b2t4.safetensors", 4 * 10 + 3);
}

static const struct qp_json *golden_eval(struct qp_test_ctx *ctx, struct qp_json **root)
{
    struct qp_error err;
    if (qp_json_load(GOLDEN "tiny-eval.json", root, &err)) {
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    return *root;
}

static double num(const struct qp_json *o, const char *key)
{
    double v = NAN;
    qp_json_num(qp_json_get(o, key), &v);
    return v;
}

QP_TEST(llama_golden_perplexity)
{
    struct qp_json *root;
    const struct qp_json *ev = golden_eval(ctx, &root);
    REQUIRE(ev);
    struct qp_llm *m;
    struct qp_error err;
    int32_t *ids;
    size_t n;
    REQUIRE_OK(qp_llm_open("data/llama-tiny", &m, &err), &err);
    REQUIRE_OK(qp_llm_read_ids(GOLDEN "tiny-heldout-ids.npy", m->vocab, &ids, &n,
                               NULL, NULL, &err), &err);
    CHECK_INT(n, (int64_t)num(ev, "n_ids"));
    const struct qp_json *list = qp_json_get(ev, "perplexity");
    for (const struct qp_json *e = qp_json_first(list); e; e = qp_json_next(e)) {
        struct qp_ppl_opts o = {.ctx = (int64_t)num(e, "ctx"), .bos = qp_llm_bos(m),
                                .batch = 4};
        struct qp_ppl_result r;
        CHECK_OK(qp_llm_perplexity(m, NULL, ids, n, &o, &r, &err), &err);
        CHECK_INT(r.chunks, (int64_t)num(e, "chunks"));
        CHECK_INT(r.count, (int64_t)num(e, "scored_tokens"));
        CHECK_NEAR(r.ppl / num(e, "ppl"), 1, 1e-5);
        CHECK_NEAR(r.ppl_unc / num(e, "ppl_uncertainty"), 1, 1e-4);
    }
    free(ids);
    qp_llm_free(m);
    qp_json_free(root);
}

/* A JSON list of ids into a malloc'd array. */
static int32_t *json_ids(const struct qp_json *a, size_t *n)
{
    *n = qp_json_size(a);
    int32_t *v = malloc((*n ? *n : 1) * sizeof *v);
    size_t i = 0;
    for (const struct qp_json *e = qp_json_first(a); v && e; e = qp_json_next(e)) {
        double d = 0;
        qp_json_num(e, &d);
        v[i++] = (int32_t)d;
    }
    return v;
}

QP_TEST(llama_golden_exact_generation)
{
    struct qp_json *root;
    const struct qp_json *ev = golden_eval(ctx, &root);
    REQUIRE(ev);
    struct qp_llm *m;
    struct qp_error err;
    REQUIRE_OK(qp_llm_open("data/llama-tiny", &m, &err), &err);
    const struct qp_json *items = qp_json_get(qp_json_get(ev, "exact"), "per_item");
    int checked = 0, equal = 0;
    for (const struct qp_json *e = qp_json_first(items); e; e = qp_json_next(e)) {
        size_t np, ng, nout;
        int32_t *prompt = json_ids(qp_json_get(e, "prompt_ids"), &np);
        int32_t *want = json_ids(qp_json_get(e, "generated_ids"), &ng), *got = NULL;
        struct qp_gen_opts o = {.max_new = ng, .eos = -1};
        CHECK_OK(qp_llm_generate(m, NULL, prompt, np, &o, &got, &nout, NULL, &err),
                 &err);
        checked++;
        equal += got && nout == ng && !memcmp(got, want, ng * sizeof *got);
        free(prompt);
        free(want);
        free(got);
    }
    CHECK_INT(checked, 20);
    CHECK_INT(equal, 20);
    qp_llm_free(m);
    qp_json_free(root);
}

/* data/llama-tiny's choices.jsonl and exact.jsonl through its tokenizer:
 * every choice's summed log-probability as tiny-eval.json (float64 torch
 * there), the predictions and the rates. */
QP_TEST(llama_golden_tasks)
{
    struct qp_json *root;
    const struct qp_json *ev = golden_eval(ctx, &root);
    REQUIRE(ev);
    struct qp_llm *m;
    struct qp_error err;
    REQUIRE_OK(qp_llm_open("data/llama-tiny", &m, &err), &err);
    REQUIRE(m->tok);
    struct qp_task_result r;
    const struct qp_json *mc = qp_json_get(ev, "choices");
    REQUIRE_OK(qp_llm_choices(m, NULL, "data/llama-tiny/choices.jsonl", NULL, &r,
                              &err), &err);
    CHECK_INT(r.items, (int64_t)num(mc, "items"));
    CHECK_NEAR(r.acc, num(mc, "accuracy"), 1e-12);
    CHECK_NEAR(r.acc_norm, num(mc, "accuracy_norm"), 1e-12);
    size_t i = 0, bad = 0;
    double worst = 0;
    for (const struct qp_json *e = qp_json_first(qp_json_get(mc, "per_item"));
         e && i < r.items; e = qp_json_next(e), i++) {
        const struct qp_task_item *it = &r.item[i];
        bad += it->pred != (int)num(e, "pred") ||
               it->pred_norm != (int)num(e, "pred_norm");
        size_t c = 0;
        for (const struct qp_json *l = qp_json_first(qp_json_get(e, "logprob"));
             l && c < it->n_choices; l = qp_json_next(l), c++) {
            double want = 0;
            qp_json_num(l, &want);
            double d = fabs(it->logprob[c] - want) / fabs(want);
            worst = d > worst ? d : worst;
        }
        bad += c != it->n_choices;
    }
    CHECK_INT(bad, 0);
    if (!(worst < 1e-5))
        qp_test_failf(ctx, __FILE__, __LINE__, "choice log-probability off by "
                      "%.3g (relative)", worst);
    qp_task_result_release(&r);
    REQUIRE_OK(qp_llm_exact_match(m, NULL, "data/llama-tiny/exact.jsonl", NULL, &r,
                                  &err), &err);
    CHECK_INT(r.items, 20);
    CHECK_INT(r.correct, 20);
    CHECK(r.item[0].text && !strcmp(r.item[0].text, " Works in"));
    qp_task_result_release(&r);
    qp_llm_free(m);
    qp_json_free(root);
}

/* The held-out text through the tokenizer evaluates as its golden ids. */
QP_TEST(llama_golden_text_perplexity)
{
    struct qp_llm *m;
    struct qp_error err;
    int32_t *a, *b;
    size_t na, nb;
    REQUIRE_OK(qp_llm_open("data/llama-tiny", &m, &err), &err);
    REQUIRE_OK(qp_llm_read_text(m, "data/llama-tiny/heldout.txt", &a, &na, &err), &err);
    REQUIRE_OK(qp_llm_read_ids(GOLDEN "tiny-heldout-ids.npy", m->vocab, &b, &nb, NULL,
                               NULL, &err), &err);
    CHECK(na == nb && !memcmp(a, b, na * sizeof *a));
    CHECK_INT(qp_llm_bos(m), 766);
    CHECK_INT(qp_llm_eos(m), 767);
    free(a);
    free(b);
    qp_llm_free(m);
}
