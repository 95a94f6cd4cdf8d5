/* Unit tests of formats/csv.c: quoting on write, strict parsing on read. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/csv.h"
#include "tests/test.h"

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len;
    return qp_read_file(path, 1 << 20, &text, &len, NULL) == QP_OK ? text : NULL;
}

QP_TEST(csv_write_quotes_only_what_needs_it)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "q.csv");
    struct qp_csv_writer *w;
    REQUIRE_OK(qp_csv_open(path, &w, &err), &err);
    const char *row[] = {"plain", "a,b", "say \"hi\"", " lead", "trail ",
                         "two\nlines", "", "x_y:0"};
    qp_csv_row(w, row, 8);
    qp_csv_str(w, NULL);
    qp_csv_num(w, 1.5);
    qp_csv_num(w, INFINITY);
    qp_csv_num(w, -INFINITY);
    qp_csv_num(w, NAN);
    qp_csv_num(w, 1e-30);
    qp_csv_num(w, 0.1);
    qp_csv_num(w, 1.0 / 3.0);
    qp_csv_int(w, -42);
    qp_csv_end_row(w);
    REQUIRE_OK(qp_csv_commit(w, &err), &err);
    char *text = slurp(path);
    CHECK_STR(text, "plain,\"a,b\",\"say \"\"hi\"\"\",\" lead\",\"trail \","
                    "\"two\nlines\",,x_y:0\n"
                    ",1.5,inf,-inf,nan,1e-30,0.1,0.333333333,-42\n");
    free(text);
    free(path);
}

QP_TEST(csv_roundtrip_through_the_reader)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "r.csv");
    struct qp_csv_writer *w;
    REQUIRE_OK(qp_csv_open(path, &w, &err), &err);
    const char *head[] = {"name", "note", "v"};
    const char *r1[] = {"a,b", "say \"hi\"\nbye", "2.5"};
    const char *r2[] = {" x ", "", "inf"};
    qp_csv_row(w, head, 3);
    qp_csv_row(w, r1, 3);
    qp_csv_row(w, r2, 3);
    REQUIRE_OK(qp_csv_commit(w, &err), &err);
    struct qp_csv *t;
    REQUIRE_OK(qp_csv_load(path, &t, &err), &err);
    CHECK_INT(t->ncols, 3);
    REQUIRE(t->nrows == 2);
    CHECK_STR(qp_csv_get(t, 0, 0), "a,b");
    CHECK_STR(qp_csv_get(t, 0, 1), "say \"hi\"\nbye");
    CHECK_STR(qp_csv_get(t, 1, 0), " x ");
    CHECK_STR(qp_csv_get(t, 1, 1), "");
    CHECK(qp_csv_get(t, 2, 0) == NULL);
    CHECK(qp_csv_get(t, 0, 3) == NULL);
    CHECK_INT(qp_csv_column(t, "v"), 2);
    CHECK_INT(qp_csv_column(t, "missing"), -1);
    double v;
    CHECK(qp_csv_to_num(qp_csv_get(t, 0, 2), &v) && v == 2.5);
    CHECK(qp_csv_to_num(qp_csv_get(t, 1, 2), &v) && isinf(v) && v > 0);
    CHECK(qp_csv_to_num("-inf", &v) && isinf(v) && v < 0);
    CHECK(qp_csv_to_num("nan", &v) && isnan(v));
    CHECK(!qp_csv_to_num("", &v));
    CHECK(!qp_csv_to_num("1.5x", &v));
    qp_csv_free(t);
    free(path);
}

QP_TEST(csv_reader_accepts_crlf_and_skips_blank_lines)
{
    struct qp_error err;
    struct qp_csv *t;
    const char *text = "a,b\r\n1,2\r\n\r\n3,\"4\"\r\n";
    REQUIRE_OK(qp_csv_parse(text, strlen(text), "'t'", &t, &err), &err);
    CHECK_INT(t->nrows, 2);
    CHECK_STR(qp_csv_get(t, 0, 1), "2");
    CHECK_STR(qp_csv_get(t, 1, 0), "3");
    CHECK_STR(qp_csv_get(t, 1, 1), "4");
    qp_csv_free(t);
    /* a header alone is a table without rows */
    REQUIRE_OK(qp_csv_parse("x,y\n", 4, "'t'", &t, &err), &err);
    CHECK_INT(t->nrows, 0);
    CHECK_INT(t->ncols, 2);
    qp_csv_free(t);
}

QP_TEST(csv_reader_rejects_malformed_input)
{
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"", "no header row"},
        {"\n\n", "no header row"},
        {"a,b\n1,2,3\n", "row 2 has 3 fields, the header has 2"},
        {"a,b\n1,2\n3\n", "row 3 has 1 fields"},
        {"a,a\n1,2\n", "names column 'a' twice"},
        {"a,,c\n", "header column 2 is empty"},
        {"a,b\n\"1,2\n", "unterminated quoted field"},
        {"a,b\n\"1\"x,2\n", "line 2: malformed quoting"},
        {"a,b\nx,1\ny\"z,2\n", "line 3: malformed quoting"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qp_error err;
        struct qp_csv *t = (struct qp_csv *)1;
        CHECK_FAILS(qp_csv_parse(cases[i].text, strlen(cases[i].text), "'m.csv'",
                                 &t, &err),
                    QP_E_FORMAT, &err, cases[i].needle);
        CHECK(t == NULL);
        CHECK_CONTAINS(err.msg, "'m.csv'");
    }
}

QP_TEST(csv_abort_leaves_nothing_and_missing_file_is_io_error)
{
    struct qp_error err;
    char *path = qp_test_path(ctx, "gone.csv");
    struct qp_csv_writer *w;
    REQUIRE_OK(qp_csv_open(path, &w, &err), &err);
    qp_csv_str(w, "x");
    qp_csv_end_row(w);
    qp_csv_abort(w);
    CHECK(access(path, F_OK) != 0);
    /* no temporary left beside it either */
    DIR *d = opendir(qp_test_tmpdir(ctx));
    REQUIRE(d != NULL);
    struct dirent *de;
    int entries = 0;
    while ((de = readdir(d)))
        entries += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    CHECK_INT(entries, 0);
    struct qp_csv *t;
    CHECK_FAILS(qp_csv_load(path, &t, &err), QP_E_IO, &err, "gone.csv");
    CHECK_FAILS(qp_csv_open("/nonexistent-dir/x.csv", &w, &err), QP_E_IO, &err,
                "/nonexistent-dir/x.csv");
    free(path);
}
