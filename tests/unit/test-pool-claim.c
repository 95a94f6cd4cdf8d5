/* Unit tests of the pool's claimed items (qp_claim_*) and holds
 * (qp_parallel_hold): every item goes to exactly one share in blocks of
 * at most step, whoever asks; jobs run under a hold (nested, from two
 * threads at once, with a share longer than the spin) exactly as without. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/parallel.h"
#include "tests/test.h"

struct items {
    struct qp_claim claim;
    atomic_int *seen;   /* per item: how many times it was handed out */
    atomic_int bad;     /* blocks longer than step or not at a multiple */
    size_t step;
};

static void take_items(void *ctx, int t, int n)
{
    struct items *it = ctx;
    size_t b, e;
    (void)t;
    (void)n;
    while (qp_claim_next(&it->claim, &b, &e)) {
        if (e <= b || e - b > it->step || b % it->step)
            atomic_fetch_add(&it->bad, 1);
        for (size_t i = b; i < e; i++)
            atomic_fetch_add(&it->seen[i], 1);
    }
}

QP_TEST(claim_hands_out_every_item_once)
{
    static const size_t ns[] = {0, 1, 7, 1000, 1001};
    static const size_t steps[] = {1, 3, 64, 5000};
    struct qp_pool *p = qp_pool_new(3);
    REQUIRE(p != NULL);
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            struct items it = {.step = steps[s]};
            it.seen = calloc(ns[a] + 1, sizeof *it.seen);
            REQUIRE(it.seen != NULL);
            qp_claim_init(&it.claim, ns[a], steps[s]);
            qp_pool_run(p, take_items, &it, 0);
            int wrong = 0;
            for (size_t i = 0; i < ns[a]; i++)
                wrong += atomic_load(&it.seen[i]) != 1;
            if (wrong || atomic_load(&it.bad))
                qp_test_failf(ctx, __FILE__, __LINE__,
                              "n %zu step %zu: %d items not handed out once, "
                              "%d bad blocks", ns[a], steps[s], wrong,
                              atomic_load(&it.bad));
            /* exhausted: stays so */
            size_t b = 77, e = 77;
            CHECK(!qp_claim_next(&it.claim, &b, &e));
            CHECK_INT((int)b, 77);
            free(it.seen);
        }
    qp_pool_free(p);
}

QP_TEST(claim_step_zero_is_one)
{
    struct qp_claim c;
    size_t b, e;
    qp_claim_init(&c, 2, 0);
    REQUIRE(qp_claim_next(&c, &b, &e));
    CHECK_INT((int)b, 0);
    CHECK_INT((int)e, 1);
    REQUIRE(qp_claim_next(&c, &b, &e));
    CHECK_INT((int)b, 1);
    CHECK_INT((int)e, 2);
    CHECK(!qp_claim_next(&c, &b, &e));
}

struct shares {
    atomic_int calls, mask;
    int slow;   /* share 1 sleeps this many milliseconds */
};

static void mark(void *ctx, int t, int n)
{
    struct shares *s = ctx;
    (void)n;
    if (t == 1 && s->slow) {
        struct timespec d = {0, (long)s->slow * 1000000L};
        nanosleep(&d, NULL);
    }
    atomic_fetch_add(&s->calls, 1);
    atomic_fetch_or(&s->mask, 1 << t);
}

/* n jobs of 3 shares on p: how many ran every share exactly once. */
static int whole_jobs(struct qp_pool *p, int n, int slow)
{
    int ok = 0;
    for (int j = 0; j < n; j++) {
        struct shares s = {0, 0, slow};
        qp_pool_run(p, mark, &s, 3);
        ok += atomic_load(&s.calls) == 3 && atomic_load(&s.mask) == 7;
    }
    return ok;
}

static void *held_racer(void *arg)
{
    int *ok = arg;
    struct qp_pool *p = qp_pool_new(3);
    qp_parallel_hold();
    *ok = p ? whole_jobs(p, 500, 0) : 0;
    qp_parallel_unhold();
    qp_pool_free(p);
    return NULL;
}

QP_TEST(hold_runs_jobs_as_without)
{
    struct qp_pool *p = qp_pool_new(3);
    REQUIRE(p != NULL);
    CHECK_INT(whole_jobs(p, 200, 0), 200);
    qp_parallel_hold();
    CHECK_INT(whole_jobs(p, 2000, 0), 2000);
    qp_parallel_hold(); /* nested */
    CHECK_INT(whole_jobs(p, 200, 0), 200);
    qp_parallel_unhold();
    /* a worker's share longer than the spin: the caller goes to sleep */
    CHECK_INT(whole_jobs(p, 3, 3 * QP_PARALLEL_SPIN_US / 1000 + 1), 3);
    qp_parallel_unhold();
    CHECK_INT(whole_jobs(p, 200, 0), 200);
    /* two threads holding and submitting at once */
    int a = 0, b = 0;
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, held_racer, &a) == 0);
    held_racer(&b);
    pthread_join(t, NULL);
    CHECK_INT(a, 500);
    CHECK_INT(b, 500);
    /* idle workers go back to sleep after the last unhold: jobs still run */
    struct timespec d = {0, 5L * QP_PARALLEL_SPIN_US * 1000L};
    nanosleep(&d, NULL);
    CHECK_INT(whole_jobs(p, 50, 0), 50);
    qp_pool_free(p);
}
