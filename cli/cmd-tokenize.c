/* cli/cmd-tokenize.c: qprobe tokenize TOKENIZER --text FILE | --decode
 * IDS.npy: Hugging Face tokenizer.json encoding and decoding
 * (formats/tokenizer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/fileio.h"
#include "core/outfile.h"
#include "core/tensor.h"
#include "formats/npy.h"
#include "formats/tokenizer.h"

static const struct qp_cli cli = {
    "tokenize", "TOKENIZER (--text FILE | --decode IDS.npy | --info) [options]",
    "Encode text to token ids, or decode ids to text, with a Hugging Face "
    "tokenizer.json (TOKENIZER: the file, or a model folder holding it and "
    "its tokenizer_config.json).",
    "Byte-level BPE (Llama 3, GPT-2, Qwen2, SmolLM) and SentencePiece-style "
    "BPE (Llama 2,\n"
    "Mistral). As HF encodes by default, special tokens written in the text "
    "are recognized\n"
    "and nothing is added unless --add-special. Ids print on one line, "
    "separated by spaces.\n"
    "Bytes that are not valid UTF-8 are encoded as bytes (byte tokens or "
    "<0xNN>), and\n"
    "decoding gives back the bytes the tokens stand for.",
    1, 1, "one TOKENIZER",
};

/* The whole of path, or of stdin for "-". */
static enum qp_status read_text(const char *path, char **text, size_t *len,
                                struct qp_error *err)
{
    if (strcmp(path, "-"))
        return qp_read_file(path, (size_t)1 << 30, text, len, err);
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    while (p) {
        n += fread(p + n, 1, cap - n, stdin);
        if (n < cap)
            break;
        char *q = realloc(p, cap * 2);
        if (!q)
            free(p);
        p = q;
        cap *= 2;
    }
    if (!p)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    if (ferror(stdin)) {
        free(p);
        return qp_fail(err, QP_E_IO, "stdin: read failed");
    }
    *text = p;
    *len = n;
    return QP_OK;
}

static void print_ids(const int32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf(i ? " %ld" : "%ld", (long)ids[i]);
    putchar('\n');
}

static enum qp_status save_ids(const char *path, int32_t *ids, size_t n,
                               struct qp_error *err)
{
    struct qp_tensor *t;
    int64_t shape[1] = {(int64_t)n};
    static int32_t none;
    enum qp_status st = qp_tensor_wrap("ids", QP_DTYPE_I32, 1, shape,
                                       n ? ids : &none, n * sizeof *ids, NULL,
                                       &t, err);
    if (!st) {
        st = qp_fmt_npy_save(path, t, err);
        qp_tensor_free(t);
    }
    return st;
}

static enum qp_status encode(const struct qp_tokenizer *tok, const char *path,
                             const char *out, bool add_special, bool lines,
                             struct qp_error *err)
{
    char *text;
    size_t len;
    enum qp_status st = read_text(path, &text, &len, err);
    for (size_t at = 0; !st && at <= len;) {
        size_t end = len;
        if (lines) {
            const char *nl = memchr(text + at, '\n', len - at);
            end = nl ? (size_t)(nl - text) : len;
            if (end == len && at == len && len)
                break; /* no line after the last newline */
        }
        int32_t *ids;
        size_t n;
        st = qp_tokenizer_encode(tok, text + at, end - at, add_special, &ids,
                                 &n, err);
        if (!st && out)
            st = save_ids(out, ids, n, err);
        else if (!st)
            print_ids(ids, n);
        free(ids);
        at = end + 1;
    }
    free(text);
    if (!st && !out && fflush(stdout))
        st = qp_fail(err, QP_E_IO, "stdout: write failed");
    return st;
}

/* Element i of an integer tensor's data (types up to 64 bits). */
static bool int_at(const struct qp_tensor *t, size_t i, int64_t *v)
{
    const char *p = t->data;
    switch (t->dtype) {
    case QP_DTYPE_I8: *v = ((const int8_t *)p)[i]; return true;
    case QP_DTYPE_U8: *v = ((const uint8_t *)p)[i]; return true;
    case QP_DTYPE_I16: *v = ((const int16_t *)p)[i]; return true;
    case QP_DTYPE_U16: *v = ((const uint16_t *)p)[i]; return true;
    case QP_DTYPE_I32: *v = ((const int32_t *)p)[i]; return true;
    case QP_DTYPE_U32: *v = ((const uint32_t *)p)[i]; return true;
    case QP_DTYPE_I64: *v = ((const int64_t *)p)[i]; return true;
    case QP_DTYPE_U64:
        *v = ((const uint64_t *)p)[i] > INT64_MAX ? -1
                                                  : (int64_t)((const uint64_t *)p)[i];
        return true;
    default: return false;
    }
}

/* The ids of an integer .npy file (shape [n] or [1, n]) as int32. */
static enum qp_status load_ids(const char *path, int32_t **ids, size_t *n,
                               struct qp_error *err)
{
    struct qp_tensor *t;
    enum qp_status st = qp_fmt_npy_load(path, NULL, false, &t, err);
    if (st)
        return st;
    size_t numel = qp_tensor_numel(t);
    int64_t v = 0;
    if (!qp_dtype_is_int(t->dtype) || t->ndim < 1 || t->ndim > 2 ||
        (t->ndim == 2 && t->shape[0] != 1))
        st = qp_fail(err, QP_E_FORMAT, "'%s': token ids must be integers of "
                     "shape [n] or [1, n]", path);
    else if (!(*ids = malloc((numel ? numel : 1) * sizeof **ids)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < numel; i++) {
        if (!int_at(t, i, &v))
            st = qp_fail(err, QP_E_FORMAT, "'%s': token ids must be integers",
                         path);
        (*ids)[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
    }
    qp_tensor_free(t);
    *n = numel;
    return st;
}

static enum qp_status decode(const struct qp_tokenizer *tok, const char *path,
                             const char *out, unsigned flags,
                             struct qp_error *err)
{
    int32_t *ids = NULL;
    size_t n = 0, len = 0;
    char *text = NULL;
    enum qp_status st = load_ids(path, &ids, &n, err);
    if (!st && (st = qp_tokenizer_decode(tok, ids, n, flags, &text, &len, err)))
        qp_error_prefix(err, "'%s': ", path);
    struct qp_outfile *of = NULL;
    if (!st && out && !(st = qp_outfile_open(out, &of, err))) {
        if (fwrite(text, 1, len, of->fp) != len) {
            qp_outfile_abort(of);
            st = qp_fail(err, QP_E_IO, "'%s': write failed", out);
        } else {
            st = qp_outfile_commit(of, err);
        }
    }
    if (!st && !out && (fwrite(text, 1, len, stdout) != len || fflush(stdout)))
        st = qp_fail(err, QP_E_IO, "stdout: write failed");
    free(ids);
    free(text);
    return st;
}

static void info(const struct qp_tokenizer *tok)
{
    size_t n = qp_tokenizer_vocab_size(tok), count[QP_TOK_TYPE_COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        count[qp_tokenizer_token_type(tok, (int32_t)i)]++;
    printf("model: %s\npre: %s\nvocab: %zu ids, %zu merges, %zu control, %zu "
           "user-defined, %zu byte, %zu holes\n", qp_tokenizer_model_name(tok),
           qp_tokenizer_pre_name(tok), n, qp_tokenizer_merge_count(tok),
           count[QP_TOK_CONTROL], count[QP_TOK_USER_DEFINED], count[QP_TOK_BYTE],
           count[QP_TOK_UNDEFINED]);
    const char *names[] = {"bos", "eos", "unk", "pad"};
    int32_t ids[] = {qp_tokenizer_bos_id(tok), qp_tokenizer_eos_id(tok),
                     qp_tokenizer_unk_id(tok), qp_tokenizer_pad_id(tok)};
    for (int i = 0; i < 4; i++)
        if (ids[i] >= 0)
            printf("%s: %ld %s\n", names[i], (long)ids[i],
                   qp_tokenizer_token(tok, ids[i], NULL));
        else
            printf("%s: none\n", names[i]);
    printf("add-special: %s%s%s\n", qp_tokenizer_adds_bos(tok) ? "bos" : "",
           qp_tokenizer_adds_bos(tok) && qp_tokenizer_adds_eos(tok) ? " " : "",
           qp_tokenizer_adds_eos(tok) ? "eos"
           : qp_tokenizer_adds_bos(tok) ? "" : "nothing");
}

int cmd_tokenize(int argc, char **argv)
{
    const char *text = NULL, *ids = NULL, *out = NULL;
    bool add_special = false, lines = false, show = false, skip = false;
    struct qp_cli_opt opts[] = {
        QP_OPT_STR_("text", 0, "FILE", "encode the text of FILE ('-' for stdin; "
                    "any bytes)", &text),
        QP_OPT_STR_("decode", 0, "IDS.npy", "decode the token ids of an integer "
                    ".npy file", &ids),
        QP_OPT_STR_("output", 'o', "FILE", "write the ids as .npy int32 (or the "
                    "decoded text) to FILE instead of stdout", &out),
        QP_OPT_FLAG_("add-special", 0, "add the special tokens the "
                     "post-processor adds (e.g. BOS)", &add_special),
        QP_OPT_FLAG_("lines", 0, "encode each line of the text on its own "
                     "(without its newline): one line of ids per line", &lines),
        QP_OPT_FLAG_("skip-special", 0, "decode without the special tokens",
                     &skip),
        QP_OPT_FLAG_("info", 0, "describe the tokenizer (model, pre-tokenizer, "
                     "sizes, special tokens)", &show),
        QP_OPT_END_,
    };
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO)
        return rc;
    unsigned flags = skip ? QP_TOK_DECODE_SKIP_SPECIAL : 0;
    if (!!text + !!ids + show != 1)
        return qp_cli_usage(&cli, "give one of --text, --decode and --info");
    if (lines && out)
        return qp_cli_usage(&cli, "--lines prints to stdout; it takes no -o");
    if (out && !strcmp(out, "-"))
        out = NULL;
    struct qp_error err = {0};
    struct qp_tokenizer *tok;
    if (qp_tokenizer_load(argv[first], &tok, &err))
        return qp_cli_fail(&err);
    enum qp_status st = QP_OK;
    if (text)
        st = encode(tok, text, out, add_special, lines, &err);
    else if (ids)
        st = decode(tok, ids, out, flags, &err);
    else
        info(tok);
    qp_tokenizer_free(tok);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}
