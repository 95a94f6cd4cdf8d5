/* formats/tokenizer.c: loading a tokenizer (tokenizer.json and the
 * tokenizer_config.json beside it), what the file implies (byte tables,
 * token types, the special tokens added, the GGUF names), the accessors
 * and freeing. The parsing of tokenizer.json's sections is in
 * tokenizer-json.c, encoding in tokenizer-bpe.c, decoding in
 * tokenizer-decode.c. */
#include "formats/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "formats/json.h"
#include "formats/tokenizer-impl.h"

/* Llama 3's and Qwen2's pre-tokenizer regexes (llama.cpp's "llama-bpe" and
 * "qwen2"), as their tokenizer.json files spell them. */
static const char llama3_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char qwen2_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

void qp_tokenizer_free(struct qp_tokenizer *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_norms; i++) {
        tok_pattern_release(&t->norms[i].pat);
        free(t->norms[i].content);
    }
    for (size_t i = 0; i < t->n_pres; i++) {
        tok_pattern_release(&t->pres[i].pat);
        free(t->pres[i].raw);
    }
    for (size_t i = 0; i < t->n_decs; i++) {
        tok_pattern_release(&t->decs[i].pat);
        free(t->decs[i].content);
    }
    free(t->norms);
    free(t->pres);
    free(t->decs);
    free(t->pool);
    free(t->tokens);
    free(t->made_by);
    free(t->vocab_slots);
    free(t->merges);
    free(t->merge_slots);
    free(t->pair_slots);
    free(t->added);
    free(t->trie);
    free(t->prefix.v);
    free(t->suffix.v);
    free(t);
}

/* ---- tokenizer_config.json ---------------------------------------------- */

/* The id of the token a config key names (a string or an AddedToken
 * object {"content": ...}); -1 when the key is absent or null. */
static enum qp_status config_token(const struct qp_tokenizer *t,
                                   const struct qp_json *cfg, const char *key,
                                   bool must_exist, int32_t *id,
                                   struct qp_error *err)
{
    const struct qp_json *v = qp_json_get(cfg, key);
    const char *s = NULL;
    *id = -1;
    if (!v || qp_json_type(v) == QP_JSON_NULL)
        return QP_OK;
    if (!qp_json_str(v, &s) && !qp_json_str(qp_json_get(v, "content"), &s))
        return qp_fail(err, QP_E_FORMAT, "'%s' is neither a string nor an "
                       "object with a 'content' string", key);
    *id = qp_tokenizer_token_id(t, s, strlen(s));
    if (*id < 0 && must_exist)
        return qp_fail(err, QP_E_FORMAT, "%s '%.60s' is not a token of the "
                       "tokenizer", key, s);
    return QP_OK;
}

static enum qp_status config_bool(const struct qp_json *cfg, const char *key,
                                  bool def, bool *out, struct qp_error *err)
{
    const struct qp_json *v = qp_json_get(cfg, key);
    *out = def;
    if (!v || qp_json_type(v) == QP_JSON_NULL || qp_json_bool(v, out))
        return QP_OK;
    return qp_fail(err, QP_E_FORMAT, "'%s' is not a boolean", key);
}

/* The classes whose fast tokenizer rebuilds its post-processor from
 * add_bos_token / add_eos_token (transformers' update_post_processor). */
static bool llama_class(const char *c)
{
    static const char *const names[] = {"LlamaTokenizer", "CodeLlamaTokenizer",
                                        "GemmaTokenizer"};
    for (size_t i = 0; c && i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(c, names[i], n) && (!c[n] || !strcmp(c + n, "Fast")))
            return true;
    }
    return false;
}

static enum qp_status config(struct qp_tokenizer *t, const struct qp_json *cfg,
                             struct qp_error *err)
{
    if (qp_json_type(cfg) != QP_JSON_OBJECT)
        return qp_fail(err, QP_E_FORMAT, "not a JSON object");
    const char *cls = NULL;
    bool add_bos, add_eos;
    qp_json_str(qp_json_get(cfg, "tokenizer_class"), &cls);
    enum qp_status st = config_token(t, cfg, "bos_token", true, &t->bos_id, err);
    st = st ? st : config_token(t, cfg, "eos_token", true, &t->eos_id, err);
    st = st ? st : config_token(t, cfg, "pad_token", false, &t->pad_id, err);
    st = st ? st : config_bool(cfg, "clean_up_tokenization_spaces", true,
                               &t->clean_up, err);
    st = st ? st : config_bool(cfg, "add_bos_token", true, &add_bos, err);
    st = st ? st : config_bool(cfg, "add_eos_token", false, &add_eos, err);
    if (st || !llama_class(cls))
        return st;
    if ((add_bos && t->bos_id < 0) || (add_eos && t->eos_id < 0))
        return qp_fail(err, QP_E_FORMAT, "add_%s_token is true but there is no "
                       "%s_token", add_bos ? "bos" : "eos",
                       add_bos ? "bos" : "eos");
    t->prefix.n = t->suffix.n = 0;
    if ((add_bos && !tok_ids_add(&t->prefix, t->bos_id)) ||
        (add_eos && !tok_ids_add(&t->suffix, t->eos_id)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    return QP_OK;
}

/* ---- what the file implies ---------------------------------------------- */

static const char *pre_name(const struct qp_tokenizer *t)
{
    if (!t->byte_level)
        return "default";
    for (size_t i = 0; i < t->n_pres; i++) {
        const char *raw = t->pres[i].raw;
        if (raw && !strcmp(raw, llama3_regex))
            return "llama-bpe";
        if (raw && !strcmp(raw, qwen2_regex))
            return "qwen2";
    }
    const struct tok_pre *p = t->pres;
    if (t->n_pres == 1 && p[0].use_regex)
        return "gpt-2";
    if (t->n_pres == 2 && p[0].kind == TOK_PRE_DIGITS && p[0].individual &&
        p[1].use_regex)
        return "smollm";
    return "default";
}

static enum qp_status finish(struct qp_tokenizer *t, struct qp_error *err)
{
    char name[8];
    for (unsigned b = 0; b < 256; b++) {
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->fallback_ids[b] = tok_vocab_get(t, name, 6);
        char ch[2];
        uint32_t cp = t->byte_cps[b] = (uint16_t)tok_byte_char((unsigned char)b);
        size_t n = cp < 0x80 ? 1 : 2;
        ch[0] = (char)(n == 1 ? cp : (0xc0 | cp >> 6));
        ch[1] = (char)(0x80 | (cp & 0x3f));
        t->byte_ids[b] = t->byte_level ? tok_vocab_get(t, ch, n) : -1;
    }
    for (size_t i = 0; i < t->n_added; i++) {
        struct tok_entry *e = &t->tokens[t->added[i].id];
        e->type = t->added[i].special ? QP_TOK_CONTROL : QP_TOK_USER_DEFINED;
    }
    for (unsigned b = 0; t->byte_fallback && b < 256; b++)
        if (t->fallback_ids[b] >= 0 && !t->tokens[t->fallback_ids[b]].added)
            t->tokens[t->fallback_ids[b]].type = QP_TOK_BYTE;
    if (t->unk_id >= 0)
        t->tokens[t->unk_id].type = QP_TOK_UNKNOWN;
    const struct tok_ids *lists[2] = {&t->prefix, &t->suffix};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < lists[k]->n; i++)
            if (qp_tokenizer_token_type(t, lists[k]->v[i]) == QP_TOK_UNDEFINED)
                return qp_fail(err, QP_E_FORMAT, "post_processor: id %ld is not "
                               "a token", (long)lists[k]->v[i]);
    t->pre_name = pre_name(t);
    t->made_by = malloc((t->n_tokens ? t->n_tokens : 1) * sizeof *t->made_by);
    if (!t->made_by)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_tokens; i++)
        t->made_by[i] = -1;
    for (size_t r = t->n_merges; r-- > 0;)
        t->made_by[t->merges[r].result] = (int32_t)r;
    enum qp_status st = t->byte_level ? QP_OK : tok_pair_index(t, err);
    return st ? st : tok_added_index(t, err);
}

enum qp_status qp_tokenizer_parse(const char *json, const char *config_json,
                                  const char *what, struct qp_tokenizer **out,
                                  struct qp_error *err)
{
    *out = NULL;
    struct qp_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    t->unk_id = t->bos_id = t->eos_id = t->pad_id = -1;
    t->clean_up = true;
    struct qp_json *root = NULL, *cfg = NULL;
    char cwhat[600];
    snprintf(cwhat, sizeof cwhat, "the tokenizer_config.json beside %s", what);
    enum qp_status st = qp_json_parse(json, what, &root, err);
    if (!st && (st = tok_parse_sections(t, root, err)))
        qp_error_prefix(err, "%s: ", what);
    if (!st && config_json &&
        !(st = qp_json_parse(config_json, cwhat, &cfg, err)) &&
        (st = config(t, cfg, err)))
        qp_error_prefix(err, "%s: ", cwhat);
    /* without a config, BOS/EOS are what the post-processor adds */
    if (!st && t->bos_id < 0 && t->prefix.n)
        t->bos_id = t->prefix.v[0];
    if (!st && t->eos_id < 0 && t->suffix.n)
        t->eos_id = t->suffix.v[t->suffix.n - 1];
    if (!st && (st = finish(t, err)))
        qp_error_prefix(err, "%s: ", what);
    qp_json_free(root);
    qp_json_free(cfg);
    if (st) {
        qp_tokenizer_free(t);
        return st;
    }
    *out = t;
    return QP_OK;
}

enum qp_status qp_tokenizer_load(const char *path, struct qp_tokenizer **tok,
                                 struct qp_error *err)
{
    *tok = NULL;
    bool dir = qp_is_dir(path);
    char *json_path = dir ? qp_path_join(path, "tokenizer.json") : strdup(path);
    char *folder = dir ? strdup(path) : strdup(path);
    if (folder && !dir) {
        char *slash = strrchr(folder, '/');
        if (slash)
            slash[1] = '\0';
        else
            folder[0] = '\0';
    }
    char *cfg_path = folder ? qp_path_join(folder, "tokenizer_config.json") : NULL;
    char *json = NULL, *cfg = NULL;
    enum qp_status st = QP_OK;
    struct stat sb;
    if (!json_path || !cfg_path)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else if (dir && stat(json_path, &sb) != 0)
        st = qp_fail(err, QP_E_IO, "'%s' has no tokenizer.json", path);
    if (!st)
        st = qp_read_file(json_path, (size_t)1 << 30, &json, NULL, err);
    if (!st && stat(cfg_path, &sb) == 0)
        st = qp_read_file(cfg_path, (size_t)64 << 20, &cfg, NULL, err);
    if (!st) {
        char what[600];
        snprintf(what, sizeof what, "'%s'", json_path);
        st = qp_tokenizer_parse(json, cfg, what, tok, err);
    }
    free(json);
    free(cfg);
    free(json_path);
    free(cfg_path);
    free(folder);
    return st;
}

/* ---- accessors ---------------------------------------------------------- */

size_t qp_tokenizer_vocab_size(const struct qp_tokenizer *t)
{
    return t->n_tokens;
}

const char *qp_tokenizer_token(const struct qp_tokenizer *t, int32_t id,
                               size_t *len)
{
    if (qp_tokenizer_token_type(t, id) == QP_TOK_UNDEFINED)
        return NULL;
    if (len)
        *len = t->tokens[id].len;
    return tok_str(t, id);
}

enum qp_tok_type qp_tokenizer_token_type(const struct qp_tokenizer *t,
                                         int32_t id)
{
    if (id < 0 || (size_t)id >= t->n_tokens)
        return QP_TOK_UNDEFINED;
    return (enum qp_tok_type)t->tokens[id].type;
}

int32_t qp_tokenizer_token_id(const struct qp_tokenizer *t, const char *s,
                              size_t len)
{
    for (size_t i = 0; i < t->n_added; i++) {
        const struct tok_entry *e = &t->tokens[t->added[i].id];
        if (e->len == len && !memcmp(t->pool + e->off, s, len))
            return t->added[i].id;
    }
    return tok_vocab_get(t, s, len);
}

int32_t qp_tokenizer_bos_id(const struct qp_tokenizer *t) { return t->bos_id; }
int32_t qp_tokenizer_eos_id(const struct qp_tokenizer *t) { return t->eos_id; }
int32_t qp_tokenizer_unk_id(const struct qp_tokenizer *t) { return t->unk_id; }
int32_t qp_tokenizer_pad_id(const struct qp_tokenizer *t) { return t->pad_id; }

bool qp_tokenizer_adds_bos(const struct qp_tokenizer *t)
{
    return t->bos_id >= 0 && t->prefix.n && t->prefix.v[0] == t->bos_id;
}

bool qp_tokenizer_adds_eos(const struct qp_tokenizer *t)
{
    return t->eos_id >= 0 && t->suffix.n &&
           t->suffix.v[t->suffix.n - 1] == t->eos_id;
}

bool qp_tokenizer_cleans_up_spaces(const struct qp_tokenizer *t)
{
    return t->clean_up;
}

const char *qp_tokenizer_model_name(const struct qp_tokenizer *t)
{
    return t->byte_level ? "gpt2" : "llama";
}

const char *qp_tokenizer_pre_name(const struct qp_tokenizer *t)
{
    return t->pre_name;
}

float qp_tokenizer_token_score(const struct qp_tokenizer *t, int32_t id)
{
    enum qp_tok_type type = qp_tokenizer_token_type(t, id);
    if (type != QP_TOK_NORMAL && type != QP_TOK_UNKNOWN)
        return 0.0f;
    return t->made_by[id] >= 0 ? -(float)t->made_by[id] : -(float)t->n_merges;
}

size_t qp_tokenizer_merge_count(const struct qp_tokenizer *t)
{
    return t->n_merges;
}

void qp_tokenizer_merge(const struct qp_tokenizer *t, size_t i, int32_t *left,
                        int32_t *right, int32_t *result)
{
    *left = t->merges[i].left;
    *right = t->merges[i].right;
    *result = t->merges[i].result;
}
