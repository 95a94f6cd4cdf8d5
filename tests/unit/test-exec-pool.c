/* Unit tests of the worker pool (core/parallel.h qp_pool_*), which the
 * executor shares among the nodes of a run: every share runs once per
 * job, nested and concurrent jobs fall back to running serially, and NULL
 * or 1-thread pools still run every share. */
#include <pthread.h>
#include <stdatomic.h>

#include "core/parallel.h"
#include "tests/test.h"

struct count {
    atomic_int calls;
    atomic_int mask; /* bit t: share t ran */
    int n_seen;
    struct qp_pool *pool; /* for the nested job */
};

static void share(void *ctx, int t, int n)
{
    struct count *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_or(&c->mask, 1 << t);
    c->n_seen = n;
}

static void nested(void *ctx, int t, int n)
{
    struct count *c = ctx;
    (void)n;
    if (t == 0) {
        struct count inner = {0};
        qp_pool_run(c->pool, share, &inner, 0);
        /* the pool is busy with this job: the inner one ran serially,
         * every share on this thread */
        if (atomic_load(&inner.calls) == qp_pool_threads(c->pool))
            atomic_fetch_add(&c->calls, 1000);
    }
    atomic_fetch_add(&c->calls, 1);
}

QP_TEST(pool_runs_every_share_once_per_job)
{
    struct qp_pool *p = qp_pool_new(3);
    REQUIRE(p != NULL);
    int n = qp_pool_threads(p);
    CHECK(n >= 1 && n <= 3);
    for (int job = 0; job < 2000; job++) {
        struct count c = {0};
        qp_pool_run(p, share, &c, 0);
        if (atomic_load(&c.calls) != n || atomic_load(&c.mask) != (1 << n) - 1) {
            qp_test_failf(ctx, __FILE__, __LINE__, "job %d: %d calls, mask %x",
                          job, atomic_load(&c.calls), atomic_load(&c.mask));
            break;
        }
    }
    /* fewer shares than threads */
    struct count c = {0};
    qp_pool_run(p, share, &c, 1);
    CHECK_INT(atomic_load(&c.calls), 1);
    CHECK_INT(c.n_seen, 1);
    /* nested: serial inside */
    struct count outer = {0};
    outer.pool = p;
    qp_pool_run(p, nested, &outer, 0);
    CHECK_INT(atomic_load(&outer.calls), n + 1000);
    qp_pool_free(p);
}

QP_TEST(pool_null_and_single_thread)
{
    struct count c = {0};
    qp_pool_run(NULL, share, &c, 2);
    CHECK_INT(atomic_load(&c.calls), 2);
    struct qp_pool *p = qp_pool_new(1);
    REQUIRE(p != NULL);
    CHECK_INT(qp_pool_threads(p), 1);
    struct count d = {0};
    qp_pool_run(p, share, &d, 4); /* capped at the pool's 1 */
    CHECK_INT(atomic_load(&d.calls), 1);
    qp_pool_free(p);
    qp_pool_free(NULL);
}

struct race {
    struct qp_pool *p;
    int jobs_ok;
};

static void *racer(void *arg)
{
    struct race *r = arg;
    for (int i = 0; i < 500; i++) {
        struct count c = {0};
        qp_pool_run(r->p, share, &c, 0);
        r->jobs_ok += atomic_load(&c.calls) >= 1 &&
                      atomic_load(&c.mask) == (1 << c.n_seen) - 1;
    }
    return NULL;
}

QP_TEST(pool_concurrent_callers)
{
    /* two threads submitting jobs at once: each job completes whole */
    struct qp_pool *p = qp_pool_new(2);
    REQUIRE(p != NULL);
    struct race a = {p, 0}, b = {p, 0};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, racer, &a) == 0);
    racer(&b);
    pthread_join(t, NULL);
    CHECK_INT(a.jobs_ok, 500);
    CHECK_INT(b.jobs_ok, 500);
    qp_pool_free(p);
}
