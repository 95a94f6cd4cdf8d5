/* analysis/align.h: pairing the tensors of a reference dump with those of
 * a test dump by name.
 *
 * Stages, each among the names the earlier stages left unpaired:
 *   1. map pairs   explicit "ref": "test" pairs of a --map file (the
 *                  user's word comes first);
 *   2. exact       identical names;
 *   3. normalised  equal qp_align_normalise() keys, when the key is unique
 *                  on both sides (a key shared by several names is reported
 *                  as ambiguous and pairs nothing);
 *   4. map rules   a test name that a rule's regex matches whole gives the
 *                  ref name of the rule's template; it pairs with that ref
 *                  name exactly, else with its unique normalised match.
 *                  Rules are tried in order, the first match wins; two test
 *                  names landing on one ref name are ambiguous.
 *
 * Map file (JSON, formats/json.h):
 *   { "pairs": { "REF NAME": "TEST NAME", ... },
 *     "rules": [ { "test": "POSIX extended regex", "ref": "template" }, ... ] }
 * Templates may use \0 (the whole name) .. \9 (groups) and \\ for a
 * backslash. Both members are optional; keys starting with '_' are
 * comments; anything else is an error. */
#ifndef QP_ANALYSIS_ALIGN_H
#define QP_ANALYSIS_ALIGN_H

#include <stddef.h>

#include "core/status.h"

enum qp_align_how {
    QP_ALIGN_MAP_PAIR = 0,
    QP_ALIGN_EXACT,
    QP_ALIGN_NORMALISED,
    QP_ALIGN_MAP_RULE,
    QP_ALIGN_HOW_COUNT
};

/* "map-pair", "exact", "normalised", "map-rule". */
const char *qp_align_how_name(enum qp_align_how how);

struct qp_align_map;

/* Parses a map document; `what` names it in messages. *out belongs to the
 * caller (qp_align_map_free). QP_E_FORMAT names the member at fault. */
enum qp_status qp_align_map_parse(const char *text, const char *what,
                                  struct qp_align_map **out,
                                  struct qp_error *err);
enum qp_status qp_align_map_load(const char *path, struct qp_align_map **out,
                                 struct qp_error *err);
void qp_align_map_free(struct qp_align_map *m);

struct qp_align_pair {
    size_t ref, test;       /* indices into the name lists */
    enum qp_align_how how;
    int rule;               /* map rule index (QP_ALIGN_MAP_RULE), else -1 */
};

struct qp_align {
    struct qp_align_pair *pairs; /* sorted by ref index */
    size_t npairs;
    size_t *ref_only, nref_only;   /* unpaired, in list order */
    size_t *test_only, ntest_only;
    char **notes;                  /* ambiguities, map entries naming absent
                                      tensors: one sentence each */
    size_t nnotes;
};

/* Aligns the names (map may be NULL). out is filled and owned by the
 * caller (qp_align_release), also on failure. QP_E_NOMEM only. */
enum qp_status qp_align_names(const char *const *ref, size_t nref,
                              const char *const *test, size_t ntest,
                              const struct qp_align_map *map,
                              struct qp_align *out, struct qp_error *err);

void qp_align_release(struct qp_align *a);

/* The normalised key of a name (malloc'd; NULL on no memory): first the
 * export suffixes are removed (":N", then "<sep>output" optionally followed
 * by "<sep>N" or "N", where <sep> is one of "/._:"), then letters are
 * lower-cased, every run of the separators "/._:- " becomes one '_', and
 * separators at either end are dropped. "/conv1/Conv_output_0",
 * "conv1.conv:0" and "Conv1-Conv" all give "conv1_conv". A name that
 * would normalise to "" keeps its lower-cased form. */
char *qp_align_normalise(const char *name);

#endif
