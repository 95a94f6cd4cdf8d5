#include "core/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp_name_for(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(path) + 32;
    char *t = malloc(n);
    if (t)
        snprintf(t, n, "%.*s.%s.tmp.XXXXXX", (int)dirlen, path, base);
    return t;
}

enum qp_status qp_outfile_open(const char *path, struct qp_outfile **of,
                               struct qp_error *err)
{
    *of = NULL;
    struct qp_outfile *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path)) || !(o->tmp_path = tmp_name_for(path))) {
        if (o)
            free(o->path);
        free(o);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    int fd = mkstemp(o->tmp_path);
    if (fd < 0) {
        int e = errno;
        free(o->path);
        free(o->tmp_path);
        free(o);
        return qp_fail(err, QP_E_IO, "'%s': cannot create output: %s", path,
                       strerror(e));
    }
    fchmod(fd, 0644); /* mkstemp makes 0600 */
    o->fp = fdopen(fd, "wb");
    if (!o->fp) {
        close(fd);
        unlink(o->tmp_path);
        free(o->path);
        free(o->tmp_path);
        free(o);
        return qp_fail(err, QP_E_IO, "'%s': cannot open output", path);
    }
    *of = o;
    return QP_OK;
}

static void outfile_free(struct qp_outfile *of)
{
    free(of->path);
    free(of->tmp_path);
    free(of);
}

enum qp_status qp_outfile_commit(struct qp_outfile *of, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    int bad = ferror(of->fp) || fflush(of->fp) != 0 || fsync(fileno(of->fp)) != 0;
    int e = errno;
    if (fclose(of->fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    of->fp = NULL;
    if (bad) {
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", of->path,
                     strerror(e));
    } else if (rename(of->tmp_path, of->path) != 0) {
        st = qp_fail(err, QP_E_IO, "'%s': cannot rename into place: %s",
                     of->path, strerror(errno));
    }
    if (st)
        unlink(of->tmp_path);
    outfile_free(of);
    return st;
}

void qp_outfile_abort(struct qp_outfile *of)
{
    if (!of)
        return;
    if (of->fp)
        fclose(of->fp);
    unlink(of->tmp_path);
    outfile_free(of);
}

enum qp_status qp_outdir_open(const char *path, struct qp_outdir **od,
                              struct qp_error *err)
{
    *od = NULL;
    struct qp_outdir *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path)) || !(o->tmp_path = tmp_name_for(path))) {
        if (o)
            free(o->path);
        free(o);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    if (!mkdtemp(o->tmp_path)) {
        int e = errno;
        free(o->path);
        free(o->tmp_path);
        free(o);
        return qp_fail(err, QP_E_IO, "'%s': cannot create output directory: %s",
                       path, strerror(e));
    }
    chmod(o->tmp_path, 0755);
    *od = o;
    return QP_OK;
}

void qp_rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            size_t n = strlen(path) + strlen(de->d_name) + 2;
            char *p = malloc(n);
            if (!p)
                continue;
            snprintf(p, n, "%s/%s", path, de->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                qp_rmtree(p);
            else
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(path);
}

static void outdir_free(struct qp_outdir *od)
{
    free(od->path);
    free(od->tmp_path);
    free(od);
}

enum qp_status qp_outdir_commit(struct qp_outdir *od, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    struct stat sb;
    char *old = NULL;
    if (stat(od->path, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            st = qp_fail(err, QP_E_IO, "'%s': exists and is not a directory",
                         od->path);
            goto out;
        }
        old = tmp_name_for(od->path);
        if (!old || !mkdtemp(old) || rename(od->path, old) != 0) {
            st = qp_fail(err, QP_E_IO, "'%s': cannot replace existing directory",
                         od->path);
            if (old)
                rmdir(old);
            free(old);
            old = NULL;
            goto out;
        }
    }
    if (rename(od->tmp_path, od->path) != 0) {
        st = qp_fail(err, QP_E_IO, "'%s': cannot rename into place: %s",
                     od->path, strerror(errno));
        if (old)
            rename(old, od->path);
    } else if (old) {
        qp_rmtree(old);
    }
out:
    if (st)
        qp_rmtree(od->tmp_path);
    free(old);
    outdir_free(od);
    return st;
}

void qp_outdir_abort(struct qp_outdir *od)
{
    if (!od)
        return;
    qp_rmtree(od->tmp_path);
    outdir_free(od);
}
