#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum qp_status qp_read_file(const char *path, size_t max_bytes, char **out,
                            size_t *len, struct qp_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return qp_fail(err, QP_E_IO, "'%s': cannot open: %s", path,
                       strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap >= max_bytes) {
                free(buf);
                fclose(f);
                return qp_fail(err, QP_E_FORMAT, "'%s': larger than %zu bytes",
                               path, max_bytes);
            }
            cap = cap * 2 > max_bytes ? max_bytes : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return qp_fail(err, QP_E_NOMEM, "'%s': out of memory", path);
    if (bad) {
        free(buf);
        return qp_fail(err, QP_E_IO, "'%s': read error", path);
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return QP_OK;
}

bool qp_str_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

bool qp_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *qp_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}
