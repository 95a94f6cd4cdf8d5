/* tests/fuzz/fuzz-sandbox.h: runs a fuzz target's body in a long-lived
 * worker process, for code that calls a library which itself faults on
 * hostile input (libhdf5 1.10: reads out of bounds, divisions by zero,
 * huge allocations, endless loops), at hundreds to thousands of inputs a
 * second where a fork per input ran tens.
 *
 * A zygote is forked from a constructor of the target, before libFuzzer
 * starts (small, so cheap to fork, and without libFuzzer's hooks); it
 * forks a worker, which reads inputs until one kills it, then the next.
 * Each input goes through a shared mapping; the worker clears its copy of
 * the coverage counters (clang's inline 8-bit counters, __sancov_cntrs),
 * runs the body and copies the counters back, and they are added to this
 * process's, so libFuzzer is guided by the worker's coverage as if the
 * body had run here (comparison traces stay in the worker).
 *
 * A worker that faults decides whose fault it was from the faulting code
 * address (a signal's, a sanitizer report's, or the first frame of its
 * stack that is neither sanitizer runtime nor libc): code instrumented
 * for coverage (ours) or another library. Another library's fault is the
 * input's: the input is dropped, as qprobe's own worker refuses such a
 * file. So is an input that takes over FUZZ_SANDBOX_CPU_MS of CPU with
 * another library on the stack (an endless loop there). One that runs
 * out of that time in our code runs again in a new worker with
 * FUZZ_SANDBOX_LONG_MS, judged the same way: the time may go to our code
 * making room for what the other library then reads, which may fault
 * (a 12.9 KB HDF5 file declaring 100 MB behind the scale-offset filter
 * spent its 10 ms in qprobe's calloc, then libhdf5 read past a block of
 * its own; run here, that was reported as a crash of the target:
 * campaign of 2026-12-03). A fault of our
 * code, an allocation of it above libFuzzer's limit, a leak of a block
 * it allocated (looked for when our code's allocations outnumber its
 * frees, as libFuzzer does), an input slow in our code past the long
 * time, or a worker that dies
 * without saying, makes the body run here, in this process, where
 * libFuzzer and the sanitizers report it with the input saved (if a fault
 * does not happen here too, this process aborts).
 *
 * At exit a line says how many inputs were dropped and why. Without
 * coverage counters (the standalone driver) the worker still runs and
 * judges, which is what `make test` checks of it. */
#ifndef QP_TESTS_FUZZ_SANDBOX_H
#define QP_TESTS_FUZZ_SANDBOX_H

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/fdpass.h"

#define FUZZ_SANDBOX_CPU_MS 10 /* CPU time the worker gives an input */
#define FUZZ_SANDBOX_LONG_MS 5000 /* ... that ran out of it in our code */
#define FUZZ_SANDBOX_MS 10000    /* and wall time, here (plus the above) */
#define FUZZ_SANDBOX_LONG ((uint64_t)1 << 63) /* a request's long budget */
#define FUZZ_SANDBOX_MALLOC_MAX ((size_t)2048 << 20) /* libFuzzer's default */
/* the worker's exit status: its verdict on the input that ended it */
enum {
    FUZZ_SANDBOX_FOREIGN_SLOW = 96, /* out of time in another library */
    FUZZ_SANDBOX_SLOW = 97,         /* out of time in our code */
    FUZZ_SANDBOX_OURS = 98,         /* a fault in our code */
    FUZZ_SANDBOX_LEAK = 95,         /* a leak (libFuzzer tells whose) */
    FUZZ_SANDBOX_FOREIGN = 99       /* a fault in another library */
};

typedef void (*fuzz_sandbox_fn)(const uint8_t *data, size_t size);

/* The bounds of the counters and of the pc table ({pc, flags} per
 * instrumented block), which the linker defines as __start_/__stop_
 * symbols of their sections. They are referenced from assembly: the
 * coverage pass declares these symbols in every module and renames its
 * own when C declares them first (libFuzzer then sees no counters). */
#if defined(__has_feature)
#if __has_feature(coverage_sanitizer) && defined(__x86_64__)
#define FUZZ_SANDBOX_ADDR(sym)                                                 \
    __asm__("leaq " #sym "(%%rip), %0" : "=r"(p))
#elif __has_feature(coverage_sanitizer) && defined(__aarch64__)
#define FUZZ_SANDBOX_ADDR(sym)                                                 \
    __asm__("adrp %0, " #sym "\n\tadd %0, %0, :lo12:" #sym : "=r"(p))
#endif
#endif
#ifdef FUZZ_SANDBOX_ADDR
/* not instrumented: the handlers, and what runs over every counter */
#define FUZZ_SANDBOX_NOCOV __attribute__((no_sanitize("coverage")))
#define FUZZ_SANDBOX_BOUND(name, sym)                                          \
    static uint8_t *name(void)                                                 \
    {                                                                          \
        uint8_t *p;                                                            \
        FUZZ_SANDBOX_ADDR(sym);                                                \
        return p;                                                              \
    }
#else /* no counters to copy */
#define FUZZ_SANDBOX_NOCOV
#define FUZZ_SANDBOX_BOUND(name, sym)                                          \
    static uint8_t *name(void) { return NULL; }
#endif
FUZZ_SANDBOX_BOUND(fuzz_cntrs_start, __start___sancov_cntrs)
FUZZ_SANDBOX_BOUND(fuzz_cntrs_stop, __stop___sancov_cntrs)
FUZZ_SANDBOX_BOUND(fuzz_pcs_start, __start___sancov_pcs)
FUZZ_SANDBOX_BOUND(fuzz_pcs_stop, __stop___sancov_pcs)
extern void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));
extern void __sanitizer_set_report_path(const char *path) __attribute__((weak));
extern void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *out,
                                     size_t size) __attribute__((weak));
extern int __asan_report_present(void) __attribute__((weak));
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
extern size_t __asan_get_alloc_stack(void *addr, void **trace, size_t size,
                                     int *thread_id) __attribute__((weak));
extern int __sanitizer_install_malloc_and_free_hooks(
    void (*)(const volatile void *, size_t), void (*)(const volatile void *))
    __attribute__((weak));
extern void *__asan_get_report_pc(void) __attribute__((weak));
extern void *__asan_get_report_bp(void) __attribute__((weak));
extern void *__asan_get_report_address(void) __attribute__((weak));
extern const char *__asan_get_report_description(void) __attribute__((weak));
extern const char *__asan_locate_address(void *addr, char *name,
                                         size_t name_size, void **region,
                                         size_t *region_size)
    __attribute__((weak));

static struct {
    pid_t zygote; /* forks the workers (see fuzz_sandbox_zygote) */
    int ctl;      /* the socket to it */
    pid_t pid;    /* the worker */
    int sock;     /* the socket to it */
    uint8_t *shm; /* shared: the input (cap bytes), the worker's counters */
    size_t cap;   /* of the input */
    uintptr_t ours_lo, ours_hi; /* instrumented code */
    uintptr_t exe_lo, exe_hi;   /* the executable's mapping */
    fuzz_sandbox_fn fn;     /* the body */
    void (*prepare)(void);  /* run once in the zygote (may be NULL) */
    unsigned long runs, faults, slow, reruns, forks, leakchecks, longruns;
} fuzz_sb = {0, -1, 0, -1, NULL, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, 0, 0, 0};

/* The number of coverage counters (0 without coverage). */
static size_t fuzz_sandbox_ncounters(void)
{
    return fuzz_cntrs_start() ? (size_t)(fuzz_cntrs_stop() - fuzz_cntrs_start())
                              : 0;
}

/* dl_iterate_phdr's callback: the executable's address range. */
static int fuzz_sandbox_exe_range(struct dl_phdr_info *info, size_t n, void *ctx)
{
    (void)n;
    (void)ctx;
    /* the first object is the executable */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!fuzz_sb.exe_lo || lo < fuzz_sb.exe_lo)
            fuzz_sb.exe_lo = lo;
        if (hi > fuzz_sb.exe_hi)
            fuzz_sb.exe_hi = hi;
    }
    return 1;
}

/* 1: pc is in our (instrumented) code, -1: in another library, 0: in
 * neither (the sanitizer runtime, linked in by clang, a library of its
 * own with gcc; libc: look further down the stack). */
static int fuzz_sandbox_whose(uintptr_t pc)
{
    if (!pc)
        return 0;
    if (fuzz_sb.ours_lo && pc >= fuzz_sb.ours_lo && pc <= fuzz_sb.ours_hi)
        return 1;
    if (pc >= fuzz_sb.exe_lo && pc < fuzz_sb.exe_hi)
        return fuzz_sb.ours_lo ? 0 : 1; /* no pc table: all of it is ours */
    Dl_info di;
    if (!dladdr((void *)pc, &di) || !di.dli_fname)
        return 0;
    const char *base = strrchr(di.dli_fname, '/');
    base = base ? base + 1 : di.dli_fname;
    static const char *const neither[] = {"libc.so", "ld-linux", "libgcc_s",
                                          "libstdc++", "libm.so", "libasan",
                                          "libubsan", "liblsan"}; /* gcc's */
    for (size_t i = 0; i < sizeof neither / sizeof neither[0]; i++)
        if (!strncmp(base, neither[i], strlen(neither[i])))
            return 0;
    return -1;
}

#define FUZZ_SANDBOX_HANDLER __attribute__((noinline)) FUZZ_SANDBOX_NOCOV

/* The index of the first frame of frames[0..n) below the handler that
 * returns to from (its __builtin_return_address(0)): the frames above are
 * the handler's own and backtrace's (a sanitizer's interceptor, with gcc). */
FUZZ_SANDBOX_HANDLER static int fuzz_sandbox_below(void *const *frames, int n,
                                                   void *from)
{
    for (int i = 0; i < n; i++)
        if (frames[i] == from)
            return i;
    return n;
}

/* Dies with the verdict on a fault at pc (0: unknown) and the stack
 * below the handler that returns to from. A fault nobody claims is ours. */
FUZZ_SANDBOX_HANDLER static void fuzz_sandbox_die(uintptr_t pc, void *from)
{
    int w = fuzz_sandbox_whose(pc);
    if (!w) {
        void *frames[64];
        int n = backtrace(frames, 64);
        for (int i = fuzz_sandbox_below(frames, n, from); i < n && !w; i++)
            w = fuzz_sandbox_whose((uintptr_t)frames[i]);
    }
    _exit(w < 0 ? FUZZ_SANDBOX_FOREIGN : FUZZ_SANDBOX_OURS);
}

/* The worker's handler of faults and of SIGPROF (out of CPU time). */
FUZZ_SANDBOX_HANDLER static void fuzz_sandbox_on_signal(int sig, siginfo_t *si,
                                                        void *uc)
{
    (void)sig;
    (void)si;
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
    (void)uc;
#endif
    if (sig != SIGPROF)
        fuzz_sandbox_die(sig == SIGABRT ? 0 : pc, __builtin_return_address(0));
    /* out of time: another library's when it is anywhere on the stack
     * (looping, or calling us in a loop), else a slow input of ours */
    int w = fuzz_sandbox_whose(pc);
    void *frames[64];
    int n = backtrace(frames, 64);
    for (int i = fuzz_sandbox_below(frames, n, __builtin_return_address(0));
         i < n && w >= 0; i++)
        w = fuzz_sandbox_whose((uintptr_t)frames[i]);
    _exit(w < 0 ? FUZZ_SANDBOX_FOREIGN_SLOW : FUZZ_SANDBOX_SLOW);
}

static bool fuzz_sandbox_ours_block(const volatile void *p);

/* The heap block an overflow at redzone address a ran past the end of:
 * the one that ends exactly at a (the sanitizer reports a copy's first bad
 * byte, which is the block's end when the copy started inside it), found
 * from the block the sanitizer places a after or, when it places a before
 * the next block, from the blocks ending up to 64 bytes before a. NULL for
 * a wild address (a read through a garbage pointer of libhdf5's may land
 * in the redzone past one of our blocks: campaign of 2026-12-02) or an
 * underflow. */
FUZZ_SANDBOX_HANDLER static void *fuzz_sandbox_overflowed(void *a)
{
    void *r = NULL;
    size_t n = 0;
    const char *kind = __asan_locate_address(a, NULL, 0, &r, &n);
    uintptr_t at = (uintptr_t)a;
    if (!kind || strcmp(kind, "heap") || !r)
        return NULL;
    if (at >= (uintptr_t)r + n)
        return at == (uintptr_t)r + n ? r : NULL;
    if (at >= (uintptr_t)r)
        return NULL; /* in the block: not an overflow */
    for (size_t d = 1; d <= 64; d += 8) {
        kind = __asan_locate_address((void *)(at - d), NULL, 0, &r, &n);
        if (kind && !strcmp(kind, "heap") && r && (uintptr_t)r + n == at)
            return r;
    }
    return NULL;
}

/* The worker's sanitizer death callback (after an ASan or UBSan report).
 * An overflow of memory of ours is our fault whoever made it (another
 * library writing past a buffer we sized): of the stack or a global (only
 * instrumented code has redzones there), or of a heap block our code
 * allocated, run past from inside it. Not so a wild address or a use
 * after free (libhdf5 reading through a stale pointer of its own may land
 * next to or in a block of ours): there, as for other reports, the code
 * that made the access decides. */
FUZZ_SANDBOX_HANDLER static void fuzz_sandbox_on_death(void)
{
    uintptr_t pc = 0;
    if (__asan_report_present && __asan_report_present()) {
        void *a = __asan_get_report_address ? __asan_get_report_address() : NULL;
        const char *what = __asan_get_report_description
                               ? __asan_get_report_description()
                               : NULL;
        if (a && what &&
            (!strcmp(what, "stack-buffer-overflow") ||
             !strcmp(what, "stack-buffer-underflow") ||
             !strcmp(what, "global-buffer-overflow") ||
             (!strcmp(what, "heap-buffer-overflow") && __asan_locate_address &&
              fuzz_sandbox_ours_block(fuzz_sandbox_overflowed(a)))))
            _exit(FUZZ_SANDBOX_OURS);
        if (__asan_get_report_pc)
            pc = (uintptr_t)__asan_get_report_pc();
        /* an access by an interceptor (memcpy, strlen: the runtime's) was
         * made by its caller, whose return address is above the frame
         * pointer the sanitizer recorded: the stack unwound from this
         * callback may not reach it (a libhdf5 use after free in
         * H5Aexists was judged ours so, campaign of 2026-12-02) */
        uintptr_t bp = __asan_get_report_bp ? (uintptr_t)__asan_get_report_bp() : 0;
        if (pc && !fuzz_sandbox_whose(pc) && bp && bp % sizeof(void *) == 0)
            pc = ((const uintptr_t *)bp)[1];
    }
    fuzz_sandbox_die(pc, __builtin_return_address(0));
}

/* True when the heap block at p (or whose redzone p is in; allocated or
 * freed) was allocated by our code: the first frame of its allocation
 * stack, as the sanitizer recorded it, that is not the runtime's. */
FUZZ_SANDBOX_HANDLER static bool fuzz_sandbox_ours_block(const volatile void *p)
{
    void *trace[8];
    int tid;
    size_t n = __asan_get_alloc_stack
                   ? __asan_get_alloc_stack((void *)(uintptr_t)p, trace, 8, &tid)
                   : 0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t pc = (uintptr_t)trace[i];
        if (pc >= fuzz_sb.ours_lo && pc <= fuzz_sb.ours_hi)
            return true;
        if (pc < fuzz_sb.exe_lo || pc >= fuzz_sb.exe_hi)
            return false;
    }
    return false;
}

/* Blocks allocated by our code in the worker, and those of them freed:
 * libFuzzer looks for leaks when allocations outnumber frees, here only
 * our code's count (libhdf5's do not balance: its caches grow, and it
 * loses blocks on malformed files). Without a pc table (the standalone
 * driver) nothing counts. An allocation above libFuzzer's limit: whose it
 * is decides, as for a fault (ours: libFuzzer then reports it when the
 * body runs here). */
static unsigned long fuzz_sandbox_mallocs, fuzz_sandbox_frees;

FUZZ_SANDBOX_HANDLER static void fuzz_sandbox_on_malloc(const volatile void *p,
                                                        size_t n)
{
    if (n > FUZZ_SANDBOX_MALLOC_MAX)
        fuzz_sandbox_die(0, __builtin_return_address(0));
    fuzz_sandbox_mallocs += fuzz_sandbox_ours_block(p);
}

FUZZ_SANDBOX_HANDLER static void fuzz_sandbox_on_free(const volatile void *p)
{
    fuzz_sandbox_frees += fuzz_sandbox_ours_block(p);
}

/* The worker: its handlers, then inputs from sock until one ends it. */
static _Noreturn void fuzz_sandbox_worker(int sock)
{
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fuzz_sandbox_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                 SIGTRAP, SIGPROF};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigaction(faults[i], &sa, NULL);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(fuzz_sandbox_on_death);
    if (__sanitizer_install_malloc_and_free_hooks)
        __sanitizer_install_malloc_and_free_hooks(fuzz_sandbox_on_malloc,
                                                  fuzz_sandbox_on_free);
    size_t nc = fuzz_sandbox_ncounters();
    for (;;) {
        uint64_t n;
        ssize_t k = read(sock, &n, sizeof n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k != (ssize_t)sizeof n)
            _exit(0);
        long ms = n & FUZZ_SANDBOX_LONG ? FUZZ_SANDBOX_LONG_MS : FUZZ_SANDBOX_CPU_MS;
        n &= ~FUZZ_SANDBOX_LONG;
        if (n > fuzz_sb.cap)
            _exit(0);
        if (nc)
            memset(fuzz_cntrs_start(), 0, nc);
        struct itimerval cpu = {{0, 0}, {ms / 1000, ms % 1000 * 1000}}, off;
        memset(&off, 0, sizeof off);
        unsigned long m0 = fuzz_sandbox_mallocs, f0 = fuzz_sandbox_frees;
        setitimer(ITIMER_PROF, &cpu, NULL);
        fuzz_sb.fn(fuzz_sb.shm, (size_t)n);
        setitimer(ITIMER_PROF, &off, NULL);
        /* more allocations than frees: a leak, or a cache growing;
         * LeakSanitizer tells which */
        char ok = 1; /* 2: leaks were looked for */
        if (fuzz_sandbox_mallocs - m0 > fuzz_sandbox_frees - f0 &&
            __lsan_do_recoverable_leak_check &&
            (ok = 2, __lsan_do_recoverable_leak_check()))
            _exit(FUZZ_SANDBOX_LEAK);
        if (nc)
            memcpy(fuzz_sb.shm + fuzz_sb.cap, fuzz_cntrs_start(), nc);
        if (write(sock, &ok, 1) != 1)
            _exit(0);
    }
}

/* A request or an answer of the zygote's, whole. */
static bool fuzz_sandbox_send(int s, const void *p, size_t n, int fd)
{
    return qp_fd_send(s, p, n, fd) == (ssize_t)n;
}

static bool fuzz_sandbox_recv(int s, void *p, size_t n, int *fd)
{
    return qp_fd_recv(s, p, n, fd) == (ssize_t)n;
}

/* The zygote: forked from here before libFuzzer starts (and again only
 * when an input outgrows the mapping), it forks each worker on request,
 * so a new worker costs the fork of a small process (this one grows with
 * the corpus), and reaps it. Requests {'S', 0}: a worker (answer: its pid
 * and, as an fd, the socket to it); {'W', pid}: its wait status, once it
 * has ended. */
static _Noreturn void fuzz_sandbox_zygote(int ctl)
{
    /* no sanitizer report or message of the workers' own: their verdict
     * is their exit status (and from /, a relative crash file path of a
     * libFuzzer forked from after it started fails) */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
        close(null);
    }
    /* and none into a log_path's files either (make asan counts those):
     * the sanitizers write to the stderr just closed */
    if (__sanitizer_set_report_path)
        __sanitizer_set_report_path("stderr");
    if (chdir("/") != 0)
        _exit(0);
    if (fuzz_sb.prepare)
        fuzz_sb.prepare();
    /* the unwinder loaded, and the sanitizer's list of modules made (each
     * report looks its pcs up in it), now rather than in each worker */
    void *warm[4];
    backtrace(warm, 4);
    if (__sanitizer_symbolize_pc) {
        char buf[256];
        __sanitizer_symbolize_pc((void *)(uintptr_t)fuzz_sandbox_zygote, "%m",
                                 buf, sizeof buf);
    }
    for (;;) {
        int32_t req[2], fd;
        if (!fuzz_sandbox_recv(ctl, req, sizeof req, &fd))
            _exit(0);
        if (req[0] == 'W') {
            int status = -1;
            while (waitpid(req[1], &status, 0) < 0 && errno == EINTR)
                ;
            int32_t st = status;
            if (!fuzz_sandbox_send(ctl, &st, sizeof st, -1))
                _exit(0);
            continue;
        }
        int sv[2];
        int32_t pid = -1;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
            pid = fork();
            if (pid == 0) {
                close(ctl);
                close(sv[0]);
                fuzz_sandbox_worker(sv[1]);
            }
            close(sv[1]);
        }
        bool sent = fuzz_sandbox_send(ctl, &pid, sizeof pid, pid > 0 ? sv[0] : -1);
        if (pid > 0)
            close(sv[0]);
        if (!sent)
            _exit(0);
    }
}

static int fuzz_sandbox_reap(void);

/* Ends the worker and the zygote. */
static void fuzz_sandbox_stop(void)
{
    if (fuzz_sb.pid > 0) {
        kill(fuzz_sb.pid, SIGKILL);
        fuzz_sandbox_reap();
    }
    if (fuzz_sb.ctl >= 0)
        close(fuzz_sb.ctl); /* the zygote ends at the end of its input */
    if (fuzz_sb.zygote > 0)
        waitpid(fuzz_sb.zygote, NULL, 0);
    fuzz_sb.zygote = fuzz_sb.pid = 0;
    fuzz_sb.ctl = fuzz_sb.sock = -1;
}

/* At exit: ends the worker and says what became of the inputs. */
static void fuzz_sandbox_at_exit(void)
{
    fuzz_sandbox_stop();
    fprintf(stderr, "fuzz-sandbox: %lu inputs, %lu dropped for a fault and %lu "
            "for time in another library, %lu run again with more time, %lu "
            "slow or leaking run here, %lu workers, %lu leak checks\n",
            fuzz_sb.runs, fuzz_sb.faults, fuzz_sb.slow, fuzz_sb.longruns,
            fuzz_sb.reruns, fuzz_sb.forks, fuzz_sb.leakchecks);
}

/* Makes room for inputs of size bytes and a zygote that knows it (a
 * mapping made after the zygote would not be shared with its workers);
 * false on failure. */
static bool fuzz_sandbox_zygote_start(size_t size)
{
    if (size > fuzz_sb.cap || !fuzz_sb.shm) {
        fuzz_sandbox_stop();
        size_t cap = size > ((size_t)1 << 20) ? size : (size_t)1 << 20;
        if (fuzz_sb.shm)
            munmap(fuzz_sb.shm, fuzz_sb.cap + fuzz_sandbox_ncounters());
        fuzz_sb.shm = mmap(NULL, cap + fuzz_sandbox_ncounters(),
                           PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
        if (fuzz_sb.shm == MAP_FAILED)
            return (fuzz_sb.shm = NULL), (fuzz_sb.cap = 0), false;
        fuzz_sb.cap = cap;
    }
    if (fuzz_sb.zygote > 0)
        return true;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        fuzz_sandbox_zygote(sv[1]);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return false;
    }
    fuzz_sb.zygote = pid;
    fuzz_sb.ctl = sv[0];
    return true;
}

/* Has the zygote fork a worker with room for size bytes; false on
 * failure. */
static bool fuzz_sandbox_start(size_t size)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!fuzz_sandbox_zygote_start(size))
            return false;
        int32_t req[2] = {'S', 0}, pid = -1;
        int fd = -1;
        if (fuzz_sandbox_send(fuzz_sb.ctl, req, sizeof req, -1) &&
            fuzz_sandbox_recv(fuzz_sb.ctl, &pid, sizeof pid, &fd) && pid > 0 &&
            fd >= 0) {
            fuzz_sb.pid = pid;
            fuzz_sb.sock = fd;
            fuzz_sb.forks++;
            return true;
        }
        if (fd >= 0)
            close(fd);
        fuzz_sandbox_stop(); /* a zygote that does not answer: a new one */
    }
    return false;
}

/* Makes fn the body run in the sandbox and prepare (NULL: none) what the
 * zygote runs once, and starts the zygote. Called from a constructor of
 * the target, before libFuzzer starts, so the zygote is a small process
 * (cheap to fork) without libFuzzer's hooks (a worker writes no crash
 * file, and its allocation limit is fuzz_sandbox_on_malloc's). */
static void fuzz_sandbox_begin(fuzz_sandbox_fn fn, void (*prepare)(void))
{
    fuzz_sb.fn = fn;
    fuzz_sb.prepare = prepare;
    dl_iterate_phdr(fuzz_sandbox_exe_range, NULL);
    /* the pc table: {pc, flags} pairs of every instrumented block */
    const uintptr_t *p = (const uintptr_t *)(void *)fuzz_pcs_start(),
                    *end = (const uintptr_t *)(void *)fuzz_pcs_stop();
    for (; p && p + 1 < end; p += 2) {
        if (!fuzz_sb.ours_lo || p[0] < fuzz_sb.ours_lo)
            fuzz_sb.ours_lo = p[0];
        if (p[0] > fuzz_sb.ours_hi)
            fuzz_sb.ours_hi = p[0];
    }
    atexit(fuzz_sandbox_at_exit);
    fuzz_sandbox_zygote_start(0);
}

/* The ended worker's wait status, from the zygote (-1: unknown, and the
 * zygote is ended). */
static int fuzz_sandbox_reap(void)
{
    int32_t req[2] = {'W', (int32_t)fuzz_sb.pid}, status = -1;
    int fd = -1;
    close(fuzz_sb.sock);
    fuzz_sb.sock = -1;
    fuzz_sb.pid = 0;
    bool ok = fuzz_sandbox_send(fuzz_sb.ctl, req, sizeof req, -1) &&
              fuzz_sandbox_recv(fuzz_sb.ctl, &status, sizeof status, &fd);
    if (fd >= 0)
        close(fd);
    if (!ok) {
        fuzz_sandbox_stop();
        status = -1;
    }
    return status;
}

/* Adds the worker's counters to ours (not instrumented itself: it runs
 * over every counter at each input). */
__attribute__((noinline)) FUZZ_SANDBOX_NOCOV static void fuzz_sandbox_merge(void)
{
    const uint8_t *from = fuzz_sb.shm + fuzz_sb.cap;
    uint8_t *to = fuzz_cntrs_start();
    size_t n = fuzz_sandbox_ncounters();
    for (size_t i = 0; i < n; i++)
        if (from[i]) {
            unsigned v = (unsigned)to[i] + from[i];
            to[i] = (uint8_t)(v > 255 ? 255 : v);
        }
}

/* What became of an input. */
enum fuzz_sandbox_result {
    FUZZ_SANDBOX_RAN,     /* the body returned (in the worker, or here) */
    FUZZ_SANDBOX_FAULTED, /* dropped: a fault in another library */
    FUZZ_SANDBOX_TIMED    /* dropped: out of time in another library */
};

/* One run of the body on data in a worker, with the long CPU time or
 * the short one: 0 when it ran, else the worker's verdict (FUZZ_SANDBOX_*;
 * FOREIGN_SLOW past the wall time; -1 unknown) and *status its wait
 * status. */
static int fuzz_sandbox_try(const uint8_t *data, size_t size, bool lng,
                            int *status)
{
    if ((fuzz_sb.pid <= 0 || size > fuzz_sb.cap) && !fuzz_sandbox_start(size))
        abort(); /* no fork, no mapping: nothing is being tested */
    memcpy(fuzz_sb.shm, data, size);
    uint64_t n = size | (lng ? FUZZ_SANDBOX_LONG : 0);
    char ok = 0;
    struct pollfd p = {fuzz_sb.sock, POLLIN, 0};
    int k = -1, wait = FUZZ_SANDBOX_MS + (lng ? FUZZ_SANDBOX_LONG_MS : 0);
    bool sent = write(fuzz_sb.sock, &n, sizeof n) == (ssize_t)sizeof n;
    while (sent && (k = poll(&p, 1, wait)) < 0 && errno == EINTR)
        ;
    if (sent && k > 0 && read(fuzz_sb.sock, &ok, 1) == 1 && (ok == 1 || ok == 2)) {
        fuzz_sb.leakchecks += ok == 2;
        if (fuzz_sandbox_ncounters())
            fuzz_sandbox_merge();
        return 0;
    }
    bool late = sent && k == 0;
    if (late)
        kill(fuzz_sb.pid, SIGKILL);
    *status = fuzz_sandbox_reap();
    if (late)
        return FUZZ_SANDBOX_FOREIGN_SLOW;
    return *status != -1 && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

/* Runs the body on data in a worker (see the top of this file). A fault
 * of our code is reported by running the body here. fuzz_sandbox_begin
 * must have been called. */
static enum fuzz_sandbox_result fuzz_sandbox_run(const uint8_t *data, size_t size)
{
    fuzz_sb.runs++;
    int status = -1, verdict = fuzz_sandbox_try(data, size, false, &status);
    if (verdict == FUZZ_SANDBOX_SLOW) { /* in our code: again, longer */
        fuzz_sb.longruns++;
        verdict = fuzz_sandbox_try(data, size, true, &status);
    }
    if (!verdict)
        return FUZZ_SANDBOX_RAN;
    if (verdict == FUZZ_SANDBOX_FOREIGN_SLOW)
        return fuzz_sb.slow++, FUZZ_SANDBOX_TIMED;
    if (verdict == FUZZ_SANDBOX_FOREIGN)
        return fuzz_sb.faults++, FUZZ_SANDBOX_FAULTED;
    /* ours, or unexplained: fault here, where it gets reported; a slow
     * input is libFuzzer's -timeout to judge */
    fuzz_sb.fn(data, size);
    if (verdict == FUZZ_SANDBOX_SLOW || verdict == FUZZ_SANDBOX_LEAK)
        return fuzz_sb.reruns++, FUZZ_SANDBOX_RAN;
    fprintf(stderr, "fuzz-sandbox: the worker died (status 0x%x) on this input "
            "but running it here did not fault\n", (unsigned)status);
    abort();
}

#endif
