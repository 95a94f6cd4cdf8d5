/* bench/synth-llama.c: writes a synthetic Llama-family checkpoint (random
 * weights with realistic per-layer scales and a few outlier channels; see
 * model/synth-llama.h) for benchmarks and scale tests:
 *
 *   synth-llama CONFIG.json OUTDIR [--seed N] [--shards K]
 *               [--dtype bf16|f16|f32] [--tokenizer FILE|DIR] [--threads N]
 *               [--dry-run]
 *
 * e.g. build/bench/synth-llama bench/configs/llama-3.1-8b.json
 * data/cache/synth-8b --shards 4. Progress goes to stderr when it is a
 * terminal. Exit 0 ok, 1 failure (nothing is left at OUTDIR), 2 usage. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/synth-llama.h"

static const char usage[] =
    "usage: synth-llama CONFIG.json OUTDIR [--seed N] [--shards K]\n"
    "                   [--dtype bf16|f16|f32] [--tokenizer FILE|DIR] [--threads N]\n"
    "Writes random weights shaped by a Hugging Face config.json (llama, mistral,\n"
    "qwen2) into the folder OUTDIR: config.json, model.safetensors (or K shards\n"
    "and model.safetensors.index.json), and the tokenizer files when given.\n"
    "  --seed N        random seed (default 1); the same seed gives the same bytes\n"
    "  --shards K      split the weights into K files of about equal size\n"
    "  --dtype D       stored dtype (default: the config's torch_dtype, else bf16)\n"
    "  --tokenizer F   a tokenizer.json to copy, or a folder holding one (with\n"
    "                  tokenizer_config.json and generation_config.json if present)\n"
    "  --threads N     generator threads (default: QP_THREADS or all CPUs)\n"
    "  --dry-run       print \"N tensors, B bytes\" and write nothing\n";

static void show_progress(void *ctx, const char *label, uint64_t done,
                          uint64_t total)
{
    (void)ctx;
    fprintf(stderr, "\r%s: %.1f of %.1f GB", label, (double)done / 1e9,
            (double)total / 1e9);
    if (done == total)
        fputc('\n', stderr);
}

/* Parses a whole decimal number in [lo, hi] into *out. */
static bool parse_u64(const char *s, unsigned long long lo, unsigned long long hi,
                      unsigned long long *out)
{
    char *end;
    if (!*s || *s == '-')
        return false;
    *out = strtoull(s, &end, 10);
    return !*end && *out >= lo && *out <= hi;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"seed", required_argument, 0, 's'},   {"shards", required_argument, 0, 'k'},
        {"dtype", required_argument, 0, 'd'},  {"tokenizer", required_argument, 0, 't'},
        {"threads", required_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
        {"dry-run", no_argument, 0, 'n'},
        {0, 0, 0, 0}};
    struct qp_synth_opts o = qp_synth_opts_default();
    struct qp_progress progress = {show_progress, NULL};
    if (isatty(2))
        o.progress = &progress;
    int c;
    bool dry = false;
    unsigned long long v;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        bool ok = true;
        if (c == 's')
            ok = parse_u64(optarg, 0, ~0ull, &v) && (o.seed = v, true);
        else if (c == 'k')
            ok = parse_u64(optarg, 1, 99999, &v) && (o.shards = (int)v, true);
        else if (c == 'j')
            ok = parse_u64(optarg, 1, 1024, &v) && (o.threads = (int)v, true);
        else if (c == 't')
            o.tokenizer = optarg;
        else if (c == 'n')
            dry = true;
        else if (c == 'd')
            ok = !strcmp(optarg, "bf16")  ? (o.dtype = QP_DTYPE_BF16, true)
               : !strcmp(optarg, "f16") ? (o.dtype = QP_DTYPE_F16, true)
               : !strcmp(optarg, "f32") ? (o.dtype = QP_DTYPE_F32, true) : false;
        else if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            fputs(usage, stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "synth-llama: invalid value '%s' for --%s\n%s", optarg,
                    c == 's' ? "seed" : c == 'k' ? "shards" : c == 'j' ? "threads"
                                                                       : "dtype",
                    usage);
            return 2;
        }
    }
    if (argc - optind != 2) {
        fputs(usage, stderr);
        return 2;
    }
    struct qp_error err;
    if (dry) {
        size_t n;
        uint64_t bytes;
        if (qp_synth_llama_size(argv[optind], &o, &n, &bytes, &err)) {
            fprintf(stderr, "synth-llama: error: %s\n", err.msg);
            return 1;
        }
        printf("%zu tensors, %llu bytes\n", n, (unsigned long long)bytes);
        return 0;
    }
    if (qp_synth_llama_write(argv[optind], argv[optind + 1], &o, &err)) {
        fprintf(stderr, "%ssynth-llama: error: %s\n", o.progress ? "\n" : "", err.msg);
        return 1;
    }
    return 0;
}
