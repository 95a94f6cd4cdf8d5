/* analysis/export-llm.c: recipes as llama-quantize arguments and
 * GPTQModel's dynamic config (analysis/export-llm.h). */
#include "analysis/export-llm.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outfile.h"
#include "formats/dump.h"
#include "formats/json.h"
#include "quant/ggml-quant.h"

/* ---- names ------------------------------------------------------------------ */

struct kind {
    const char *hf, *ll; /* the name, or the part after the layer prefix */
    bool layer;          /* under model.layers.N. / blk.N. */
    bool quant;          /* a matrix llama-quantize quantizes */
};

static const struct kind kinds[] = {
    {"model.embed_tokens.weight", "token_embd.weight", false, true},
    {"lm_head.weight", "output.weight", false, true},
    {"model.norm.weight", "output_norm.weight", false, false},
    {"self_attn.q_proj.weight", "attn_q.weight", true, true},
    {"self_attn.k_proj.weight", "attn_k.weight", true, true},
    {"self_attn.v_proj.weight", "attn_v.weight", true, true},
    {"self_attn.o_proj.weight", "attn_output.weight", true, true},
    {"mlp.gate_proj.weight", "ffn_gate.weight", true, true},
    {"mlp.up_proj.weight", "ffn_up.weight", true, true},
    {"mlp.down_proj.weight", "ffn_down.weight", true, true},
    {"input_layernorm.weight", "attn_norm.weight", true, false},
    {"post_attention_layernorm.weight", "ffn_norm.weight", true, false},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", true, false},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", true, false},
    {"self_attn.q_proj.bias", "attn_q.bias", true, false},
    {"self_attn.k_proj.bias", "attn_k.bias", true, false},
    {"self_attn.v_proj.bias", "attn_v.bias", true, false},
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0], K_EMBD = 0, K_OUTPUT = 1 };

/* The kind and layer of name in either spelling (ll: llama.cpp's). */
static bool parse_name(const char *name, bool ll, int *kind, int *layer)
{
    const char *prefix = ll ? "blk." : "model.layers.";
    *layer = -1;
    for (int k = 0; k < N_KINDS; k++)
        if (!kinds[k].layer && !strcmp(name, ll ? kinds[k].ll : kinds[k].hf)) {
            *kind = k;
            return true;
        }
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl))
        return false;
    char *end;
    long n = strtol(name + pl, &end, 10);
    if (end == name + pl || *end != '.' || n < 0 || n > 1000000 ||
        (name[pl] == '0' && end - (name + pl) > 1))
        return false;
    for (int k = 0; k < N_KINDS; k++)
        if (kinds[k].layer && !strcmp(end + 1, ll ? kinds[k].ll : kinds[k].hf)) {
            *kind = k;
            *layer = (int)n;
            return true;
        }
    return false;
}

static void name_of(int kind, int layer, bool ll, char *buf, size_t size)
{
    const struct kind *k = &kinds[kind];
    if (!k->layer)
        snprintf(buf, size, "%s", ll ? k->ll : k->hf);
    else
        snprintf(buf, size, "%s%d.%s", ll ? "blk." : "model.layers.", layer,
                 ll ? k->ll : k->hf);
}

bool qp_llama_name_of(const char *hf, char *buf, size_t size)
{
    int kind, layer;
    if (!parse_name(hf, false, &kind, &layer))
        return false;
    name_of(kind, layer, true, buf, size);
    return true;
}

/* ---- the model's tensors ------------------------------------------------- */

struct tensor {
    int kind, layer;
    int64_t row;         /* values per row (the input axis), -1 unknown */
};

struct model {
    struct tensor *t;    /* known tensors */
    size_t n;
    char **names;        /* every name of the checkpoint (for rule checks) */
    size_t n_names;
    int layers;
};

static void model_release(struct model *m)
{
    for (size_t i = 0; i < m->n_names; i++)
        free(m->names[i]);
    free(m->names);
    free(m->t);
}

static enum qp_status add_tensor(struct model *m, int kind, int layer, int64_t row,
                                 struct qp_error *err)
{
    struct tensor *t = realloc(m->t, (m->n + 1) * sizeof *t);
    if (!t)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    m->t = t;
    m->t[m->n++] = (struct tensor){kind, layer, row};
    if (layer + 1 > m->layers)
        m->layers = layer + 1;
    return QP_OK;
}

static enum qp_status model_load(const struct qp_export_llm_opts *o, struct model *m,
                                 struct qp_error *err)
{
    memset(m, 0, sizeof *m);
    if (!o->model) {
        if (o->layers <= 0)
            return qp_fail(err, QP_E_INVAL, "the layer count is needed: give "
                           "MODEL (a checkpoint) or --layers N");
        enum qp_status st = QP_OK;
        for (int k = 0; !st && k < N_KINDS; k++)
            for (int l = 0; !st && l < (kinds[k].layer ? o->layers : 1); l++)
                st = add_tensor(m, k, kinds[k].layer ? l : -1, -1, err);
        return st;
    }
    struct qp_dump *d;
    enum qp_status st = qp_dump_open(o->model, QP_DUMP_AUTO, &d, err);
    if (st)
        return st;
    bool ll = d->format == QP_DUMP_GGUF;
    m->names = calloc(qp_dump_count(d) + 1, sizeof *m->names);
    if (!m->names)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < qp_dump_count(d); i++) {
        const struct qp_tensor *e = qp_dump_entry(d, i);
        if (!(m->names[m->n_names++] = strdup(e->name)))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        int kind, layer;
        if (!st && parse_name(e->name, ll, &kind, &layer))
            st = add_tensor(m, kind, layer, e->ndim >= 2 ? e->shape[e->ndim - 1] : -1,
                            err);
    }
    qp_dump_close(d);
    if (!st && !m->n)
        st = qp_fail(err, QP_E_FORMAT, "'%s' has no tensor of a Llama-family "
                     "checkpoint (model.layers.N.* or blk.N.*)", o->model);
    return st;
}

/* Rules whose glob matches no name of the checkpoint (either spelling). */
static enum qp_status check_rules(const struct qp_export_llm_opts *o,
                                  const struct model *m, struct qp_export_result *r,
                                  struct qp_error *err)
{
    const struct qp_recipe *rc = o->recipe;
    if (!o->model)
        return QP_OK;
    free(r->unused); /* a result used before */
    r->n_unused = 0;
    if (!(r->unused = calloc(rc->nrules + 1, sizeof *r->unused)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < rc->nrules; i++) {
        bool used = false;
        for (size_t k = 0; !used && k < m->n_names; k++) {
            char other[256] = "";
            int kind, layer;
            if (parse_name(m->names[k], false, &kind, &layer))
                name_of(kind, layer, true, other, sizeof other);
            else if (parse_name(m->names[k], true, &kind, &layer))
                name_of(kind, layer, false, other, sizeof other);
            used = qp_recipe_glob_match(rc->rules[i].glob, m->names[k]) ||
                   (other[0] && qp_recipe_glob_match(rc->rules[i].glob, other));
        }
        r->unused[i] = !used;
        r->n_unused += !used;
    }
    for (size_t i = 0; o->strict && i < rc->nrules; i++)
        if (r->unused[i])
            return qp_fail(err, QP_E_NOTFOUND, "--strict: recipe '%s': layers "
                           "\"%s\" matches no tensor of '%s'; nothing was written",
                           o->recipe_name ? o->recipe_name : "", rc->rules[i].glob,
                           o->model);
    return QP_OK;
}


/* ---- llama-tensor-type ------------------------------------------------------------ */

enum qp_status qp_llama_ggml_type(const char *hf, const char *ll,
                                  const struct qp_wscheme *ws,
                                  enum qp_ggml_type *out, struct qp_error *err)
{
    *out = QP_GGML_F32;
    if (!ws)
        return QP_OK;
    if (ws->family == QP_WFAMILY_GGML) {
        *out = ws->ggml;
        return QP_OK;
    }
    struct qp_scheme s = {.w = *ws};
    char sch[QP_SCHEME_MAX];
    qp_scheme_format(&s, sch, sizeof sch);
    const struct qp_ggml_type_info *near = qp_ggml_type_info(qp_ggml_nearest(ws));
    return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s' (%s): %s is not one of "
                   "llama.cpp's types; the nearest is %s", hf, ll, sch,
                   near->scheme ? near->scheme : near->name);
}

/* The ggml type of tensor t under the recipe (f32 when it stays float). */
static enum qp_status ggml_type_of(const struct qp_export_llm_opts *o,
                                   const struct tensor *t, enum qp_ggml_type *out,
                                   struct qp_error *err)
{
    char hf[256], ll[256];
    name_of(t->kind, t->layer, false, hf, sizeof hf);
    name_of(t->kind, t->layer, true, ll, sizeof ll);
    const char *names[2] = {hf, ll};
    struct qp_wscheme ws;
    bool has = qp_recipe_weights(o->recipe, names, 2, &ws, NULL);
    return qp_llama_ggml_type(hf, ll, has ? &ws : NULL, out, err);
}

/* llama-quantize gives token_embd and output their flag's type with no
 * fallback (llama_tensor_get_type returns before tensor_type_fallback),
 * so a type whose block does not divide their rows would fail there:
 * refused here, naming the type that would. */
static enum qp_status flag_row_check(const struct tensor *t, enum qp_ggml_type type,
                                     struct qp_error *err)
{
    if ((t->kind != K_EMBD && t->kind != K_OUTPUT) || t->row <= 0 ||
        qp_ggml_fallback(type, t->row) == type)
        return QP_OK;
    return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s' (%s): rows of %lld values "
                   "are not a multiple of %s's block, and llama-quantize's %s has no "
                   "fallback: give it %s in the recipe", kinds[t->kind].hf,
                   kinds[t->kind].ll, (long long)t->row,
                   qp_ggml_type_info(type)->name, t->kind == K_EMBD
                   ? "--token-embedding-type" : "--output-tensor-type",
                   qp_ggml_type_info(qp_ggml_fallback(type, t->row))->name);
}

/* One note per (type, row length) llama.cpp cannot hold, with the first
 * tensor and how many share it. */
static void fallback_notes(const struct model *m, const enum qp_ggml_type *type,
                           struct qp_export_result *r)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct tensor *t = &m->t[i];
        if (!kinds[t->kind].quant || t->row <= 0 || t->kind == K_EMBD ||
            t->kind == K_OUTPUT || qp_ggml_fallback(type[i], t->row) == type[i])
            continue;
        bool seen = false;
        size_t same = 0;
        for (size_t j = 0; j < m->n; j++) {
            bool eq = kinds[m->t[j].kind].quant && type[j] == type[i] &&
                      m->t[j].row == t->row;
            seen |= eq && j < i;
            same += eq;
        }
        if (seen)
            continue;
        char ll[256];
        name_of(t->kind, t->layer, true, ll, sizeof ll);
        enum qp_ggml_type fb = qp_ggml_fallback(type[i], t->row);
        qp_export_note(r, "%s and %zu more: rows of %lld values are not a "
                       "multiple of %s's block: llama.cpp falls back to %s", ll,
                       same - 1, (long long)t->row,
                       qp_ggml_type_info(type[i])->name,
                       qp_ggml_type_info(fb)->name);
    }
}

/* llama-quantize's TYPE argument whose default type is t. */
static const char *ftype_of(enum qp_ggml_type t)
{
    switch (t) {
    case QP_GGML_Q8_0: return "Q8_0";
    case QP_GGML_Q4_0: return "Q4_0";
    case QP_GGML_Q4_1: return "Q4_1";
    case QP_GGML_Q5_0: return "Q5_0";
    case QP_GGML_Q4_K: return "Q4_K_S";
    case QP_GGML_Q6_K: return "Q6_K";
    case QP_GGML_F16: return "F16";
    case QP_GGML_BF16: return "BF16";
    default: return "F32";
    }
}

/* "\." for every '.' of s into buf. */
static void regex_escape(const char *s, char *buf, size_t size)
{
    size_t k = 0;
    for (; *s && k + 3 < size; s++) {
        if (*s == '.')
            buf[k++] = '\\';
        buf[k++] = *s;
    }
    buf[k] = '\0';
}

enum qp_status qp_export_llama_tensor_type(const struct qp_export_llm_opts *o,
                                           const char *path,
                                           struct qp_export_result *r,
                                           struct qp_error *err)
{
    struct model m;
    enum qp_status st = model_load(o, &m, err);
    enum qp_ggml_type *type = calloc(m.n + 1, sizeof *type);
    if (!st && !type)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = check_rules(o, &m, r, err);
    size_t count[QP_GGML_TYPE_COUNT] = {0}, quantizable = 0;
    for (size_t i = 0; !st && i < m.n; i++) {
        if (!kinds[m.t[i].kind].quant)
            continue;
        if (!(st = ggml_type_of(o, &m.t[i], &type[i], err)))
            st = flag_row_check(&m.t[i], type[i], err);
        count[type[i]]++;
        quantizable++;
    }
    fallback_notes(&m, type, r);
    enum qp_ggml_type base = QP_GGML_F32;
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++)
        if (qp_ggml_type_info((enum qp_ggml_type)t)->dtype == QP_DTYPE_COUNT &&
            count[t] > (base == QP_GGML_F32 ? 0 : count[base]))
            base = (enum qp_ggml_type)t;
    struct qp_outfile *of = NULL;
    if (!st)
        st = qp_outfile_open(path, &of, err);
    size_t lines = 0;
    if (!st) {
        fprintf(of->fp, "--pure\n");
        for (size_t i = 0; i < m.n; i++)
            if (m.t[i].kind == K_OUTPUT || m.t[i].kind == K_EMBD)
                fprintf(of->fp, "--%s %s\n", m.t[i].kind == K_OUTPUT
                        ? "output-tensor-type" : "token-embedding-type",
                        qp_ggml_type_info(type[i])->name);
        /* one line per (kind, type): the layers that have it, in order */
        for (int k = 0; k < N_KINDS; k++) {
            if (!kinds[k].layer || !kinds[k].quant)
                continue;
            for (int t = 0; t < QP_GGML_TYPE_COUNT; t++) {
                bool any = false;
                for (size_t i = 0; i < m.n; i++) {
                    if (m.t[i].kind != k || type[i] != (enum qp_ggml_type)t)
                        continue;
                    fprintf(of->fp, "%s%d", any ? "|" : "--tensor-type ^blk\\.(",
                            m.t[i].layer);
                    any = true;
                }
                if (!any)
                    continue;
                char suffix[128];
                regex_escape(kinds[k].ll, suffix, sizeof suffix);
                fprintf(of->fp, ")\\.%s$=%s\n", suffix,
                        qp_ggml_type_info((enum qp_ggml_type)t)->name);
                lines++;
            }
        }
        st = qp_outfile_commit(of, err);
        of = NULL;
    }
    if (!st)
        snprintf(r->summary, sizeof r->summary, "%s: %zu --tensor-type lines over "
                 "%zu tensors of %d layers; run: llama-quantize $(cat %s) "
                 "MODEL-F16.gguf OUT.gguf %s", path, lines, quantizable, m.layers, path,
                 ftype_of(base));
    qp_outfile_abort(of);
    free(type);
    model_release(&m);
    return st;
}

/* ---- gptqmodel-dynamic -------------------------------------------------------- */

/* A Python re (and POSIX ERE) regex matching what glob matches of module
 * names, anchored: '*' -> ".*", '?' -> ".", [!x] -> [^x], metacharacters
 * escaped, a trailing ".weight" dropped. False when it does not fit. */
static bool glob_regex(const char *glob, char *buf, size_t size)
{
    size_t len = strlen(glob), k = 0;
    if (len > 7 && !strcmp(glob + len - 7, ".weight"))
        len -= 7;
    if (k + 2 >= size)
        return false;
    buf[k++] = '^';
    buf[k++] = '(';
    for (size_t i = 0; i < len; i++) {
        char c = glob[i];
        if (k + 4 >= size)
            return false;
        if (c == '*') {
            buf[k++] = '.';
            buf[k++] = '*';
        } else if (c == '?') {
            buf[k++] = '.';
        } else if (c == '[') {
            size_t j = i + 1;
            if (j < len && (glob[j] == '!' || glob[j] == '^'))
                j++;
            if (j < len && glob[j] == ']')
                j++;
            while (j < len && glob[j] != ']')
                j++;
            if (j >= len) { /* no closing bracket: a literal '[' */
                buf[k++] = '\\';
                buf[k++] = '[';
                continue;
            }
            buf[k++] = '[';
            for (size_t q = i + 1; q < j && k + 3 < size; q++)
                buf[k++] = q == i + 1 && glob[q] == '!' ? '^' : glob[q];
            buf[k++] = ']';
            i = j;
        } else {
            if (strchr(".^$+(){}|\\", c))
                buf[k++] = '\\';
            buf[k++] = c;
        }
    }
    if (k + 3 >= size)
        return false;
    buf[k++] = ')';
    buf[k++] = '$';
    buf[k] = '\0';
    return true;
}

enum qp_status qp_export_gptq_fields(const struct qp_wscheme *ws,
                                     const char *what, struct qp_json *o,
                                     struct qp_error *err)
{
    struct qp_scheme s = {.w = *ws};
    char sch[QP_SCHEME_MAX];
    qp_scheme_format(&s, sch, sizeof sch);
    unsigned b = ws->f.bits;
    if (ws->family != QP_WFAMILY_INT || ws->gran == QP_GRAN_TENSOR ||
        ws->f.narrow || (b != 2 && b != 3 && b != 4 && b != 8))
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: %s has no GPTQModel form (it "
                       "takes 2, 3, 4 or 8 bits in groups or per channel, "
                       "symmetric or with zero points)", what, sch);
    int64_t g = ws->gran == QP_GRAN_GROUP ? ws->group : -1;
    if (!qp_json_add_num(o, "bits", b) || !qp_json_add_num(o, "group_size", (double)g) ||
        !qp_json_add_bool(o, "sym", !ws->f.asym))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

/* With the model: every module decides under the regexes as under the
 * globs (a check of the translation). */
static enum qp_status check_dynamic(const struct qp_export_llm_opts *o,
                                    const struct model *m, regex_t *re,
                                    const int *rule_of, size_t nre,
                                    struct qp_error *err)
{
    for (size_t k = 0; k < m->n_names; k++) {
        const char *name = m->names[k];
        size_t len = strlen(name);
        if (len < 8 || strcmp(name + len - 7, ".weight") ||
            strncmp(name, "model.layers.", 13))
            continue;
        char mod[512];
        snprintf(mod, sizeof mod, "%.*s", (int)(len - 7), name);
        int by_regex = -1, by_glob = -2;
        for (size_t i = 0; i < nre && by_regex < 0; i++)
            if (!regexec(&re[i], mod, 0, NULL, 0))
                by_regex = rule_of[i];
        const char *names[1] = {name};
        struct qp_wscheme ws;
        qp_recipe_weights(o->recipe, names, 1, &ws, &by_glob);
        if (by_regex != by_glob)
            return qp_fail(err, QP_E_INVAL, "module '%s': the dynamic regexes pick "
                           "rule %d, the recipe rule %d (a glob the translation "
                           "does not cover)", mod, by_regex, by_glob);
    }
    return QP_OK;
}

enum qp_status qp_export_gptqmodel_dynamic(const struct qp_export_llm_opts *o,
                                           const char *path,
                                           struct qp_export_result *r,
                                           struct qp_error *err)
{
    const struct qp_recipe *rc = o->recipe;
    struct model m = {0};
    enum qp_status st = o->model ? model_load(o, &m, err) : QP_OK;
    if (!st)
        st = check_rules(o, &m, r, err);
    struct qp_json *root = qp_json_new_object(), *dyn = NULL;
    regex_t *re = calloc(rc->nrules + 2, sizeof *re);
    int *rule_of = calloc(rc->nrules + 2, sizeof *rule_of);
    size_t nre = 0, plus = 0, minus = 0;
    if (!st && (!root || !re || !rule_of))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    /* the base config: the default, else the first quantizing rule */
    const struct qp_recipe_rule *base = rc->has_default && rc->def.w_said &&
                                                !rc->def.w_float
                                            ? &rc->def : NULL;
    for (size_t i = 0; !base && i < rc->nrules; i++)
        if (rc->rules[i].w_said && !rc->rules[i].w_float)
            base = &rc->rules[i];
    if (!st && !base)
        st = qp_fail(err, QP_E_UNSUPPORTED, "the recipe quantizes no weight: "
                     "GPTQModel has nothing to do");
    if (!st)
        st = qp_export_gptq_fields(&base->scheme.w, base == &rc->def
                                   ? "the default" : base->glob, root, err);
    if (!st && (!qp_json_add_bool(root, "desc_act", false) ||
                !(dyn = qp_json_add_object(root, "dynamic"))))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < rc->nrules; i++) {
        const struct qp_recipe_rule *ru = &rc->rules[i];
        if (!ru->w_said)
            continue;
        char rx[1024], key[1040];
        if (!glob_regex(ru->glob, rx, sizeof rx)) {
            st = qp_fail(err, QP_E_INVAL, "layers \"%s\": too long for a regex",
                         ru->glob);
            break;
        }
        snprintf(key, sizeof key, "%s%s", ru->w_float ? "-:" : "+:", rx);
        if (qp_json_get(dyn, key))
            continue; /* an earlier rule with the same regex decides */
        struct qp_json *v = qp_json_add_object(dyn, key);
        if (!v)
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        else if (!ru->w_float)
            st = qp_export_gptq_fields(&ru->scheme.w, ru->glob, v, err);
        if (!st && regcomp(&re[nre], rx, REG_EXTENDED | REG_NOSUB))
            st = qp_fail(err, QP_E_INVAL, "layers \"%s\": regex '%s' does not "
                         "compile", ru->glob, rx);
        if (!st)
            rule_of[nre++] = (int)i;
        plus += !ru->w_float;
        minus += ru->w_float;
    }
    bool skip_rest = !st && base != &rc->def;
    if (skip_rest && !qp_json_add_object(dyn, "-:.*"))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (skip_rest && !st && !regcomp(&re[nre], ".*", REG_EXTENDED | REG_NOSUB))
        rule_of[nre++] = -2; /* stays float, as an undecided tensor */
    if (!st && o->model)
        st = check_dynamic(o, &m, re, rule_of, nre, err);
    if (!st)
        st = qp_json_save(path, root, true, err);
    if (!st)
        snprintf(r->summary, sizeof r->summary, "%s: GPTQModel QuantizeConfig: "
                 "dynamic with %zu override%s and %zu skip%s%s%s", path, plus,
                 plus == 1 ? "" : "s", minus + skip_rest, minus + skip_rest == 1
                 ? "" : "s", o->model ? ", checked on every module of " : "",
                 o->model ? o->model : "");
    for (size_t i = 0; i < nre; i++)
        regfree(&re[i]);
    free(re);
    free(rule_of);
    qp_json_free(root);
    model_release(&m);
    return st;
}
