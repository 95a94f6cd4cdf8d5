/* core/strmap.h: a hash map from strings to indices (open addressing,
 * FNV-1a). Keys are copied. Used wherever names are looked up per tensor,
 * so a dump of N tensors costs O(N), not O(N^2). */
#ifndef QP_CORE_STRMAP_H
#define QP_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct qp_strmap {
    char **keys;      /* [cap], NULL = empty slot */
    size_t *values;   /* [cap] */
    size_t cap, count;
};

/* An empty map; release with qp_strmap_release. */
void qp_strmap_init(struct qp_strmap *m);
void qp_strmap_release(struct qp_strmap *m);

/* Inserts key -> value. When key is present, leaves the map unchanged and
 * sets *existing (if non-NULL) to true; the stored value stays. */
enum qp_status qp_strmap_put(struct qp_strmap *m, const char *key, size_t value,
                             bool *existing, struct qp_error *err);

/* The value of key in *value; false when absent. */
bool qp_strmap_get(const struct qp_strmap *m, const char *key, size_t *value);

#endif
