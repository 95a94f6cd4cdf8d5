/* tests/oracle/llamacpp-driver.c: llama.cpp (the prebuilt CPU libraries of
 * npm's @node-llama-cpp/linux-x64, scripts/llamacpp-setup.sh) as an oracle
 * for qprobe's GGUF export. Built against llama.cpp's own llama.h (types
 * only) and loaded with dlopen from LIBDIR, so nothing of llama.cpp is
 * linked or committed.
 *
 *   llamacpp-driver tokenize LIBDIR MODEL.gguf TEXT_FILE
 *       the text's ids on one line (llama_tokenize with add_special false
 *       and parse_special true: special tokens written in the text are
 *       recognized, nothing is added, as `qprobe tokenize` does)
 *   llamacpp-driver logits LIBDIR MODEL.gguf IDS.npy OUT.npy
 *       one forward pass over the ids (int32 or int64 .npy, one sequence)
 *       with every position's logits written to OUT.npy, float32 [T, vocab];
 *       the KV cache is F32 and flash attention off, so an F32 model is
 *       evaluated in F32 throughout (quantized matmuls still quantize their
 *       activations to Q8 as llama.cpp always does)
 *   llamacpp-driver quantize LIBDIR IN.gguf OUT.gguf TYPE
 *       llama.cpp's own quantizer (llama_model_quantize, as llama-quantize
 *       --pure IN OUT TYPE): every matrix in TYPE (q8_0, q4_0, q4_1, q5_0,
 *       q4_K, q6_K) with llama.cpp's fallbacks, no importance matrix
 *   llamacpp-driver tensors LIBDIR FILE.gguf
 *       the file's tensors as ggml's own GGUF reader (gguf_init_from_file)
 *       sees them, sorted by name by the caller: "NAME TYPE BYTES FNV1A64" a
 *       line, the hash over the tensor's data bytes, so two files' listings
 *       are equal exactly when every tensor has the same type and bytes
 *   llamacpp-driver bench LIBDIR MODEL.gguf N_TOKENS THREADS REPEATS
 *       prefill of N_TOKENS synthetic ids (id i % vocab) in one batch, best
 *       of REPEATS: prints "tokens_per_s X"
 *
 * Exit 0 on success, 1 on any error (message on stderr). llama.cpp's log
 * goes to stderr only when QP_LLAMACPP_LOG is set. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf.h"
#include "llama.h"

static struct {
    __typeof__(&llama_backend_init) backend_init;
    __typeof__(&llama_log_set) log_set;
    __typeof__(&llama_model_default_params) model_default_params;
    __typeof__(&llama_context_default_params) context_default_params;
    __typeof__(&llama_model_load_from_file) model_load_from_file;
    __typeof__(&llama_model_free) model_free;
    __typeof__(&llama_init_from_model) init_from_model;
    __typeof__(&llama_free) free_ctx;
    __typeof__(&llama_model_get_vocab) model_get_vocab;
    __typeof__(&llama_vocab_n_tokens) vocab_n_tokens;
    __typeof__(&llama_tokenize) tokenize;
    __typeof__(&llama_batch_init) batch_init;
    __typeof__(&llama_batch_free) batch_free;
    __typeof__(&llama_decode) decode;
    __typeof__(&llama_get_logits_ith) get_logits_ith;
    __typeof__(&llama_memory_clear) memory_clear;
    __typeof__(&llama_get_memory) get_memory;
    __typeof__(&llama_model_quantize_default_params) quantize_default_params;
    __typeof__(&llama_model_quantize) quantize;
    __typeof__(&ggml_backend_load_all_from_path) load_all_from_path;
    __typeof__(&gguf_init_from_file) gguf_init;
    __typeof__(&gguf_free) gguf_free;
    __typeof__(&gguf_get_n_tensors) gguf_n_tensors;
    __typeof__(&gguf_get_tensor_name) gguf_tensor_name;
    __typeof__(&gguf_get_tensor_type) gguf_tensor_type;
    __typeof__(&gguf_get_tensor_offset) gguf_tensor_offset;
    __typeof__(&gguf_get_tensor_size) gguf_tensor_size;
    __typeof__(&gguf_get_data_offset) gguf_data_offset;
    __typeof__(&ggml_type_name) type_name;
} L;

static int die(const char *fmt, const char *a)
    __attribute__((format(printf, 1, 0)));
static int die(const char *fmt, const char *a)
{
    fprintf(stderr, "llamacpp-driver: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 1;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)level, (void)text, (void)user;
}

static int load_libs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml.v0.5.0.so", dir);
    void *ggml = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", dir);
    void *llama = ggml ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!llama)
        return die("cannot load llama.cpp: %s", dlerror());
#define SYM(h, field, name)                                                   \
    if (!(*(void **)&L.field = dlsym(h, name)))                              \
        return die("llama.cpp lacks %s", name);
    SYM(llama, backend_init, "llama_backend_init")
    SYM(llama, log_set, "llama_log_set")
    SYM(llama, model_default_params, "llama_model_default_params")
    SYM(llama, context_default_params, "llama_context_default_params")
    SYM(llama, model_load_from_file, "llama_model_load_from_file")
    SYM(llama, model_free, "llama_model_free")
    SYM(llama, init_from_model, "llama_init_from_model")
    SYM(llama, free_ctx, "llama_free")
    SYM(llama, model_get_vocab, "llama_model_get_vocab")
    SYM(llama, vocab_n_tokens, "llama_vocab_n_tokens")
    SYM(llama, tokenize, "llama_tokenize")
    SYM(llama, batch_init, "llama_batch_init")
    SYM(llama, batch_free, "llama_batch_free")
    SYM(llama, decode, "llama_decode")
    SYM(llama, get_logits_ith, "llama_get_logits_ith")
    SYM(llama, memory_clear, "llama_memory_clear")
    SYM(llama, get_memory, "llama_get_memory")
    SYM(llama, quantize_default_params, "llama_model_quantize_default_params")
    SYM(llama, quantize, "llama_model_quantize")
    SYM(ggml, load_all_from_path, "ggml_backend_load_all_from_path")
    snprintf(path, sizeof path, "%s/libggml-base.so", dir);
    void *base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!base)
        return die("cannot load ggml-base: %s", dlerror());
    SYM(base, gguf_init, "gguf_init_from_file")
    SYM(base, gguf_free, "gguf_free")
    SYM(base, gguf_n_tensors, "gguf_get_n_tensors")
    SYM(base, gguf_tensor_name, "gguf_get_tensor_name")
    SYM(base, gguf_tensor_type, "gguf_get_tensor_type")
    SYM(base, gguf_tensor_offset, "gguf_get_tensor_offset")
    SYM(base, gguf_tensor_size, "gguf_get_tensor_size")
    SYM(base, gguf_data_offset, "gguf_get_data_offset")
    SYM(base, type_name, "ggml_type_name")
#undef SYM
    if (!getenv("QP_LLAMACPP_LOG"))
        L.log_set(quiet_log, NULL);
    L.load_all_from_path(dir);
    L.backend_init();
    return 0;
}

static struct llama_model *open_model(const char *path)
{
    struct llama_model_params mp = L.model_default_params();
    mp.n_gpu_layers = 0;
    return L.model_load_from_file(path, mp);
}

static struct llama_context *open_ctx(struct llama_model *m, int n_tokens,
                                      int threads)
{
    struct llama_context_params cp = L.context_default_params();
    cp.n_ctx = (uint32_t)(n_tokens < 64 ? 64 : n_tokens);
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    if (threads > 0)
        cp.n_threads = cp.n_threads_batch = threads;
    return L.init_from_model(m, cp);
}

static char *read_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (!fseek(f, 0, SEEK_END) && (*len = ftell(f)) >= 0 &&
        !fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)*len + 1)) &&
        fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* Ids of a one-sequence int32 / int64 .npy (any rank; C order). */
static int32_t *read_ids(const char *path, int *n)
{
    long len;
    char *buf = read_file(path, &len);
    if (!buf || len < 10 || memcmp(buf, "\x93NUMPY", 6)) {
        free(buf);
        return NULL;
    }
    size_t hl = buf[6] == 1 ? (size_t)(unsigned char)buf[8] |
                                  (size_t)(unsigned char)buf[9] << 8
                            : 0;
    size_t off = 10 + hl;
    int wide = strstr(buf + 10, "'<i8'") != NULL;
    if (!hl || off > (size_t)len || (!wide && !strstr(buf + 10, "'<i4'"))) {
        free(buf);
        return NULL;
    }
    size_t es = wide ? 8 : 4, count = ((size_t)len - off) / es;
    int32_t *ids = malloc((count + 1) * sizeof *ids);
    for (size_t i = 0; ids && i < count; i++) {
        int64_t v = 0;
        memcpy(&v, buf + off + i * es, es);
        ids[i] = (int32_t)v;
    }
    *n = (int)count;
    free(buf);
    return ids;
}

static int write_npy(const char *path, const float *x, int rows, int cols)
{
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (%d, %d), }", rows, cols);
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f)
        return die("cannot write '%s'", path);
    unsigned short hl = (unsigned short)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(hdr, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(x, sizeof *x, (size_t)rows * (size_t)cols, f);
    return fclose(f) ? die("cannot write '%s'", path) : 0;
}

/* One batch of n ids at positions 0.., logits at every position when all. */
static int decode(struct llama_context *c, const int32_t *ids, int n, int all)
{
    struct llama_batch b = L.batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = (int8_t)(all || i == n - 1);
    }
    b.n_tokens = n;
    int rc = L.decode(c, b);
    L.batch_free(b);
    return rc ? die("llama_decode failed%s", "") : 0;
}

static int cmd_tokenize(struct llama_model *m, const char *text_path)
{
    long len;
    char *text = read_file(text_path, &len);
    if (!text)
        return die("cannot read '%s'", text_path);
    const struct llama_vocab *v = L.model_get_vocab(m);
    int cap = (int)len + 16;
    llama_token *ids = malloc((size_t)cap * sizeof *ids);
    int n = ids ? L.tokenize(v, text, (int32_t)len, ids, cap, false, true) : -1;
    free(text);
    if (n < 0) {
        free(ids);
        return die("llama_tokenize failed on '%s'", text_path);
    }
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? " " : "", ids[i]);
    printf("\n");
    free(ids);
    return 0;
}

static int cmd_logits(struct llama_model *m, const char *ids_path, const char *out)
{
    int n = 0;
    int32_t *ids = read_ids(ids_path, &n);
    if (!ids || n <= 0)
        return die("'%s' is not a non-empty int32/int64 .npy", ids_path);
    int vocab = L.vocab_n_tokens(L.model_get_vocab(m));
    struct llama_context *c = open_ctx(m, n, 0);
    float *all = c ? malloc((size_t)n * (size_t)vocab * sizeof *all) : NULL;
    int rc = !c     ? die("cannot create a context%s", "")
             : !all ? die("out of memory%s", "")
                    : decode(c, ids, n, 1);
    for (int i = 0; !rc && i < n; i++) {
        const float *l = L.get_logits_ith(c, i);
        if (!l)
            rc = die("no logits%s", "");
        else
            memcpy(all + (size_t)i * (size_t)vocab, l, (size_t)vocab * sizeof *l);
    }
    if (!rc)
        rc = write_npy(out, all, n, vocab);
    free(all);
    free(ids);
    if (c)
        L.free_ctx(c);
    return rc;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmd_bench(struct llama_model *m, int n, int threads, int repeats)
{
    int vocab = L.vocab_n_tokens(L.model_get_vocab(m));
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    struct llama_context *c = ids ? open_ctx(m, n, threads) : NULL;
    if (!c) {
        free(ids);
        return die("cannot create a context%s", "");
    }
    for (int i = 0; i < n; i++)
        ids[i] = i % vocab;
    double best = 0;
    int rc = 0;
    for (int r = 0; !rc && r < repeats; r++) {
        L.memory_clear(L.get_memory(c), true);
        double t0 = now();
        rc = decode(c, ids, n, 0);
        double dt = now() - t0;
        if (!rc && (best == 0 || dt < best))
            best = dt;
    }
    if (!rc)
        printf("tokens_per_s %.3f\n", n / best);
    free(ids);
    L.free_ctx(c);
    return rc;
}

static int cmd_quantize(const char *in, const char *out, const char *type)
{
    static const struct { const char *name; enum llama_ftype ftype; } types[] = {
        {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0}, {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
        {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1}, {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
        {"q4_K", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"q6_K", LLAMA_FTYPE_MOSTLY_Q6_K}};
    struct llama_model_quantize_params qp = L.quantize_default_params();
    qp.pure = true;
    qp.nthread = 1;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i].name)) {
            qp.ftype = types[i].ftype;
            return L.quantize(in, out, &qp) ? die("llama_model_quantize failed on "
                                                  "'%s'", in) : 0;
        }
    return die("unknown type '%s'", type);
}

static int cmd_tensors(const char *path)
{
    struct gguf_init_params ip = {.no_alloc = true, .ctx = NULL};
    struct gguf_context *g = L.gguf_init(path, ip);
    FILE *f = g ? fopen(path, "rb") : NULL;
    if (!f) {
        if (g)
            L.gguf_free(g);
        return die("ggml cannot read '%s'", path);
    }
    int rc = 0;
    size_t base = L.gguf_data_offset(g);
    unsigned char buf[65536];
    for (int64_t i = 0; !rc && i < L.gguf_n_tensors(g); i++) {
        size_t left = L.gguf_tensor_size(g, i);
        uint64_t h = 1469598103934665603ull;
        if (fseek(f, (long)(base + L.gguf_tensor_offset(g, i)), SEEK_SET))
            rc = die("cannot seek in '%s'", path);
        printf("%s %s %zu ", L.gguf_tensor_name(g, i),
               L.type_name(L.gguf_tensor_type(g, i)), left);
        while (!rc && left) {
            size_t k = left < sizeof buf ? left : sizeof buf;
            if (fread(buf, 1, k, f) != k)
                rc = die("short read in '%s'", path);
            for (size_t j = 0; !rc && j < k; j++)
                h = (h ^ buf[j]) * 1099511628211ull;
            left -= k;
        }
        printf("%016llx\n", (unsigned long long)h);
    }
    fclose(f);
    L.gguf_free(g);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return die("usage: llamacpp-driver tokenize|logits|bench LIBDIR MODEL.gguf "
                   "ARGS... (see the source%s)", "");
    if (load_libs(argv[2]))
        return 1;
    if (!strcmp(argv[1], "tensors"))
        return cmd_tensors(argv[3]);
    if (!strcmp(argv[1], "quantize"))
        return argc == 6 ? cmd_quantize(argv[3], argv[4], argv[5])
                         : die("quantize takes LIBDIR IN OUT TYPE%s", "");
    struct llama_model *m = open_model(argv[3]);
    if (!m)
        return die("llama.cpp cannot load '%s'", argv[3]);
    int rc;
    if (!strcmp(argv[1], "tokenize"))
        rc = cmd_tokenize(m, argv[4]);
    else if (!strcmp(argv[1], "logits") && argc == 6)
        rc = cmd_logits(m, argv[4], argv[5]);
    else if (!strcmp(argv[1], "bench") && argc == 7)
        rc = cmd_bench(m, atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    else
        rc = die("unknown command or arguments: %s", argv[1]);
    L.model_free(m);
    return rc;
}
