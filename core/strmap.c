#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

void qp_strmap_init(struct qp_strmap *m)
{
    memset(m, 0, sizeof *m);
}

void qp_strmap_release(struct qp_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->values);
    qp_strmap_init(m);
}

/* Slot of key, or of the empty slot where it would go. cap is a power of
 * two and the table is never full. */
static size_t slot(const struct qp_strmap *m, const char *key)
{
    size_t i = (size_t)hash(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static bool grow(struct qp_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct qp_strmap n = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(size_t)),
                          cap, m->count};
    if (!n.keys || !n.values) {
        free(n.keys);
        free(n.values);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = slot(&n, m->keys[i]);
            n.keys[j] = m->keys[i];
            n.values[j] = m->values[i];
        }
    free(m->keys);
    free(m->values);
    *m = n;
    return true;
}

enum qp_status qp_strmap_put(struct qp_strmap *m, const char *key, size_t value,
                             bool *existing, struct qp_error *err)
{
    if (existing)
        *existing = false;
    if ((m->count + 1) * 2 > m->cap && !grow(m))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t i = slot(m, key);
    if (m->keys[i]) {
        if (existing)
            *existing = true;
        return QP_OK;
    }
    if (!(m->keys[i] = strdup(key)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    m->values[i] = value;
    m->count++;
    return QP_OK;
}

bool qp_strmap_get(const struct qp_strmap *m, const char *key, size_t *value)
{
    if (!m->cap)
        return false;
    size_t i = slot(m, key);
    if (!m->keys[i])
        return false;
    if (value)
        *value = m->values[i];
    return true;
}
