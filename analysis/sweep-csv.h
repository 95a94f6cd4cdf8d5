/* analysis/sweep-csv.h: the sweep table on disk (analysis/sweep.h).
 *
 * Columns (one row per configuration):
 *   index,name,kind,mode,scheme,requant,hash,status,
 *   sqnr_db,cosine,kl,kl_err,top1,top1_err,ppl,ppl_err,task_acc,
 *   task_acc_err,exact_match,exact_match_err,
 *   weight_bytes,params,bits_per_weight,bitops,worst_tensor,worst_sqnr_db,
 *   ms_per_input,tokens_per_s,peak_rss_mb,seconds,recipe,error
 * index is the configuration's place in the grid (control rows first);
 * name its canonical entry; kind fp32, scheme or recipe; mode fp32, fake
 * or int; scheme the scheme (a recipe's default); requant the flavor;
 * hash the row's content hash (64 hex digits); status ok or error (error
 * then holds the message and the measurements are empty); recipe the
 * row's full canonical recipe document (JSON). Quality columns a backend
 * does not measure are empty: the LLM ones (ppl, task_*, exact_match_*,
 * the _err columns, tokens_per_s) for ONNX rows, sqnr_db / cosine /
 * worst_* for LLM rows. bits_per_weight = weight_bytes x 8 / params (with
 * scales and zero points). ms_per_input, tokens_per_s, peak_rss_mb and
 * seconds are timings: they differ between two runs of the same row and
 * are left out when rows are compared, as are index and name.
 *
 * The file is appended to: each row is one write of a whole line, then
 * fsync. A last line without its newline is a row torn by a kill; opening
 * the table for appending drops it. The table is locked (flock) while a
 * sweep appends, so two sweeps cannot write one file. */
#ifndef QP_ANALYSIS_SWEEP_CSV_H
#define QP_ANALYSIS_SWEEP_CSV_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/sweep.h"
#include "formats/csv.h"

/* The header's columns (QP_SWEEP_NCOLS). */
#define QP_SWEEP_NCOLS 32
extern const char *const qp_sweep_columns[QP_SWEEP_NCOLS];

/* True when column name is a timing. */
bool qp_sweep_column_is_timing(const char *name);

/* True when two rows of one hash must agree in column name: all but the
 * timings, index (a row's place in the grid of the sweep that made it)
 * and name (two entries may mean one configuration). */
bool qp_sweep_column_compared(const char *name);

/* True when a CSV header is the sweep table's. */
bool qp_sweep_header_is(const char *const *header, size_t ncols);

/* One row as a whole line (with its newline) into *line (malloc'd; the
 * caller frees it). error NULL for an ok row (r then holds the values). */
enum qp_status qp_sweep_format_row(size_t index, const struct qp_sweep_cfg *c,
                                   const char *hash,
                                   const struct qp_sweep_result *r,
                                   const char *error, char **line, size_t *len,
                                   struct qp_error *err);

/* A table open for appending. */
struct qp_sweep_file {
    char *path;
    int fd;
    struct qp_csv *rows;    /* what was in it when opened */
    size_t torn_bytes;      /* of a torn last line, dropped */
};

/* Opens path for appending: creates it with the header (whole, fsync'd)
 * when absent; else checks its header, drops a torn last line (truncates
 * the file after the last newline) and reads its rows. Errors name the
 * file: QP_E_FORMAT when it is not a sweep table (the header differs) or
 * a row is malformed, QP_E_IO when it cannot be read, written or is locked
 * by another sweep. *out belongs to the caller (qp_sweep_file_close). */
enum qp_status qp_sweep_file_open(const char *path, struct qp_sweep_file **out,
                                  struct qp_error *err);

/* Appends line[0..len) with one write, then fsyncs. */
enum qp_status qp_sweep_file_append(struct qp_sweep_file *f, const char *line,
                                    size_t len, struct qp_error *err);

void qp_sweep_file_close(struct qp_sweep_file *f);

/* Merges sweep tables in[0..n) into out (written whole, or not at all):
 * rows with one hash collapse into the first; two such rows that differ
 * in a compared column (qp_sweep_column_compared) are a conflict (QP_E_FORMAT naming both
 * files, the row and the column). Rows are ordered by index, ties in input
 * order. A torn last line in an input is refused (finish that sweep
 * first). *rows (may be NULL) receives the merged row count, *dups the
 * rows collapsed. */
enum qp_status qp_sweep_merge(const char *const *in, size_t n, const char *out,
                              size_t *rows, size_t *dups, struct qp_error *err);

#endif
