/* core/outfile: temporaries removed by a signal or an exit (in a forked
 * child, which installs the handlers), devices written in place, write
 * errors reported with the final name. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/outfile.h"
#include "tests/test.h"

/* Entries of dir (without . and ..). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

/* In a child: opens an output file (half written), an output folder with
 * files and a subfolder in it, and a file a library names itself inside
 * it; then ends by signal sig, or by exit(3) when sig is 0. */
static void child_outputs(const char *dir, int sig)
{
    qp_outfile_cleanup_install();
    struct qp_error err;
    struct qp_outfile *of;
    struct qp_outdir *od;
    char *f = qp_path_join(dir, "out.bin"), *o = qp_path_join(dir, "out.d");
    if (qp_outfile_open(f, &of, &err) || qp_outdir_open(o, &od, &err))
        _exit(99);
    fputs("half", of->fp);
    fflush(of->fp);
    char *sub = qp_path_join(od->tmp_path, "sub"), *x = qp_path_join(sub, "x.npy");
    mkdir(sub, 0755);
    FILE *fp = fopen(x, "w");
    if (!fp)
        _exit(98);
    fputs("x", fp);
    fclose(fp);
    char *lib = qp_path_join(od->tmp_path, "archive.npz.Ab12Cd"); /* libzip's */
    fp = fopen(lib, "w");
    if (fp)
        fclose(fp);
    free(lib);
    free(x);
    free(sub);
    free(o);
    free(f);
    if (sig)
        raise(sig);
    exit(3); /* of and od are still open: the exit handler removes them */
}

QP_TEST(outfile_temporaries_removed_on_signals_and_exit)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, 0};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%zu", i);
        char *dir = qp_test_path(ctx, name);
        REQUIRE(mkdir(dir, 0755) == 0);
        fflush(NULL);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            signal(sigs[i] ? sigs[i] : SIGINT, SIG_DFL);
            child_outputs(dir, sigs[i]);
        }
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        if (sigs[i]) /* ended by the signal itself, re-raised */
            CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sigs[i]);
        else
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        CHECK_INT(entries(dir), 0);
        free(dir);
    }
}

QP_TEST(outfile_devices_written_in_place_and_errors_named)
{
    struct qp_error err;
    struct qp_outfile *of;
    REQUIRE_OK(qp_outfile_open("/dev/null", &of, &err), &err);
    CHECK(of->direct);
    fputs("gone", of->fp);
    CHECK_OK(qp_outfile_commit(of, &err), &err);
    /* through a link, as the CLI tests do: a failed write names the link,
     * and /dev/full stays a device */
    char *full = qp_test_path(ctx, "full.bin");
    REQUIRE(symlink("/dev/full", full) == 0);
    REQUIRE_OK(qp_outfile_open(full, &of, &err), &err);
    for (int i = 0; i < 10000; i++)
        fputs("0123456789", of->fp);
    CHECK_FAILS(qp_outfile_commit(of, &err), QP_E_IO, &err,
                "full.bin': write failed: No space left on device");
    struct stat sb;
    CHECK(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode));
    CHECK(lstat(full, &sb) == 0 && S_ISLNK(sb.st_mode));
    /* temporaries of a device's output go to TMPDIR, not /dev */
    char *home = qp_outfile_temp_home(full);
    const char *tmp = getenv("TMPDIR");
    CHECK(home && !strncmp(home, tmp && *tmp ? tmp : "/tmp",
                           strlen(tmp && *tmp ? tmp : "/tmp")));
    free(home);
    home = qp_outfile_temp_home("x/new.npz");
    CHECK_STR(home, "x/new.npz");
    free(home);
    /* a folder is not a file */
    CHECK_FAILS(qp_outfile_open(qp_test_tmpdir(ctx), &of, &err), QP_E_IO, &err,
                "cannot write: is a directory");
    free(full);
}

QP_TEST(outfile_error_messages_name_outputs_not_temporaries)
{
    struct qp_error err;
    qp_fail(&err, QP_E_IO, "'out/.d.tmp.AbC123/index.json': write failed");
    CHECK_INT(qp_error_rename(&err, "out/.d.tmp.AbC123", "out/d"), QP_E_IO);
    CHECK_STR(err.msg, "'out/d/index.json': write failed");
    qp_error_rename(&err, "absent", "x");
    CHECK_STR(err.msg, "'out/d/index.json': write failed");
    qp_fail(&err, QP_E_FORMAT, "tensor 'w': element 3 is nan");
    qp_error_in_file(&err, "m.npy");
    CHECK_STR(err.msg, "'m.npy': tensor 'w': element 3 is nan");
    qp_error_in_file(&err, "m.npy"); /* named already: unchanged */
    CHECK_STR(err.msg, "'m.npy': tensor 'w': element 3 is nan");
    qp_fail(&err, QP_E_FORMAT, "'dir/x.json': bad");
    qp_error_in_file(&err, "dir");
    CHECK_STR(err.msg, "'dir/x.json': bad");
}
