/* analysis/llm-tasks.c: multiple-choice and exact-match scores
 * (analysis/llm-tasks.h). */
#include "analysis/llm-tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fileio.h"
#include "formats/json.h"
#include "model/llm-generate.h"

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- items --------------------------------------------------------------------- */

/* The lines of a JSONL file, each parsed. */
struct jsonl {
    struct qp_json **items;
    size_t *line;
    size_t n;
};

static void jsonl_free(struct jsonl *j)
{
    for (size_t i = 0; i < j->n; i++)
        qp_json_free(j->items[i]);
    free(j->items);
    free(j->line);
}

static enum qp_status jsonl_load(const char *path, struct jsonl *j,
                                 struct qp_error *err)
{
    memset(j, 0, sizeof *j);
    char *text;
    size_t len;
    enum qp_status st = qp_read_file(path, (size_t)1 << 28, &text, &len, err);
    size_t line = 0;
    for (char *p = text, *nl; !st && p && *p; p = nl ? nl + 1 : NULL) {
        line++;
        nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        const char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r')
            q++;
        if (!*q)
            continue;
        char what[4200];
        snprintf(what, sizeof what, "'%s' line %zu", path, line);
        struct qp_json *o;
        if ((st = qp_json_parse(p, what, &o, err)))
            break;
        struct qp_json **it = realloc(j->items, (j->n + 1) * sizeof *it);
        size_t *ln = realloc(j->line, (j->n + 1) * sizeof *ln);
        if (it)
            j->items = it;
        if (ln)
            j->line = ln;
        if (!it || !ln) {
            qp_json_free(o);
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
            break;
        }
        j->items[j->n] = o;
        j->line[j->n++] = line;
    }
    free(text);
    if (!st && !j->n)
        st = qp_fail(err, QP_E_FORMAT, "'%s': no items", path);
    if (st)
        jsonl_free(j);
    return st;
}

/* A list of token ids (JSON array of whole numbers in [0, vocab)). */
static enum qp_status json_ids(const struct qp_json *a, int64_t vocab,
                               const char *what, int32_t **ids, size_t *n,
                               struct qp_error *err)
{
    *ids = NULL;
    *n = qp_json_size(a);
    if (qp_json_type(a) != QP_JSON_ARRAY || !*n)
        return qp_fail(err, QP_E_FORMAT, "%s: a non-empty list of token ids "
                       "expected", what);
    if (!(*ids = malloc(*n * sizeof **ids)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t i = 0;
    for (const struct qp_json *e = qp_json_first(a); e; e = qp_json_next(e), i++) {
        double v;
        if (!qp_json_num(e, &v) || v != floor(v) || v < 0 || v >= (double)vocab) {
            free(*ids);
            *ids = NULL;
            return qp_fail(err, QP_E_FORMAT, "%s: element %zu is not a token id "
                           "in [0, %lld)", what, i, (long long)vocab);
        }
        (*ids)[i] = (int32_t)v;
    }
    return QP_OK;
}

/* Field `key` of item o: its ids when `key`_ids is present, else its text
 * encoded (with special tokens when special). *bytes: the text's length
 * (0 for ids). */
static enum qp_status field(const struct qp_llm *m, const struct qp_json *o,
                            const char *key, bool special, const char *where,
                            int32_t **ids, size_t *n, size_t *bytes,
                            struct qp_error *err)
{
    char k2[64], what[4300];
    snprintf(k2, sizeof k2, "%s_ids", key);
    snprintf(what, sizeof what, "%s: '%s'", where, k2);
    const struct qp_json *a = qp_json_get(o, k2);
    *bytes = 0;
    if (a)
        return json_ids(a, m->vocab, what, ids, n, err);
    const char *s;
    if (!qp_json_str(qp_json_get(o, key), &s))
        return qp_fail(err, QP_E_FORMAT, "%s: '%s' (a string) is missing", where,
                       key);
    *bytes = strlen(s);
    return qp_llm_encode(m, s, *bytes, special, ids, n, err);
}

static void binomial(size_t hits, size_t n, double *p, double *unc)
{
    *p = n ? (double)hits / (double)n : 0;
    *unc = n > 1 ? sqrt(*p * (1 - *p) / (double)(n - 1)) : 0;
}

/* log p(tok) of a row of logits, in double. */
static double log_prob(const float *row, size_t v, int32_t tok)
{
    float mx = row[0];
    for (size_t i = 1; i < v; i++)
        mx = row[i] > mx ? row[i] : mx;
    double s = 0;
    for (size_t i = 0; i < v; i++)
        s += exp((double)row[i] - mx);
    return (double)row[tok] - mx - log(s);
}

void qp_task_result_release(struct qp_task_result *r)
{
    for (size_t i = 0; r->item && i < r->items; i++) {
        free(r->item[i].logprob);
        free(r->item[i].text);
    }
    free(r->item);
    memset(r, 0, sizeof *r);
}

/* ---- multiple choice --------------------------------------------------------------- */

struct mc {
    struct qp_llm *m;
    const struct qp_splan *plan;
    struct qp_kv_cache *kv;
    float *last; /* [vocab]: the context's last row */
};

/* Summed log-probability of cont[n] after the cached context. */
static enum qp_status score_choice(struct mc *c, const int32_t *cont, size_t n,
                                   int64_t ctx_len, double *lp, struct qp_error *err)
{
    size_t v = (size_t)c->m->vocab;
    *lp = log_prob(c->last, v, cont[0]);
    enum qp_status st = QP_OK;
    if (n > 1) {
        struct qp_llm_pass p = {.plan = c->plan, .kv = c->kv};
        struct qp_tensor *logits;
        st = qp_llm_forward(c->m, &p, cont, 0, (int64_t)n - 1, &logits, err);
        for (size_t k = 1; !st && k < n; k++)
            *lp += log_prob((const float *)logits->data + (k - 1) * v, v, cont[k]);
        if (!st)
            qp_tensor_free(logits);
    }
    qp_kv_cache_truncate(c->kv, ctx_len);
    return st;
}

static enum qp_status mc_item(struct mc *c, const struct qp_json *o,
                              const char *where, struct qp_task_item *it,
                              struct qp_error *err)
{
    int32_t *ctx = NULL;
    size_t nc, bytes;
    const struct qp_json *choices = qp_json_get(o, "choices");
    const struct qp_json *cids = qp_json_get(o, "choices_ids");
    const struct qp_json *list = cids ? cids : choices;
    double lab;
    if (!qp_json_num(qp_json_get(o, "label"), &lab) || lab != floor(lab))
        return qp_fail(err, QP_E_FORMAT, "%s: 'label' (a whole number) is missing",
                       where);
    size_t nch = qp_json_size(list);
    if (qp_json_type(list) != QP_JSON_ARRAY || nch < 2 || lab < 0 || lab >= (double)nch)
        return qp_fail(err, QP_E_FORMAT, "%s: '%s' must list at least two choices "
                       "and 'label' index one of them", where,
                       cids ? "choices_ids" : "choices");
    it->label = (int)lab;
    it->n_choices = nch;
    if (!(it->logprob = calloc(nch, sizeof *it->logprob)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st = field(c->m, o, "context", true, where, &ctx, &nc, &bytes, err);
    qp_kv_cache_truncate(c->kv, 0);
    struct qp_tensor *logits = NULL;
    struct qp_llm_pass p = {.plan = c->plan, .kv = c->kv};
    if (!st)
        st = qp_llm_forward(c->m, &p, ctx, 0, (int64_t)nc, &logits, err);
    if (!st)
        memcpy(c->last, (const float *)logits->data + (nc - 1) * (size_t)c->m->vocab,
               (size_t)c->m->vocab * sizeof *c->last);
    qp_tensor_free(logits);
    double best = -INFINITY, best_norm = -INFINITY;
    size_t i = 0;
    for (const struct qp_json *e = qp_json_first(list); !st && e;
         e = qp_json_next(e), i++) {
        char what[4300];
        snprintf(what, sizeof what, "%s: choice %zu", where, i);
        int32_t *cont = NULL;
        size_t nt;
        const char *s = NULL;
        if (cids)
            st = json_ids(e, c->m->vocab, what, &cont, &nt, err);
        else if (!qp_json_str(e, &s) || !*s)
            st = qp_fail(err, QP_E_FORMAT, "%s: a non-empty string expected", what);
        else
            st = qp_llm_encode(c->m, s, strlen(s), false, &cont, &nt, err);
        if (!st && !nt)
            st = qp_fail(err, QP_E_FORMAT, "%s: encodes to no token", what);
        double lp;
        if (!st)
            st = score_choice(c, cont, nt, (int64_t)nc, &lp, err);
        double norm = lp / (double)(s ? strlen(s) : nt);
        if (!st) {
            it->logprob[i] = lp;
            if (lp > best)
                best = lp, it->pred = (int)i;
            if (norm > best_norm)
                best_norm = norm, it->pred_norm = (int)i;
        }
        free(cont);
    }
    free(ctx);
    return st;
}

enum qp_status qp_llm_choices(struct qp_llm *m, const struct qp_splan *plan,
                              const char *path, const struct qp_progress *progress,
                              struct qp_task_result *r, struct qp_error *err)
{
    memset(r, 0, sizeof *r);
    struct jsonl j;
    enum qp_status st = jsonl_load(path, &j, err);
    if (st)
        return st;
    struct mc c = {m, plan, NULL, malloc((size_t)m->vocab * sizeof(float))};
    if (!c.last)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_kv_cache_new((int)m->cfg.n_layers, &c.kv, err);
    if (!st && !(r->item = calloc(j.n, sizeof *r->item)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    double t0 = now_seconds();
    for (size_t i = 0; !st && i < j.n; i++) {
        char where[4200];
        snprintf(where, sizeof where, "'%s' line %zu", path, j.line[i]);
        struct qp_task_item *it = &r->item[i];
        it->line = j.line[i];
        it->pred = it->pred_norm = -1;
        st = mc_item(&c, j.items[i], where, it, err);
        r->correct += !st && it->pred == it->label;
        r->correct_norm += !st && it->pred_norm == it->label;
        qp_progress_report(progress, "choices", i + 1, j.n);
    }
    r->seconds = now_seconds() - t0;
    r->items = j.n;
    binomial(r->correct, r->items, &r->acc, &r->acc_unc);
    binomial(r->correct_norm, r->items, &r->acc_norm, &r->acc_norm_unc);
    qp_kv_cache_free(c.kv);
    free(c.last);
    jsonl_free(&j);
    if (st)
        qp_task_result_release(r);
    return st;
}

/* ---- exact match -------------------------------------------------------------------- */

static enum qp_status em_item(struct qp_llm *m, const struct qp_splan *plan,
                              const struct qp_json *o, const char *where,
                              struct qp_task_item *it, struct qp_error *err)
{
    int32_t *prompt = NULL, *answer = NULL, *gen = NULL;
    size_t np, na = 0, ng, pb, ab;
    char *text = NULL;
    size_t tl;
    enum qp_status st = field(m, o, "prompt", true, where, &prompt, &np, &pb, err);
    if (!st)
        st = field(m, o, "answer", false, where, &answer, &na, &ab, err);
    if (!st && !na)
        st = qp_fail(err, QP_E_FORMAT, "%s: the answer encodes to no token", where);
    double nt;
    if (!st && qp_json_num(qp_json_get(o, "n_tokens"), &nt) &&
        (nt != floor(nt) || nt < 1 || nt > 1e6))
        st = qp_fail(err, QP_E_FORMAT, "%s: 'n_tokens' must be a whole number in "
                     "[1, 1e6]", where);
    else if (!st && qp_json_get(o, "n_tokens"))
        na = (size_t)nt;
    struct qp_gen_opts go = {na, qp_llm_eos(m), false, NULL, NULL, NULL};
    if (!st)
        st = qp_llm_generate(m, plan, prompt, np, &go, &gen, &ng, NULL, err);
    if (!st && ng && gen[ng - 1] == go.eos)
        ng--; /* the stop is not part of the answer */
    const char *want;
    bool ids = qp_json_get(o, "answer_ids") != NULL;
    it->n_generated = ng;
    if (!st && ids) {
        size_t nw;
        int32_t *w = NULL;
        st = json_ids(qp_json_get(o, "answer_ids"), m->vocab, where, &w, &nw, err);
        it->hit = !st && ng == nw && !memcmp(gen, w, nw * sizeof *gen);
        free(w);
    } else if (!st && !(st = qp_llm_decode(m, gen, ng, &text, &tl, err))) {
        qp_json_str(qp_json_get(o, "answer"), &want);
        it->hit = tl == strlen(want) && !memcmp(text, want, tl);
        it->text = text;
    }
    free(prompt);
    free(answer);
    free(gen);
    return st;
}

enum qp_status qp_llm_exact_match(struct qp_llm *m, const struct qp_splan *plan,
                                  const char *path,
                                  const struct qp_progress *progress,
                                  struct qp_task_result *r, struct qp_error *err)
{
    memset(r, 0, sizeof *r);
    struct jsonl j;
    enum qp_status st = jsonl_load(path, &j, err);
    if (st)
        return st;
    if (!(r->item = calloc(j.n, sizeof *r->item)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    double t0 = now_seconds();
    for (size_t i = 0; !st && i < j.n; i++) {
        char where[4200];
        snprintf(where, sizeof where, "'%s' line %zu", path, j.line[i]);
        r->item[i].line = j.line[i];
        st = em_item(m, plan, j.items[i], where, &r->item[i], err);
        r->correct += r->item[i].hit;
        qp_progress_report(progress, "exact-match", i + 1, j.n);
    }
    r->items = j.n;
    r->seconds = now_seconds() - t0;
    binomial(r->correct, r->items, &r->acc, &r->acc_unc);
    jsonl_free(&j);
    if (st)
        qp_task_result_release(r);
    return st;
}
