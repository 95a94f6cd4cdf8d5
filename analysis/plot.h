/* analysis/plot.h: plots drawn by gnuplot.
 *
 * A plot OUT (OUT ending in .png: the pngcairo terminal, .svg: svg) is made
 * from a data file and a script kept beside it: OUT with its extension
 * replaced by ".dat" and ".gp". The script starts with
 *     if (!exists("qp_dat")) qp_dat = 'NAME.dat'
 *     if (!exists("qp_out")) qp_out = 'NAME.png'
 * so `cd DIR && gnuplot NAME.gp` draws the plot again. gnuplot (or the
 * program named by $QP_GNUPLOT) runs in OUT's folder.
 *
 * Two phases, so that several outputs of one command appear together or
 * not at all: qp_plot_render writes the three files under temporary names
 * and runs gnuplot; qp_plot_commit renames them into place; qp_plot_abort
 * removes them. */
#ifndef QP_ANALYSIS_PLOT_H
#define QP_ANALYSIS_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

struct qp_plot;

/* True when path ends in .png or .svg (case-insensitive). */
bool qp_plot_path_ok(const char *path);

/* dat: the data file's text; body: gnuplot commands after the terminal and
 * output are set, reading the data file as the string variable qp_dat.
 * On success *pending belongs to the caller until commit or abort. Errors:
 * QP_E_INVAL for another extension, QP_E_IO when a file cannot be written
 * or gnuplot cannot run or fails (with the first line it printed). */
enum qp_status qp_plot_render(const char *out, const char *dat,
                              const char *body, struct qp_plot **pending,
                              struct qp_error *err);

/* Renames the files into place; frees p. */
enum qp_status qp_plot_commit(struct qp_plot *p, struct qp_error *err);

/* Removes the temporary files; frees p. NULL is ignored. */
void qp_plot_abort(struct qp_plot *p);

/* The two texts a plot is made of, written with stdio into memory. */
struct qp_plot_text {
    FILE *dat, *body;
    char *dbuf, *bbuf;
    size_t dlen, blen;
};

/* Opens both streams; QP_E_NOMEM when they cannot be. */
enum qp_status qp_plot_text_open(struct qp_plot_text *t, struct qp_error *err);

/* Closes both streams and renders them (qp_plot_render) unless fail is
 * set; frees the texts either way. */
enum qp_status qp_plot_text_render(struct qp_plot_text *t, const char *out,
                                   bool fail, struct qp_plot **pending,
                                   struct qp_error *err);

/* Writes s as a single-quoted gnuplot string ('' for a quote). */
void qp_plot_quote(FILE *f, const char *s);

#endif
