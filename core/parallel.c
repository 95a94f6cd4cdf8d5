/* core/parallel.c: parallel-for on a persistent worker pool.
 *
 * Workers are started on first use and then sleep on a condition variable
 * between calls, so a call costs a wake-up, not a thread start (which
 * dominated small layers). The pool is the one process-wide object in
 * core/: it carries no state from one call to the next beyond the sleeping
 * threads. One call runs at a time; a call made while the pool is busy (a
 * nested call from inside a share, or another thread's call) runs all its
 * shares on the calling thread, so results never depend on scheduling.
 *
 * Shares are claimed, not assigned: the caller runs share 0, then every
 * share no worker has claimed yet, and waits only for the shares workers
 * are running. A worker that wakes late (its core busy with another
 * process, as on a shared machine) finds nothing left instead of holding
 * the caller up for a scheduling quantum; each share is still the same
 * fn(ctx, t, nthreads) call whoever runs it. But a share of a static split
 * that a late worker claims still holds the caller up: work that does
 * not depend on who does it is better handed out in small blocks
 * (qp_claim, qp_parallel_chunks).
 *
 * Waking a sleeping thread costs a system call and, on a virtual machine,
 * an interrupt to the other CPU: tens of microseconds, often more than a
 * small pass's share. Two ways keep the workers awake instead: a sequence
 * of calls made back to back (a forward pass) holds the pool
 * (qp_parallel_hold), so its workers spin between calls (the beyond-a-call
 * state is then the hold count); and after a hot run
 * (qp_parallel_run_hot), for QP_PARALLEL_HOT_US, a worker with nothing to
 * do polls for the next run and the caller for the workers' end. */
#include "core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS (QP_PARALLEL_MAX_THREADS - 1)

/* QP_THREADS: 0 when unset or empty, the count when it is a decimal
 * integer in [1, QP_PARALLEL_MAX_THREADS], -1 otherwise. */
static int env_threads(void)
{
    const char *e = getenv("QP_THREADS");
    if (!e || !*e)
        return 0;
    long v = 0;
    for (const char *p = e; *p; p++) {
        if (*p < '0' || *p > '9' || v > QP_PARALLEL_MAX_THREADS)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v >= 1 && v <= QP_PARALLEL_MAX_THREADS ? (int)v : -1;
}

/* Online CPUs (at most MAX_WORKERS + 1), asked once per process:
 * sysconf(_SC_NPROCESSORS_ONLN) opens and parses a file in /sys, and the
 * kernels ask for the thread count at every call (it was half the time
 * of a small model's forward). */
static int online_cpus(void)
{
    static _Atomic int known; /* 0: not asked yet */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v)
        return v;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    v = n >= 1 ? (int)(n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : n) : 1;
    atomic_store_explicit(&known, v, memory_order_relaxed);
    return v;
}

int qp_parallel_threads(void)
{
    int v = env_threads();
    return v > 0 ? v : online_cpus();
}

enum qp_status qp_parallel_check_env(struct qp_error *err)
{
    if (env_threads() >= 0)
        return QP_OK;
    return qp_fail(err, QP_E_INVAL, "QP_THREADS='%s' is not a thread count; "
                   "use an integer from 1 to %d (or leave it unset: one "
                   "thread per CPU)", getenv("QP_THREADS"),
                   QP_PARALLEL_MAX_THREADS);
}

static struct {
    pthread_mutex_t busy;  /* held by the caller for a whole run */
    pthread_mutex_t lock;  /* protects the fields below */
    pthread_cond_t start, done;
    int workers;           /* started so far; worker w runs share w + 1 */
    _Atomic unsigned long gen; /* bumped for every run (read unlocked
                                  while polling) */
    void (*fn)(void *, int, int);
    void *ctx;
    int nthreads;
    int next;              /* the next share nobody has claimed */
    _Atomic int running;   /* shares workers have claimed and not finished */
    unsigned long born[MAX_WORKERS]; /* gen when worker w was started */
    _Atomic int64_t hot_until; /* CLOCK_MONOTONIC ns: poll until then */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
          PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, NULL,
          0, 0, 0, {0}, 0};

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Polls (lock released meanwhile, held again on return) until done(arg)
 * or the hot window of the last hot run ends; false when it ended first.
 * After the first POLL_SPINS rounds it yields the CPU at every round: on
 * a busy machine another thread (the one it waits for, perhaps) may need
 * this CPU more. */
#define POLL_SPINS 512
static bool poll_hot(bool (*done)(unsigned long), unsigned long arg)
{
    if (atomic_load_explicit(&pool.hot_until, memory_order_relaxed) <= now_ns())
        return false;
    pthread_mutex_unlock(&pool.lock);
    bool got = false;
    for (unsigned i = 0; !(got = done(arg)); i++) {
        if (i < POLL_SPINS) {
            cpu_relax();
            if (i % 64 != 63)
                continue;
        } else {
            sched_yield();
        }
        if (atomic_load_explicit(&pool.hot_until, memory_order_relaxed) <= now_ns())
            break;
    }
    pthread_mutex_lock(&pool.lock);
    return got;
}

static bool new_run(unsigned long seen)
{
    return atomic_load_explicit(&pool.gen, memory_order_acquire) != seen;
}

static bool workers_done(unsigned long unused)
{
    (void)unused;
    return atomic_load_explicit(&pool.running, memory_order_acquire) == 0;
}

/* ---- holds (qp_parallel_hold): spinning instead of sleeping ----
 *
 * What spinners read without the lock: pool.gen and pool.running (atomic,
 * written under the lock), and the CPU each
 * thread of the run is on, plus one (0: none). A spinner that shares its
 * core with a thread of the run that has work to do yields the core to it:
 * the scheduler may have put both on one core. */
static _Atomic int holds;
static _Atomic int caller_cpu;             /* the current run's caller */
static _Atomic int share_cpu[MAX_WORKERS]; /* worker w, while in a share */

static int this_cpu(void)
{
    int c = sched_getcpu();
    return c >= 0 ? c + 1 : 0;
}

/* What a spinner waits for: worker `id` for a run after `seen`, the
 * caller (id -1) for the workers' shares to finish. */
struct spin {
    int id;
    unsigned long seen;
};

static bool spin_done(const struct spin *s)
{
    return s->id >= 0 ? new_run(s->seen) : workers_done(0);
}

/* True when a thread of the run with work to do is on the spinner's CPU
 * (workers: how many workers exist). */
static bool in_the_way(const struct spin *s, int workers)
{
    int me = this_cpu();
    if (!me)
        return false;
    if (s->id >= 0)
        return atomic_load_explicit(&caller_cpu, memory_order_relaxed) == me;
    for (int w = 0; w < workers; w++)
        if (atomic_load_explicit(&share_cpu[w], memory_order_relaxed) == me)
            return true;
    return false;
}

/* Spins while a hold is on, for at most QP_PARALLEL_SPIN_US, until
 * spin_done(s) (called without the lock). */
static void spin_while_held(const struct spin *s, int workers)
{
    uint64_t end = 0;
    for (unsigned i = 0; atomic_load_explicit(&holds, memory_order_relaxed) > 0;
         i++) {
        if (spin_done(s))
            return;
        if (i % 64 == 0) {
            uint64_t t = now_ns();
            if (!end)
                end = t + (uint64_t)QP_PARALLEL_SPIN_US * 1000u;
            else if (t > end)
                return;
            if (in_the_way(s, workers))
                sched_yield();
        }
        cpu_relax();
    }
}

void qp_parallel_hold(void)
{
    atomic_fetch_add_explicit(&holds, 1, memory_order_relaxed);
}

void qp_parallel_unhold(void)
{
    atomic_fetch_sub_explicit(&holds, 1, memory_order_relaxed);
}

/* Claims the next share of the current run (called with lock held):
 * its index, or -1 when every share is claimed. */
static int claim(void)
{
    return pool.next < pool.nthreads ? pool.next++ : -1;
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    pthread_mutex_lock(&pool.lock);
    /* runs published after this worker was started are its to join, even
     * if it gets here only after one was published */
    unsigned long seen = pool.born[id];
    for (;;) {
        bool spun = false;
        while (pool.gen == seen) {
            if (!spun && atomic_load_explicit(&holds, memory_order_relaxed)) {
                /* once per wait: a run published meanwhile is seen when
                 * the loop checks pool.gen again under the lock */
                spun = true;
                pthread_mutex_unlock(&pool.lock);
                struct spin s = {id, seen};
                spin_while_held(&s, 0);
                pthread_mutex_lock(&pool.lock);
                continue;
            }
            if (!poll_hot(new_run, seen) && pool.gen == seen)
                pthread_cond_wait(&pool.start, &pool.lock);
        }
        seen = pool.gen;
        /* the run cannot end while a share is claimed and running, so fn
         * and ctx stay valid for it */
        for (int t; (t = claim()) >= 0;) {
            void (*fn)(void *, int, int) = pool.fn;
            void *ctx = pool.ctx;
            int n = pool.nthreads;
            pool.running++;
            atomic_store_explicit(&share_cpu[id], this_cpu(),
                                  memory_order_relaxed);
            pthread_mutex_unlock(&pool.lock);
            fn(ctx, t, n);
            pthread_mutex_lock(&pool.lock);
            atomic_store_explicit(&share_cpu[id], 0, memory_order_relaxed);
            if (--pool.running == 0)
                pthread_cond_signal(&pool.done);
        }
    }
    return NULL;
}

/* A forked child has none of the parent's workers: it starts over with an
 * empty pool (and fresh locks, which a parent thread may have held). */
static void reset_in_child(void)
{
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.start, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.next = 0;
    pool.nthreads = 0;
    pool.running = 0;
    pool.hot_until = 0;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, reset_in_child);
}

/* Starts workers up to want (called with busy held). Returns how many
 * exist. */
static int grow(int want)
{
    if (pool.workers < want)
        pthread_once(&atfork_once, register_atfork);
    while (pool.workers < want) {
        pthread_t th;
        pthread_mutex_lock(&pool.lock);
        int id = pool.workers;
        pool.born[id] = pool.gen;
        int ok = pthread_create(&th, NULL, worker_main, (void *)(intptr_t)id) == 0;
        if (ok) {
            pthread_detach(th);
            pool.workers++;
        }
        pthread_mutex_unlock(&pool.lock);
        if (!ok)
            break;
    }
    return pool.workers;
}

/* qp_parallel_run; hot: the caller polls for the workers' end (the
 * window set by the caller of a hot run). */
static void run(void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                int nthreads, bool hot)
{
    if (nthreads <= 0)
        nthreads = qp_parallel_threads();
    if (nthreads > MAX_WORKERS + 1)
        nthreads = MAX_WORKERS + 1;
    if (nthreads == 1 || pthread_mutex_trylock(&pool.busy) != 0) {
        for (int t = 0; t < nthreads; t++)
            fn(ctx, t, nthreads);
        return;
    }
    grow(nthreads - 1); /* shares no worker takes, the caller runs */
    pthread_mutex_lock(&pool.lock);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.nthreads = nthreads;
    pool.next = 1; /* share 0 is the caller's */
    pool.running = 0;
    pool.gen++;
    if (atomic_load_explicit(&holds, memory_order_relaxed))
        atomic_store_explicit(&caller_cpu, this_cpu(), memory_order_relaxed);
    pthread_cond_broadcast(&pool.start);
    pthread_mutex_unlock(&pool.lock);
    fn(ctx, 0, nthreads);
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        int t = claim();
        if (t < 0)
            break; /* lock held */
        pthread_mutex_unlock(&pool.lock);
        fn(ctx, t, nthreads);
    }
    if (pool.running > 0 && atomic_load_explicit(&holds, memory_order_relaxed)) {
        struct spin s = {-1, 0};
        int workers = pool.workers;
        pthread_mutex_unlock(&pool.lock);
        spin_while_held(&s, workers);
        pthread_mutex_lock(&pool.lock);
    }
    while (pool.running > 0)
        if (!(hot && poll_hot(workers_done, 0)) && pool.running > 0)
            pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.busy);
}

void qp_parallel_run(void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                     int nthreads)
{
    run(fn, ctx, nthreads, false);
}

void qp_parallel_run_hot(void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                         int nthreads)
{
    if (nthreads != 1)
        atomic_store_explicit(&pool.hot_until,
                              now_ns() + (int64_t)QP_PARALLEL_HOT_US * 1000,
                              memory_order_relaxed);
    run(fn, ctx, nthreads, true);
}

void qp_parallel_split(size_t n, int t, int nthreads, size_t align,
                       size_t *begin, size_t *end)
{
    size_t blocks = (n + align - 1) / align;
    size_t per = blocks / (size_t)nthreads, extra = blocks % (size_t)nthreads;
    size_t b0 = (size_t)t * per + ((size_t)t < extra ? (size_t)t : extra);
    size_t b1 = b0 + per + ((size_t)t < extra);
    *begin = b0 * align < n ? b0 * align : n;
    *end = b1 * align < n ? b1 * align : n;
}

/* ---- handles ------------------------------------------------------------ */

struct qp_pool {
    int n;
};

struct qp_pool *qp_pool_new(int nthreads)
{
    struct qp_pool *p = malloc(sizeof *p);
    if (p)
        p->n = nthreads <= 0 ? qp_parallel_threads() : nthreads;
    return p;
}

void qp_pool_free(struct qp_pool *p)
{
    free(p);
}

int qp_pool_threads(const struct qp_pool *p)
{
    return p ? p->n : qp_parallel_threads();
}

void qp_pool_run(struct qp_pool *p, void (*fn)(void *ctx, int t, int nthreads),
                 void *ctx, int nthreads)
{
    int cap = qp_pool_threads(p);
    qp_parallel_run(fn, ctx, nthreads <= 0 || nthreads > cap ? cap : nthreads);
}

/* ---- claimed items -------------------------------------------------------- */

void qp_claim_init(struct qp_claim *c, size_t n, size_t step)
{
    atomic_init(&c->next, 0);
    c->n = n;
    c->step = step ? step : 1;
}

bool qp_claim_next(struct qp_claim *c, size_t *begin, size_t *end)
{
    if (atomic_load_explicit(&c->next, memory_order_relaxed) >= c->n)
        return false;
    size_t b = atomic_fetch_add_explicit(&c->next, c->step, memory_order_relaxed);
    if (b >= c->n)
        return false;
    *begin = b;
    *end = c->n - b < c->step ? c->n : b + c->step;
    return true;
}

void qp_pool_run_hot(struct qp_pool *p,
                     void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                     int nthreads)
{
    int cap = qp_pool_threads(p);
    qp_parallel_run_hot(fn, ctx,
                        nthreads <= 0 || nthreads > cap ? cap : nthreads);
}

int qp_parallel_threads_for(double work, double min_per_thread, int max_threads)
{
    int cap = max_threads > 0 ? max_threads : qp_parallel_threads();
    if (!(min_per_thread > 0) || !(work >= 2 * min_per_thread) || cap <= 1)
        return 1;
    double n = work / min_per_thread;
    return n >= cap ? cap : (int)n;
}

/* ---- chunks claimed by whoever is free ------------------------------------ */

struct chunk_job {
    void (*fn)(void *ctx, int t, size_t begin, size_t end);
    void *ctx;
    struct qp_claim claim;
};

static void chunk_share(void *arg, int t, int nt)
{
    struct chunk_job *j = arg;
    (void)nt;
    for (size_t b, e; qp_claim_next(&j->claim, &b, &e);)
        j->fn(j->ctx, t, b, e);
}

void qp_parallel_chunks(void (*fn)(void *ctx, int t, size_t begin, size_t end),
                        void *ctx, size_t n, size_t chunk, int nthreads)
{
    if (!n)
        return;
    if (!chunk)
        chunk = 1;
    if (nthreads <= 0)
        nthreads = qp_parallel_threads();
    size_t chunks = (n + chunk - 1) / chunk;
    if (nthreads == 1 || chunks == 1) {
        fn(ctx, 0, 0, n);
        return;
    }
    if ((size_t)nthreads > chunks)
        nthreads = (int)chunks;
    struct chunk_job j = {fn, ctx, {0}};
    qp_claim_init(&j.claim, n, chunk);
    qp_parallel_run_hot(chunk_share, &j, nthreads);
}
