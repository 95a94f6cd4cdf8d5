/* tests/fuzz/driver.c: a standalone driver for the fuzz targets, so the
 * suite (and `make asan`) runs every target without libFuzzer. Takes the
 * libFuzzer arguments it understands: -runs=N and seed directories/files.
 * Runs each seed as is, then N deterministic mutations (bit flips, byte
 * sets to edge values, truncation, duplication of a slice, random
 * insertion) of random seeds. The same fuzz-*.c builds with clang
 * -fsanitize=fuzzer for real coverage-guided runs. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct blob {
    uint8_t *p;
    size_t n;
};

static struct blob *seeds;
static size_t nseeds;

static void add_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || n > (1 << 24)) {
        fclose(f);
        return;
    }
    uint8_t *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) == (size_t)n) {
        seeds = realloc(seeds, (nseeds + 1) * sizeof *seeds);
        seeds[nseeds++] = (struct blob){p, (size_t)n};
    } else {
        free(p);
    }
    fclose(f);
}

static void add_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        add_file(path);
        return;
    }
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        add_path(p);
    }
    if (d)
        closedir(d);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    long runs = 1000;
    /* what make fuzz-long gives libFuzzer: declared sizes beyond it fail
     * as qprobe's clean error, not as a giant allocation */
    setenv("QP_MAX_ALLOC", "256M", 0);
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-runs=", 6))
            runs = strtol(argv[i] + 6, NULL, 10);
        else if (argv[i][0] != '-')
            add_path(argv[i]);
    }
    for (size_t i = 0; i < nseeds; i++)
        LLVMFuzzerTestOneInput(seeds[i].p, seeds[i].n);
    static const uint8_t edge[] = {0x00, 0xff, 0x7f, 0x80, 0x01, '"', '}', ':'};
    for (long r = 0; r < runs; r++) {
        struct blob s = nseeds ? seeds[next() % nseeds] : (struct blob){NULL, 0};
        size_t cap = s.n * 2 + 64, n = s.n;
        uint8_t *buf = malloc(cap);
        if (s.n)
            memcpy(buf, s.p, s.n);
        int muts = 1 + (int)(next() % 4);
        for (int m = 0; m < muts; m++) {
            uint64_t k = next() % 6;
            if (k == 0 && n) {
                buf[next() % n] ^= (uint8_t)(1u << (next() % 8));
            } else if (k == 1 && n) {
                buf[next() % n] = edge[next() % sizeof edge];
            } else if (k == 2 && n) {
                n = next() % n;
            } else if (k == 3 && n && n < cap / 2) {
                size_t a = next() % n, len = 1 + next() % (n - a);
                if (n + len <= cap) {
                    memmove(buf + a + len, buf + a, n - a);
                    n += len;
                }
            } else if (k == 4 && n + 1 < cap) {
                size_t a = n ? next() % n : 0;
                memmove(buf + a + 1, buf + a, n - a);
                buf[a] = (uint8_t)next();
                n++;
            } else if (n >= 8) { /* overwrite a 4-byte little-endian length */
                size_t a = next() % (n - 4);
                uint32_t v = (uint32_t)next() >> (next() % 32);
                memcpy(buf + a, &v, 4);
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
    }
    printf("ran %zu seeds and %ld mutations\n", nseeds, runs);
    return 0;
}
