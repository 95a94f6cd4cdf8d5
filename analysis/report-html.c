/* analysis/report-html.c: the report page's HTML (analysis/report-html.h). */
#include "analysis/report-html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void qp_html_text(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
}

static const char style[] =
    "body{font-family:sans-serif;margin:1.5em auto;max-width:1280px;color:#222;"
    "padding:0 1em}\n"
    "h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;"
    "margin-top:2em}\n"
    "nav ul{columns:2}code,.mono{font-family:monospace}\n"
    "table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\n"
    "th,td{border:1px solid #ddd;padding:.2em .5em;text-align:right;"
    "white-space:nowrap}\n"
    "td.t,th.t{text-align:left}td.wrap{white-space:normal;text-align:left;"
    "max-width:40em}\n"
    "th{background:#f2f2f2;cursor:pointer;user-select:none}\n"
    "th[aria-sort=ascending]::after{content:\" \\25B2\"}"
    "th[aria-sort=descending]::after{content:\" \\25BC\"}\n"
    "td.best{background:#cdeccd;font-weight:bold}\n"
    "tr.front td:first-child{border-left:4px solid #2a7ab0}\n"
    "tr.error td{color:#a33}tr.ref td{color:#666}\n"
    "figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}\n"
    "figcaption{font-size:.85em;color:#555}\n"
    "details{margin:.5em 0}summary{cursor:pointer;color:#2a7ab0}\n"
    ".legend{font-size:.85em;color:#555}.scroll{overflow-x:auto}\n";

/* Sorts a table by the clicked column: data-k keys numerically, else the
 * text; empty cells last in either direction; ties keep their order. */
static const char script[] =
    "document.addEventListener('DOMContentLoaded', function () {\n"
    "  var tables = document.querySelectorAll('table.sortable');\n"
    "  Array.prototype.forEach.call(tables, function (t) {\n"
    "    var heads = t.tHead.rows[0].cells;\n"
    "    Array.prototype.forEach.call(heads, function (th, c) {\n"
    "      th.addEventListener('click', function () {\n"
    "        var asc = th.getAttribute('aria-sort') !== 'ascending';\n"
    "        Array.prototype.forEach.call(heads, function (h) {\n"
    "          h.removeAttribute('aria-sort');\n"
    "        });\n"
    "        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');\n"
    "        var body = t.tBodies[0];\n"
    "        var rows = Array.prototype.slice.call(body.rows);\n"
    "        rows.forEach(function (r, i) { r.qpIndex = i; });\n"
    "        rows.sort(function (a, b) {\n"
    "          var x = a.cells[c], y = b.cells[c];\n"
    "          var ex = x.textContent === '', ey = y.textContent === '';\n"
    "          if (ex || ey)\n"
    "            return ex === ey ? a.qpIndex - b.qpIndex : ex ? 1 : -1;\n"
    "          var kx = x.getAttribute('data-k'), ky = y.getAttribute('data-k');\n"
    "          var d;\n"
    "          if (kx !== null && ky !== null) {\n"
    "            var u = parseFloat(kx), v = parseFloat(ky);\n"
    "            d = u < v ? -1 : u > v ? 1 : 0;\n"
    "          } else {\n"
    "            d = x.textContent.localeCompare(y.textContent);\n"
    "          }\n"
    "          return d ? (asc ? d : -d) : a.qpIndex - b.qpIndex;\n"
    "        });\n"
    "        rows.forEach(function (r) { body.appendChild(r); });\n"
    "      });\n"
    "    });\n"
    "  });\n"
    "});\n";

void qp_html_begin(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>", f);
    qp_html_text(f, title);
    fprintf(f, "</title>\n<style>\n%s</style>\n<script>\n%s</script>\n</head>\n"
               "<body>\n<h1>", style, script);
    qp_html_text(f, title);
    fputs("</h1>\n", f);
}

void qp_html_end(FILE *f)
{
    fputs("</body>\n</html>\n", f);
}

void qp_html_section(FILE *f, const char *id, const char *heading)
{
    fprintf(f, "<section id=\"%s\">\n<h2>", id);
    qp_html_text(f, heading);
    fputs("</h2>\n", f);
}

void qp_html_section_end(FILE *f)
{
    fputs("</section>\n", f);
}

void qp_html_para(FILE *f, const char *text)
{
    fputs("<p>", f);
    qp_html_text(f, text);
    fputs("</p>\n", f);
}

void qp_html_figure(FILE *f, const char *stem, const char *caption)
{
    fprintf(f, "<figure>\n<a href=\"%s.svg\"><img src=\"%s.png\" alt=\"", stem, stem);
    qp_html_text(f, caption);
    fputs("\"></a>\n<figcaption>", f);
    qp_html_text(f, caption);
    fprintf(f, " (<a href=\"%s.svg\">SVG</a>; to restyle: <code>%s.gp</code> "
               "with <code>%s.dat</code>)</figcaption>\n</figure>\n", stem, stem, stem);
}

/* ---- tables ------------------------------------------------------------------ */

void qp_html_table_init(struct qp_html_table *t, const struct qp_html_col *cols,
                        size_t ncols)
{
    *t = (struct qp_html_table){.cols = cols, .ncols = ncols};
}

void qp_html_table_release(struct qp_html_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cell[i]);
    for (size_t r = 0; r < t->nrows; r++)
        free(t->rclass[r]);
    free(t->cell);
    free(t->key);
    free(t->eligible);
    free(t->rclass);
    *t = (struct qp_html_table){0};
}

static bool grow(struct qp_html_table *t)
{
    size_t cap = t->cap ? 2 * t->cap : 32, nc = t->ncols;
    char **cell = realloc(t->cell, cap * nc * sizeof *cell);
    if (cell)
        t->cell = cell;
    double *key = realloc(t->key, cap * nc * sizeof *key);
    if (key)
        t->key = key;
    bool *el = realloc(t->eligible, cap * sizeof *el);
    if (el)
        t->eligible = el;
    char **rc = realloc(t->rclass, cap * sizeof *rc);
    if (rc)
        t->rclass = rc;
    if (!cell || !key || !el || !rc)
        return false;
    t->cap = cap;
    return true;
}

enum qp_status qp_html_table_add(struct qp_html_table *t,
                                 const char *const *cells, const double *keys,
                                 bool eligible, const char *rclass,
                                 struct qp_error *err)
{
    if (t->nrows == t->cap && !grow(t))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t r = t->nrows, nc = t->ncols;
    bool ok = true;
    for (size_t c = 0; c < nc; c++) {
        t->cell[r * nc + c] = strdup(cells[c] ? cells[c] : "");
        t->key[r * nc + c] = keys ? keys[c] : NAN;
        ok &= t->cell[r * nc + c] != NULL;
    }
    t->eligible[r] = eligible;
    t->rclass[r] = rclass ? strdup(rclass) : NULL;
    t->nrows++;
    return ok && (!rclass || t->rclass[r]) ? QP_OK
                                           : qp_fail(err, QP_E_NOMEM, "out of memory");
}

/* The best key of column c among eligible rows (NaN: none). */
static double best_of(const struct qp_html_table *t, size_t c)
{
    int better = t->cols[c].better;
    double best = NAN;
    for (size_t r = 0; better && r < t->nrows; r++) {
        double k = t->key[r * t->ncols + c];
        if (!t->eligible[r] || isnan(k) || !t->cell[r * t->ncols + c][0])
            continue;
        if (isnan(best) || (better > 0 ? k > best : k < best))
            best = k;
    }
    return best;
}

void qp_html_table_write(FILE *f, const char *id, const struct qp_html_table *t)
{
    size_t nc = t->ncols;
    double *best = calloc(nc + 1, sizeof *best);
    fprintf(f, "<div class=\"scroll\">\n<table class=\"sortable\" id=\"%s\">\n"
               "<thead><tr>", id);
    for (size_t c = 0; c < nc; c++) {
        bool text = t->nrows && isnan(t->key[c]);
        fprintf(f, "<th%s", text ? " class=\"t\"" : "");
        if (t->cols[c].tip) {
            fputs(" title=\"", f);
            qp_html_text(f, t->cols[c].tip);
            fputc('"', f);
        }
        fputc('>', f);
        qp_html_text(f, t->cols[c].head);
        fputs("</th>", f);
        if (best)
            best[c] = best_of(t, c);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (size_t r = 0; r < t->nrows; r++) {
        if (t->rclass[r])
            fprintf(f, "<tr class=\"%s\">", t->rclass[r]);
        else
            fputs("<tr>", f);
        for (size_t c = 0; c < nc; c++) {
            const char *s = t->cell[r * nc + c];
            double k = t->key[r * nc + c];
            bool mark = best && t->eligible[r] && *s && !isnan(k) && k == best[c];
            bool wrap = strlen(s) > 60;
            fputs("<td", f);
            if (mark || isnan(k) || wrap)
                fprintf(f, " class=\"%s%s\"", isnan(k) ? (wrap ? "wrap" : "t") : "",
                        mark ? (isnan(k) ? " best" : "best") : "");
            if (!isnan(k) && *s && isinf(k))
                fprintf(f, " data-k=\"%s\"", k > 0 ? "Infinity" : "-Infinity");
            else if (!isnan(k) && *s)
                fprintf(f, " data-k=\"%.17g\"", k);
            fputc('>', f);
            qp_html_text(f, s);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n</div>\n", f);
    free(best);
}
