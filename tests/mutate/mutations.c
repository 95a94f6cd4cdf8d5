/* tests/mutate/mutations.c: the mutations (tests/mutate/mutate.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mutate/mutate.h"

/* Replaces b[at, at + cut) with ins[0, n). */
static bool splice(struct mut_buf *b, size_t at, size_t cut, const void *ins,
                   size_t n)
{
    if (at > b->n)
        at = b->n;
    if (cut > b->n - at)
        cut = b->n - at;
    size_t len = b->n - cut + n;
    uint8_t *p = malloc(len + 1);
    if (!p)
        return false;
    memcpy(p, b->p, at);
    memcpy(p + at, ins, n);
    memcpy(p + at + n, b->p + at + cut, b->n - at - cut);
    free(b->p);
    b->p = p;
    b->n = len;
    return true;
}

/* Sizes and counts as a hostile file states them. */
static const uint64_t edge[] = {
    0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000,
    0xffffffff, 0x100000000ull, 0xffffffffffull, 0x7fffffffffffffffull,
    0x8000000000000000ull, 0xffffffffffffffffull, 0xfffffffffffffff0ull};

/* A field of 1, 2, 4 or 8 bytes set to an edge value: mostly in the first
 * 64 bytes (headers, length prefixes), aligned to its width. */
static void set_field(struct mut_rng *r, struct mut_buf *b, char *what,
                      size_t ws)
{
    static const size_t widths[] = {1, 2, 4, 8};
    size_t w = widths[mut_below(r, 4)];
    if (b->n < w)
        return;
    size_t span = mut_below(r, 2) ? (b->n < 64 ? b->n : 64) : b->n;
    size_t at = mut_below(r, span - w + 1) / w * w;
    uint64_t v = edge[mut_below(r, sizeof edge / sizeof edge[0])];
    for (size_t i = 0; i < w; i++)
        b->p[at + i] = (uint8_t)(v >> (8 * i));
    snprintf(what, ws, "field of %zu bytes at %zu := %#llx", w, at,
             (unsigned long long)v);
}

/* f32 NaN, Inf, -Inf, FLT_MAX, -FLT_MAX, a denormal over a few values past
 * the first 64 bytes (the data of most files). */
static void nan_inf(struct mut_rng *r, struct mut_buf *b, char *what, size_t ws)
{
    static const uint32_t bits[] = {0x7fc00000, 0x7f800000, 0xff800000,
                                    0x7f7fffff, 0xff7fffff, 0x00000001};
    if (b->n < 72)
        return;
    size_t at = 64 + mut_below(r, b->n - 68) / 4 * 4, k = 1 + mut_below(r, 8);
    uint32_t v = bits[mut_below(r, sizeof bits / sizeof bits[0])];
    for (size_t i = 0; i < k && at + 4 <= b->n; i++, at += 4)
        memcpy(b->p + at, &v, 4);
    snprintf(what, ws, "%zu f32 values := %#x", k, v);
}

/* Offsets of the places in text[0, n) matching a kind of token. */
static size_t find_all(const uint8_t *t, size_t n, int kind, size_t *at,
                       size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++) {
        bool digit = t[i] >= '0' && t[i] <= '9';
        bool start = i == 0 || !(t[i - 1] >= '0' && t[i - 1] <= '9');
        if ((kind == 0 && digit && start) ||          /* a number */
            (kind == 1 && (t[i] == '"' || t[i] == '\'')) || /* a quote */
            (kind == 2 && (t[i] == '{' || t[i] == '[' || t[i] == '(')))
            at[k++] = i;
    }
    return k;
}

static const char *const hostile_numbers[] = {
    "4294967296", "-1", "1e400", "NaN", "Infinity", "-0", "1e308",
    "18446744073709551616", "9223372036854775807", "4611686018427387904",
    "0.5", "99999999999999999999999", "65536"};

/* One edit of a text: a number replaced by a hostile one, a key (a quoted
 * string followed by ':') duplicated, a value nested 3000 levels deep, a
 * shape whose product overflows. */
static bool text_edit(struct mut_rng *r, struct mut_buf *b, char *what,
                      size_t ws)
{
    size_t at[512], k;
    switch (mut_below(r, 4)) {
    case 0:
        if (!(k = find_all(b->p, b->n, 0, at, 512)))
            return true;
        {
            size_t i = at[mut_below(r, k)], e = i;
            while (e < b->n && ((b->p[e] >= '0' && b->p[e] <= '9') || b->p[e] == '.'))
                e++;
            const char *v = hostile_numbers[mut_below(r, sizeof hostile_numbers /
                                                             sizeof hostile_numbers[0])];
            snprintf(what, ws, "number at %zu := %s", i, v);
            return splice(b, i, e - i, v, strlen(v));
        }
    case 1: /* "key": value, duplicated just after itself */
        if (!(k = find_all(b->p, b->n, 1, at, 512)))
            return true;
        {
            size_t i = at[mut_below(r, k)], e = i + 1;
            while (e < b->n && b->p[e] != b->p[i])
                e++;
            size_t v = e + 1;
            while (v < b->n && b->p[v] != ',' && b->p[v] != '}' && b->p[v] != '\n')
                v++;
            if (e >= b->n || v >= b->n)
                return true;
            /* ",<the member>" after the member */
            size_t len = v - i;
            uint8_t *ins = malloc(len + 1);
            if (!ins)
                return false;
            ins[0] = ',';
            memcpy(ins + 1, b->p + i, len);
            snprintf(what, ws, "member at %zu (%zu bytes) duplicated", i, len);
            bool ok = splice(b, v, 0, ins, len + 1);
            free(ins);
            return ok;
        }
    case 2: {
        size_t depth = 3000, i = mut_below(r, b->n + 1);
        char *deep = malloc(2 * depth + 1);
        if (!deep)
            return false;
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        snprintf(what, ws, "%zu nested arrays at %zu", depth, i);
        bool ok = splice(b, i, 0, deep, 2 * depth);
        free(deep);
        return ok;
    }
    default: /* a shape (a bracket followed by numbers) made to overflow */
        if (!(k = find_all(b->p, b->n, 2, at, 512)))
            return true;
        {
            size_t i = at[mut_below(r, k)] + 1;
            static const char *const shapes[] = {
                "4294967296, 4294967296, ", "9223372036854775807, 2, ",
                "-3, ", "0, 18446744073709551615, ", "65536, 65536, 65536, "};
            const char *s = shapes[mut_below(r, sizeof shapes / sizeof shapes[0])];
            snprintf(what, ws, "shape at %zu prefixed with %s", i, s);
            return splice(b, i, 0, s, strlen(s));
        }
    }
}

/* A text edit of the header of an npy (u16 length at 8) or safetensors
 * (u64 length at 0) file, with its length field updated, so the parser of
 * the header sees the edit rather than a broken length. */
static bool header_edit(struct mut_rng *r, struct mut_buf *b,
                        enum mut_layout layout, char *what, size_t ws)
{
    size_t lp = layout == MUT_NPY ? 8 : 0, lw = layout == MUT_NPY ? 2 : 8;
    size_t start = lp + lw;
    if (b->n < start)
        return true;
    uint64_t len = 0;
    for (size_t i = 0; i < lw; i++)
        len |= (uint64_t)b->p[lp + i] << (8 * i);
    if (len > b->n - start)
        return true;
    struct mut_buf h = {malloc(len + 1), len};
    if (!h.p)
        return false;
    memcpy(h.p, b->p + start, len);
    bool ok = text_edit(r, &h, what, ws);
    uint64_t most = lw == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * lw)) - 1;
    if (ok && h.n < most) {
        for (size_t i = 0; i < lw; i++)
            b->p[lp + i] = (uint8_t)((uint64_t)h.n >> (8 * i));
        ok = splice(b, start, len, h.p, h.n);
    }
    free(h.p);
    return ok;
}

bool mut_apply(struct mut_rng *r, struct mut_buf *b, enum mut_layout layout,
               char *what, size_t ws)
{
    snprintf(what, ws, "unchanged");
    size_t op = mut_below(r, layout == MUT_BINARY ? 7 : 9);
    switch (op) {
    case 0: { /* bit flips */
        size_t k = 1 + mut_below(r, 8);
        for (size_t i = 0; i < k && b->n; i++)
            b->p[mut_below(r, b->n)] ^= (uint8_t)(1u << mut_below(r, 8));
        snprintf(what, ws, "%zu bits flipped", k);
        return true;
    }
    case 1: { /* truncation */
        size_t n = mut_below(r, b->n);
        snprintf(what, ws, "truncated to %zu of %zu bytes", n, b->n);
        b->n = n;
        return true;
    }
    case 2:
        set_field(r, b, what, ws);
        return true;
    case 3: { /* random bytes inserted */
        uint8_t ins[16];
        size_t n = 1 + mut_below(r, sizeof ins), at = mut_below(r, b->n + 1);
        for (size_t i = 0; i < n; i++)
            ins[i] = (uint8_t)mut_next(r);
        snprintf(what, ws, "%zu bytes inserted at %zu", n, at);
        return splice(b, at, 0, ins, n);
    }
    case 4: { /* a slice deleted */
        size_t at = mut_below(r, b->n + 1), n = 1 + mut_below(r, 64);
        snprintf(what, ws, "%zu bytes deleted at %zu", n, at);
        return splice(b, at, n, "", 0);
    }
    case 5: { /* a slice duplicated */
        size_t at = mut_below(r, b->n + 1), n = mut_below(r, 256);
        if (n > b->n - at)
            n = b->n - at;
        uint8_t *copy = malloc(n + 1);
        if (!copy)
            return false;
        memcpy(copy, b->p + at, n);
        snprintf(what, ws, "%zu bytes at %zu duplicated", n, at);
        bool ok = splice(b, at, 0, copy, n);
        free(copy);
        return ok;
    }
    case 6:
        nan_inf(r, b, what, ws);
        return true;
    default:
        return layout == MUT_TEXT ? text_edit(r, b, what, ws)
                                  : header_edit(r, b, layout, what, ws);
    }
}
