/* core/outfile.c: atomic outputs and the registry of live temporaries
 * (core/outfile.h). */
#include "core/outfile.h"

#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the registry ---------------------------------------------------------
 *
 * Every temporary file or directory lives in a slot from its creation to
 * its rename or removal, so a signal handler (or exit) can remove what is
 * left. This is process-wide state by necessity: a handler has no other
 * way to find it. Slots hold copies of the paths, so the handler reads
 * nothing another thread may free. A thread changes slots with every
 * signal blocked and holding a spin lock; the handler takes the same lock
 * (the holder is another thread, inside a few stores) and keeps it, since
 * the process is ending. */

enum { SLOT_FREE = 0, SLOT_FILE, SLOT_DIR };
#define SLOTS 64

static struct {
    int kind;
    char path[PATH_MAX];
} slots[SLOTS];
static atomic_flag slots_lock = ATOMIC_FLAG_INIT;
static volatile sig_atomic_t owner_pid; /* the process that installed */

static void lock_slots(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
    while (atomic_flag_test_and_set_explicit(&slots_lock, memory_order_acquire))
        ;
}

static void unlock_slots(const sigset_t *old)
{
    atomic_flag_clear_explicit(&slots_lock, memory_order_release);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Records path as a live temporary; its slot, or -1 (too long, or too
 * many at once: QP_E_IO from the callers, which then remove it). */
static int reg_add(const char *path, int kind)
{
    size_t n = strlen(path);
    if (n >= PATH_MAX)
        return -1;
    sigset_t old;
    lock_slots(&old);
    int i = 0;
    while (i < SLOTS && slots[i].kind != SLOT_FREE)
        i++;
    if (i < SLOTS) {
        memcpy(slots[i].path, path, n + 1);
        slots[i].kind = kind;
    }
    unlock_slots(&old);
    return i < SLOTS ? i : -1;
}

static void reg_remove(int slot)
{
    if (slot < 0)
        return;
    sigset_t old;
    lock_slots(&old);
    slots[slot].kind = SLOT_FREE;
    unlock_slots(&old);
}

/* Removes the directory `name` under dfd and everything in it, with
 * system calls only (async-signal-safe; libzip's temporary names inside
 * an npz's folder are not known in advance). Up to 16 levels. */
static void rm_at(int dfd, const char *name, int depth)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* passes over the listing until one finds nothing left to remove
     * (removing entries while reading may make a pass skip some) */
    for (int pass = 0, found = 1; fd >= 0 && found && pass < 64; pass++) {
        found = 0;
        if (lseek(fd, 0, SEEK_SET) != 0)
            break;
        char buf[4096];
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
            for (long off = 0; off < n;) {
                struct dirent64_head {
                    unsigned long long ino;
                    long long off;
                    unsigned short reclen;
                    unsigned char type;
                    char name[];
                } *e = (struct dirent64_head *)(void *)(buf + off);
                off += e->reclen;
                if (e->name[0] == '.' &&
                    (!e->name[1] || (e->name[1] == '.' && !e->name[2])))
                    continue;
                found = 1;
                if (unlinkat(fd, e->name, 0) != 0 && depth < 16)
                    rm_at(fd, e->name, depth + 1);
            }
    }
    if (fd >= 0)
        close(fd);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Removes every registered temporary; the caller holds the lock. */
static void remove_all(void)
{
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].kind == SLOT_FILE)
            unlink(slots[i].path);
        else if (slots[i].kind == SLOT_DIR)
            rm_at(AT_FDCWD, slots[i].path, 0);
        slots[i].kind = SLOT_FREE;
    }
}

static const int cleanup_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                      SIGPIPE, SIGALRM, SIGXCPU, SIGVTALRM,
                                      SIGPROF, SIGUSR1, SIGUSR2};
#define NSIGNALS ((int)(sizeof cleanup_signals / sizeof cleanup_signals[0]))

static void on_signal(int sig)
{
    if (owner_pid == getpid()) {
        /* this thread cannot hold the lock: it blocks every signal then */
        while (atomic_flag_test_and_set_explicit(&slots_lock,
                                                 memory_order_acquire))
            ;
        remove_all();
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered, with its default action, when this returns */
}

static void at_exit(void)
{
    if (owner_pid != getpid())
        return; /* a forked child's exit is not the end of our outputs */
    sigset_t old;
    lock_slots(&old);
    remove_all();
    unlock_slots(&old);
}

void qp_outfile_cleanup_install(void)
{
    if (owner_pid)
        return;
    owner_pid = getpid();
    atexit(at_exit);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIGNALS; i++)
        sigaddset(&sa.sa_mask, cleanup_signals[i]);
    for (int i = 0; i < NSIGNALS; i++) {
        struct sigaction cur;
        /* a signal ignored by whoever started us (nohup) stays ignored */
        if (sigaction(cleanup_signals[i], NULL, &cur) == 0 &&
            cur.sa_handler != SIG_IGN)
            sigaction(cleanup_signals[i], &sa, NULL);
    }
    /* a write beyond RLIMIT_FSIZE then fails with EFBIG like any other */
    signal(SIGXFSZ, SIG_IGN);
}

/* ---- files ------------------------------------------------------------------ */

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

static void outfile_free(struct qp_outfile *of)
{
    free(of->path);
    free(of->tmp_path);
    free(of);
}

/* An existing output that is neither a file nor a folder (/dev/null,
 * /dev/full, a FIFO, a terminal) is written in place: it cannot be
 * renamed over, and there is nothing to keep whole. */
static enum qp_status open_direct(struct qp_outfile *o, struct qp_error *err)
{
    o->direct = true;
    o->slot = -1;
    int fd = open(o->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || !(o->fp = fdopen(fd, "wb"))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return qp_fail(err, QP_E_IO, "'%s': cannot open output: %s", o->path,
                       strerror(e));
    }
    free(o->tmp_path);
    o->tmp_path = strdup(o->path);
    return o->tmp_path ? QP_OK : qp_fail(err, QP_E_NOMEM, "out of memory");
}

/* A temporary file beside o->path, registered until commit or abort. */
static enum qp_status open_temp(struct qp_outfile *o, struct qp_error *err)
{
    int fd = mkstemp(o->tmp_path);
    if (fd < 0)
        return qp_fail(err, QP_E_IO, "'%s': cannot create output: %s", o->path,
                       strerror(errno));
    if ((o->slot = reg_add(o->tmp_path, SLOT_FILE)) < 0) {
        close(fd);
        unlink(o->tmp_path);
        return qp_fail(err, QP_E_IO, "'%s': too many outputs open at once",
                       o->path);
    }
    fchmod(fd, 0644); /* mkstemp makes 0600 */
    if (!(o->fp = fdopen(fd, "wb"))) {
        close(fd);
        unlink(o->tmp_path);
        reg_remove(o->slot);
        return qp_fail(err, QP_E_IO, "'%s': cannot open output", o->path);
    }
    return QP_OK;
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
    struct stat sb;
    bool exists = stat(path, &sb) == 0;
    enum qp_status st;
    if (exists && S_ISDIR(sb.st_mode))
        st = qp_fail(err, QP_E_IO, "'%s': cannot write: is a directory", path);
    else if (exists && !S_ISREG(sb.st_mode))
        st = open_direct(o, err);
    else
        st = open_temp(o, err);
    if (st) {
        if (o->fp)
            fclose(o->fp);
        outfile_free(o);
        return st;
    }
    *of = o;
    return QP_OK;
}

enum qp_status qp_outfile_commit(struct qp_outfile *of, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    /* a failed write leaves the stream in error: writing its buffer again
     * gives the reason (ENOSPC, EFBIG, EIO) */
    int had_error = ferror(of->fp);
    int bad = fflush(of->fp) != 0 || had_error ||
              (!of->direct && fsync(fileno(of->fp)) != 0);
    int e = errno;
    if (fclose(of->fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    of->fp = NULL;
    if (bad) {
        st = qp_fail(err, QP_E_IO, "'%s': write failed: %s", of->path,
                     had_error && !e ? "i/o error" : strerror(e));
    } else if (!of->direct && rename(of->tmp_path, of->path) != 0) {
        st = qp_fail(err, QP_E_IO, "'%s': cannot rename into place: %s",
                     of->path, strerror(errno));
    }
    if (st && !of->direct)
        unlink(of->tmp_path);
    reg_remove(of->slot);
    outfile_free(of);
    return st;
}

void qp_outfile_abort(struct qp_outfile *of)
{
    if (!of)
        return;
    if (of->fp)
        fclose(of->fp);
    if (!of->direct)
        unlink(of->tmp_path);
    reg_remove(of->slot);
    outfile_free(of);
}

char *qp_outfile_temp_home(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))
        return strdup(path);
    const char *tmp = getenv("TMPDIR"), *slash = strrchr(path, '/');
    if (!tmp || !*tmp)
        tmp = "/tmp";
    return qp_path_join(tmp, slash ? slash + 1 : path);
}

enum qp_status qp_outfile_place(const char *src, const char *path,
                                struct qp_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) {
        if (rename(src, path) != 0)
            return qp_fail(err, QP_E_IO, "'%s': cannot rename into place: %s",
                           path, strerror(errno));
        return QP_OK;
    }
    FILE *in = fopen(src, "rb");
    if (!in)
        return qp_fail(err, QP_E_IO, "'%s': cannot read back the output: %s",
                       path, strerror(errno));
    struct qp_outfile *of;
    enum qp_status st = qp_outfile_open(path, &of, err);
    char *buf = st ? NULL : malloc((size_t)1 << 20);
    if (!st && !buf)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t n; !st && (n = fread(buf, 1, (size_t)1 << 20, in)) > 0;)
        if (fwrite(buf, 1, n, of->fp) != n)
            break; /* the commit reports it */
    if (!st && ferror(in))
        st = qp_fail(err, QP_E_IO, "'%s': cannot read back the output", path);
    free(buf);
    fclose(in);
    if (st) {
        qp_outfile_abort(of);
        return st;
    }
    return qp_outfile_commit(of, err);
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
    /* "out/" has the temporary "out/.tmp.X": drop the slash first */
    size_t n = strlen(o->path);
    while (n > 1 && o->path[n - 1] == '/')
        o->path[--n] = '\0';
    free(o->tmp_path);
    struct stat sb;
    enum qp_status st = QP_OK;
    if (!(o->tmp_path = tmp_name_for(o->path)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    else if (stat(o->path, &sb) == 0 && !S_ISDIR(sb.st_mode))
        st = qp_fail(err, QP_E_IO, "'%s': exists and is not a directory", path);
    else if (!mkdtemp(o->tmp_path))
        st = qp_fail(err, QP_E_IO, "'%s': cannot create output directory: %s",
                     path, strerror(errno));
    else if ((o->slot = reg_add(o->tmp_path, SLOT_DIR)) < 0) {
        rmdir(o->tmp_path);
        st = qp_fail(err, QP_E_IO, "'%s': too many outputs open at once", path);
    }
    if (st) {
        free(o->path);
        free(o->tmp_path);
        free(o);
        return st;
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
    reg_remove(od->slot);
    free(od->path);
    free(od->tmp_path);
    free(od);
}

enum qp_status qp_outdir_commit(struct qp_outdir *od, struct qp_error *err)
{
    enum qp_status st = QP_OK;
    struct stat sb;
    char *old = NULL;
    int old_slot = -1;
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
        /* the new folder is in place: the old one is a temporary now */
        reg_remove(od->slot);
        od->slot = -1;
        old_slot = reg_add(old, SLOT_DIR);
        qp_rmtree(old);
        reg_remove(old_slot);
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
