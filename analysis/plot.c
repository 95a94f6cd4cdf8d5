#include "analysis/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/outfile.h"

struct qp_plot {
    struct qp_outfile *img, *gp, *dat;
};

bool qp_plot_path_ok(const char *path)
{
    return qp_str_ends_with(path, ".png") || qp_str_ends_with(path, ".svg");
}

void qp_plot_abort(struct qp_plot *p)
{
    if (!p)
        return;
    qp_outfile_abort(p->img);
    qp_outfile_abort(p->gp);
    qp_outfile_abort(p->dat);
    free(p);
}

enum qp_status qp_plot_commit(struct qp_plot *p, struct qp_error *err)
{
    enum qp_status st = qp_outfile_commit(p->dat, err);
    p->dat = NULL;
    if (!st) {
        st = qp_outfile_commit(p->gp, err);
        p->gp = NULL;
    }
    if (!st) {
        st = qp_outfile_commit(p->img, err);
        p->img = NULL;
    }
    qp_plot_abort(p);
    return st;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* malloc'd path with its extension (after the last '.') replaced. */
static char *with_ext(const char *path, const char *ext)
{
    const char *dot = strrchr(base_name(path), '.');
    size_t stem = dot ? (size_t)(dot - path) : strlen(path);
    char *r = malloc(stem + strlen(ext) + 1);
    if (r) {
        memcpy(r, path, stem);
        strcpy(r + stem, ext);
    }
    return r;
}

/* s as a gnuplot single-quoted string ('' stands for '). */
void qp_plot_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* Runs gnuplot in dir on script gp with qp_dat / qp_out set; a message
 * naming out on failure. */
static enum qp_status run_gnuplot(const char *dir, const char *gp,
                                  const char *dat, const char *img,
                                  const char *out, struct qp_error *err)
{
    const char *prog = getenv("QP_GNUPLOT");
    if (!prog || !*prog)
        prog = "gnuplot";
    char vars[512];
    snprintf(vars, sizeof vars, "qp_dat='%s'; qp_out='%s'; qp_term='%s'", dat, img,
             qp_str_ends_with(out, ".svg") ? "svg" : "png");
    int fds[2];
    if (pipe(fds) != 0)
        return qp_fail(err, QP_E_IO, "'%s': cannot run gnuplot: %s", out,
                       strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return qp_fail(err, QP_E_IO, "'%s': cannot run gnuplot: %s", out,
                       strerror(errno));
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || chdir(dir) != 0)
            _exit(126);
        dup2(null, 0);
        dup2(null, 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execlp(prog, prog, "-e", vars, gp, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char msg[400] = "";
    size_t len = 0;
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        for (ssize_t i = 0; i < n && len + 1 < sizeof msg; i++)
            msg[len++] = buf[i];
    msg[len] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return QP_OK;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return qp_fail(err, QP_E_IO, "'%s': cannot run '%s' (install "
                       "gnuplot-nox)", out, prog);
    /* the first non-empty line gnuplot printed */
    char *line = msg;
    while (*line == '\n' || *line == ' ')
        line++;
    line[strcspn(line, "\n")] = '\0';
    return qp_fail(err, QP_E_IO, "'%s': gnuplot failed%s%s", out,
                   *line ? ": " : "", line);
}

static enum qp_status write_script(FILE *f, const char *out, const char *body)
{
    char *dat = with_ext(base_name(out), ".dat");
    char *gp = with_ext(base_name(out), ".gp");
    if (!dat || !gp) {
        free(dat);
        free(gp);
        return QP_E_NOMEM;
    }
    fprintf(f, "# made by qprobe; to draw it again: cd to this folder, gnuplot %s\n"
               "# (the terminal follows qp_out: gnuplot -e \"qp_out='x.svg'\" %s "
               "draws an SVG)\n", gp, gp);
    fputs("if (!exists(\"qp_dat\")) qp_dat = ", f);
    qp_plot_quote(f, dat);
    fputs("\nif (!exists(\"qp_out\")) qp_out = ", f);
    qp_plot_quote(f, base_name(out));
    fprintf(f, "\nif (!exists(\"qp_term\")) qp_term = (strlen(qp_out) > 4 && "
               "qp_out[strlen(qp_out) - 2:] eq 'svg') ? 'svg' : 'png'\n"
               "if (qp_term eq 'svg') {\n    set terminal svg size 1200,600 "
               "noenhanced font \"sans,10\"\n} else {\n    set terminal pngcairo "
               "size 1200,600 noenhanced font \"sans,10\"\n}\nset output qp_out\n%s",
            body);
    free(dat);
    free(gp);
    return QP_OK;
}

enum qp_status qp_plot_render(const char *out, const char *dat,
                              const char *body, struct qp_plot **pending,
                              struct qp_error *err)
{
    *pending = NULL;
    if (!qp_plot_path_ok(out))
        return qp_fail(err, QP_E_INVAL, "'%s': a plot must end in .png or .svg",
                       out);
    struct qp_plot *p = calloc(1, sizeof *p);
    char *dat_path = with_ext(out, ".dat"), *gp_path = with_ext(out, ".gp");
    char *dir = strdup(out);
    enum qp_status st = QP_OK;
    if (!p || !dat_path || !gp_path || !dir)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st)
        st = qp_outfile_open(dat_path, &p->dat, err);
    if (!st)
        st = qp_outfile_open(gp_path, &p->gp, err);
    if (!st)
        st = qp_outfile_open(out, &p->img, err);
    if (!st) {
        fputs(dat, p->dat->fp);
        if (write_script(p->gp->fp, out, body))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
        if (!st && (fflush(p->dat->fp) || fflush(p->gp->fp)))
            st = qp_fail(err, QP_E_IO, "'%s': write failed", gp_path);
    }
    if (!st) {
        /* the output's folder: "." for a bare name, "/" for "/x.png" */
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            dir[1] = '\0';
        else if (slash)
            *slash = '\0';
        st = run_gnuplot(slash ? dir : ".", base_name(p->gp->tmp_path),
                         base_name(p->dat->tmp_path),
                         base_name(p->img->tmp_path), out, err);
    }
    free(dat_path);
    free(gp_path);
    free(dir);
    if (st) {
        qp_plot_abort(p);
        return st;
    }
    *pending = p;
    return QP_OK;
}

enum qp_status qp_plot_text_open(struct qp_plot_text *t, struct qp_error *err)
{
    *t = (struct qp_plot_text){0};
    t->dat = open_memstream(&t->dbuf, &t->dlen);
    t->body = t->dat ? open_memstream(&t->bbuf, &t->blen) : NULL;
    if (!t->body) {
        if (t->dat)
            fclose(t->dat);
        free(t->dbuf);
        *t = (struct qp_plot_text){0};
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    return QP_OK;
}

enum qp_status qp_plot_text_render(struct qp_plot_text *t, const char *out,
                                   bool fail, struct qp_plot **pending,
                                   struct qp_error *err)
{
    *pending = NULL;
    int bad = fclose(t->dat) | fclose(t->body);
    enum qp_status st = fail ? QP_E_NOMEM
                      : bad ? qp_fail(err, QP_E_NOMEM, "out of memory")
                            : qp_plot_render(out, t->dbuf, t->bbuf, pending, err);
    if (fail)
        qp_fail(err, QP_E_NOMEM, "out of memory");
    free(t->dbuf);
    free(t->bbuf);
    *t = (struct qp_plot_text){0};
    return st;
}
