/* core/parallel.h: a minimal parallel-for over a persistent worker pool.
 *
 * The thread count is QP_THREADS from the environment when set (an
 * integer from 1 to QP_PARALLEL_MAX_THREADS), otherwise the number of
 * online CPUs (at most that many; counted once per process). Programs refuse other values at start
 * (qp_parallel_check_env); library code that was not told treats them as
 * unset. Workers start on first use and
 * sleep between calls. One call runs on the pool at a time; a nested or
 * concurrent call runs its shares on the calling thread. A child process
 * made by fork() starts with an empty pool of its own. */
#ifndef QP_CORE_PARALLEL_H
#define QP_CORE_PARALLEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define QP_PARALLEL_MAX_THREADS 256

/* Number of threads parallel loops use. */
int qp_parallel_threads(void);

/* QP_E_INVAL naming QP_THREADS and what it takes when it is set to
 * anything but an integer from 1 to QP_PARALLEL_MAX_THREADS (empty counts
 * as unset). */
enum qp_status qp_parallel_check_env(struct qp_error *err);

/* Calls fn(ctx, t, nthreads) once for every t in [0, nthreads) on
 * nthreads threads (the caller's thread runs t = 0). Each call decides its
 * own share of the work from t. nthreads <= 0 means qp_parallel_threads().
 * Shares that no worker can take (a thread could not be started, or the
 * pool is busy) run on the caller, so the result never depends on thread
 * creation or scheduling. */
void qp_parallel_run(void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                     int nthreads);

/* How long (microseconds) after a hot run the workers poll for the next
 * one instead of sleeping. */
#define QP_PARALLEL_HOT_US 200

/* qp_parallel_run for a run of many small ones (the int mode's passes):
 * the same calls and results; the workers then stay awake for
 * QP_PARALLEL_HOT_US polling for the next run (a sleeping worker takes
 * tens of microseconds to wake on a busy or virtual machine), and the
 * caller polls for their end rather than sleeping on it. Runs that are
 * not hot find the workers awake too, and are otherwise unchanged. */
void qp_parallel_run_hot(void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                         int nthreads);

/* The threads a job of `work` units should run on when each thread needs
 * at least min_per_thread units to pay for its start: from 1 (work below
 * 2 * min_per_thread, or min_per_thread not > 0) to max_threads
 * (<= 0: qp_parallel_threads()). For splits that follow the work, so a
 * second thread never makes a small job slower. */
int qp_parallel_threads_for(double work, double min_per_thread,
                            int max_threads);

/* fn(ctx, t, begin, end) over [0, n) in chunks of `chunk` items (the
 * last shorter), claimed one at a time by up to nthreads threads (<= 0:
 * qp_parallel_threads()) in a hot run: a thread that starts late, or is
 * preempted, leaves the chunks it has not claimed to the others instead
 * of holding the run up by a fixed share. t (< nthreads) names the
 * thread, for its own scratch; which chunks a thread runs varies from
 * run to run, so each chunk's result must depend on its items alone.
 * One thread, or one chunk, is one call fn(ctx, 0, 0, n). */
void qp_parallel_chunks(void (*fn)(void *ctx, int t, size_t begin, size_t end),
                        void *ctx, size_t n, size_t chunk, int nthreads);

/* An explicit handle on the pool's threads, for code that passes "the
 * threads of this run" around (the model runtime). Jobs run as
 * qp_parallel_run does, capped at the handle's thread count. NULL is
 * accepted everywhere and means qp_parallel_threads() threads. The owner
 * frees it with qp_pool_free. */
struct qp_pool;

/* nthreads <= 0: qp_parallel_threads(). NULL when out of memory. */
struct qp_pool *qp_pool_new(int nthreads);
void qp_pool_free(struct qp_pool *p);

/* Threads of the handle (qp_parallel_threads() for NULL). */
int qp_pool_threads(const struct qp_pool *p);

/* qp_parallel_run(fn, ctx, n) with n = nthreads, capped at the handle's
 * count (nthreads <= 0: the handle's count). */
void qp_pool_run(struct qp_pool *p, void (*fn)(void *ctx, int t, int nthreads),
                 void *ctx, int nthreads);

/* qp_pool_run as a hot run (qp_parallel_run_hot). */
void qp_pool_run_hot(struct qp_pool *p,
                     void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                     int nthreads);

/* The share [*begin, *end) of n items for thread t of nthreads, in
 * contiguous blocks aligned to `align` items (align >= 1). */
void qp_parallel_split(size_t n, int t, int nthreads, size_t align,
                       size_t *begin, size_t *end);

/* Items handed out a block at a time to whichever share of a call asks
 * first, for work whose results do not depend on which share does an item:
 * a share whose thread woke late or lost its core to another process then
 * takes fewer items, and the call does not wait for it at the end. Set up
 * with qp_claim_init before the call; its shares loop on qp_claim_next. */
struct qp_claim {
    _Atomic size_t next;
    size_t n, step;
};

/* Items [0, n) in blocks of step (step >= 1). */
void qp_claim_init(struct qp_claim *c, size_t n, size_t step);

/* The next unclaimed block [*begin, *end) (at most step items): true, or
 * false when every item is claimed. Safe from any thread. */
bool qp_claim_next(struct qp_claim *c, size_t *begin, size_t *end);

/* Keeps the pool's workers awake from qp_parallel_hold to the matching
 * qp_parallel_unhold, for a sequence of calls made back to back (a model's
 * forward pass): between calls the workers spin (a pause loop, no system
 * call) instead of sleeping, and a caller waiting for the shares workers
 * run spins too, each for at most QP_PARALLEL_SPIN_US microseconds at a
 * time before sleeping as without a hold. A sleeping thread woken on a core
 * that runs another process (even one at nice 19) may wait for that
 * process's time slice, most of a millisecond: with shares of that size the
 * second thread was then lost. Holds nest (a count; any thread may hold).
 * While held, the workers use their cores even when there is nothing to
 * do. Results never depend on holds. */
#define QP_PARALLEL_SPIN_US 2000
void qp_parallel_hold(void);
void qp_parallel_unhold(void);

#endif
