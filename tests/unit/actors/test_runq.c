/* Unit tests for src/actors/runq.h: the per-worker ring (owner push/pop, stealing) and the global
 * inject queue. The queues only store actor pointers, so plain zeroed nd_actor_t structs stand in
 * for actors here; nothing is ever run.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdlib.h>

#include "actors/runq.h"

static nd_actor_t *
fake_actors(size_t n)
{
    return calloc(n, sizeof(nd_actor_t));
}

Test(runq, empty_pop_is_null)
{
    nd_runq_t q;
    nd_runq_init(&q);
    cr_assert_null(nd_runq_pop_owner(&q));
    cr_assert_eq(nd_runq_size(&q), 0);
}

Test(runq, push_pop_fifo)
{
    nd_actor_t *a = fake_actors(10);
    nd_runq_t q;
    nd_runq_init(&q);
    for (int i = 0; i < 10; i++) {
        cr_assert(nd_runq_push_owner(&q, &a[i]));
        cr_assert_eq(nd_runq_size(&q), (uint32_t)i + 1);
    }
    for (int i = 0; i < 10; i++)
        cr_assert_eq(nd_runq_pop_owner(&q), &a[i], "pop %d", i);
    cr_assert_null(nd_runq_pop_owner(&q));
    cr_assert_eq(nd_runq_size(&q), 0);
    free(a);
}

Test(runq, fifo_across_wraparound)
{
    /* Interleaved pushes and pops move head and tail around the ring many times. */
    enum { N = 10 * ND_RUNQ_SIZE + 3 };
    nd_actor_t *a = fake_actors(N);
    nd_runq_t q;
    nd_runq_init(&q);
    int pushed = 0, popped = 0;
    while (popped < N) {
        /* Keep about 100 queued so that the live window straddles the ring's end. */
        for (int k = 0; k < 3 && pushed < N && pushed - popped < 100; k++)
            cr_assert(nd_runq_push_owner(&q, &a[pushed++]));
        nd_actor_t *got = nd_runq_pop_owner(&q);
        cr_assert_eq(got, &a[popped], "pop %d", popped);
        popped++;
        cr_assert_eq(nd_runq_size(&q), (uint32_t)(pushed - popped));
    }
    cr_assert_null(nd_runq_pop_owner(&q));
    free(a);
}

Test(runq, full_ring_refuses)
{
    nd_actor_t *a = fake_actors(ND_RUNQ_SIZE + 1);
    nd_runq_t q;
    nd_runq_init(&q);
    for (uint32_t i = 0; i < ND_RUNQ_SIZE; i++)
        cr_assert(nd_runq_push_owner(&q, &a[i]), "push %u", i);
    cr_assert_eq(nd_runq_size(&q), ND_RUNQ_SIZE);
    cr_assert_not(nd_runq_push_owner(&q, &a[ND_RUNQ_SIZE]), "a full ring refuses");
    cr_assert_eq(nd_runq_size(&q), ND_RUNQ_SIZE);
    /* The refused push changed nothing; one pop makes room for exactly one more. */
    cr_assert_eq(nd_runq_pop_owner(&q), &a[0]);
    cr_assert(nd_runq_push_owner(&q, &a[ND_RUNQ_SIZE]));
    cr_assert_not(nd_runq_push_owner(&q, &a[0]));
    for (uint32_t i = 1; i <= ND_RUNQ_SIZE; i++)
        cr_assert_eq(nd_runq_pop_owner(&q), &a[i]);
    cr_assert_null(nd_runq_pop_owner(&q));
    free(a);
}

/* Steals from a victim holding n actors and checks the split: the thief takes ceil(n/2) of the
 * oldest, runs the newest of those at once and queues the rest in order; the victim keeps the
 * newest floor(n/2) in order. */
static void
check_steal(uint32_t n)
{
    nd_actor_t *a = fake_actors(n ? n : 1);
    nd_runq_t victim, thief;
    nd_runq_init(&victim);
    nd_runq_init(&thief);
    for (uint32_t i = 0; i < n; i++)
        cr_assert(nd_runq_push_owner(&victim, &a[i]));

    nd_actor_t *run = nd_runq_steal(&thief, &victim);
    uint32_t taken = n - n / 2;
    if (n == 0) {
        cr_assert_null(run);
        free(a);
        return;
    }
    cr_assert_eq(run, &a[taken - 1], "n=%u: the thief runs the newest actor it took", n);
    cr_assert_eq(nd_runq_size(&thief), taken - 1, "n=%u", n);
    cr_assert_eq(nd_runq_size(&victim), n / 2, "n=%u: the victim keeps the rest", n);
    for (uint32_t i = 0; i + 1 < taken; i++)
        cr_assert_eq(nd_runq_pop_owner(&thief), &a[i], "n=%u thief pop %u", n, i);
    cr_assert_null(nd_runq_pop_owner(&thief));
    for (uint32_t i = taken; i < n; i++)
        cr_assert_eq(nd_runq_pop_owner(&victim), &a[i], "n=%u victim pop %u", n, i);
    cr_assert_null(nd_runq_pop_owner(&victim));
    free(a);
}

Test(runq, steal_takes_about_half)
{
    static const uint32_t sizes[] = {0, 1, 2, 3, 7, 10, 64, 255, ND_RUNQ_SIZE};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        check_steal(sizes[i]);
}

Test(runq, steal_after_wraparound)
{
    /* Head and tail of both rings start near the end of the slot array. */
    enum { N = 20 };
    nd_actor_t *a = fake_actors(ND_RUNQ_SIZE + N);
    nd_runq_t victim, thief;
    nd_runq_init(&victim);
    nd_runq_init(&thief);
    for (uint32_t i = 0; i < ND_RUNQ_SIZE - 5; i++) {
        cr_assert(nd_runq_push_owner(&victim, &a[i]));
        cr_assert(nd_runq_push_owner(&thief, &a[i]));
        cr_assert_eq(nd_runq_pop_owner(&victim), &a[i]);
        cr_assert_eq(nd_runq_pop_owner(&thief), &a[i]);
    }
    nd_actor_t *b = &a[ND_RUNQ_SIZE];
    for (uint32_t i = 0; i < N; i++)
        cr_assert(nd_runq_push_owner(&victim, &b[i]));
    cr_assert_eq(nd_runq_steal(&thief, &victim), &b[N / 2 - 1]);
    for (uint32_t i = 0; i < N / 2 - 1; i++)
        cr_assert_eq(nd_runq_pop_owner(&thief), &b[i]);
    for (uint32_t i = N / 2; i < N; i++)
        cr_assert_eq(nd_runq_pop_owner(&victim), &b[i]);
    cr_assert_null(nd_runq_pop_owner(&thief));
    cr_assert_null(nd_runq_pop_owner(&victim));
    free(a);
}

Test(runq, steal_repeatedly_drains)
{
    nd_actor_t *a = fake_actors(100);
    nd_runq_t victim, thief;
    nd_runq_init(&victim);
    nd_runq_init(&thief);
    for (int i = 0; i < 100; i++)
        nd_runq_push_owner(&victim, &a[i]);
    /* Each steal halves what is left: 100 -> 50 -> 25 -> 12 -> 6 -> 3 -> 1 -> 0. */
    static const uint32_t left[] = {50, 25, 12, 6, 3, 1, 0};
    int seen = 0;
    for (size_t k = 0; k < sizeof(left) / sizeof(left[0]); k++) {
        nd_actor_t *run = nd_runq_steal(&thief, &victim);
        cr_assert_not_null(run);
        seen++;
        while (nd_runq_pop_owner(&thief) != NULL)
            seen++;
        cr_assert_eq(nd_runq_size(&victim), left[k], "after steal %zu", k + 1);
    }
    cr_assert_null(nd_runq_steal(&thief, &victim));
    cr_assert_eq(seen, 100);
    free(a);
}

Test(runq, inject_fifo)
{
    nd_actor_t *a = fake_actors(5);
    nd_inject_t iq;
    nd_inject_init(&iq);
    cr_assert(nd_inject_empty(&iq));
    cr_assert_null(nd_inject_pop(&iq));
    for (int i = 0; i < 3; i++)
        nd_inject_push(&iq, &a[i]);
    cr_assert_not(nd_inject_empty(&iq));
    cr_assert_eq(atomic_load(&iq.count), 3);
    cr_assert_eq(nd_inject_pop(&iq), &a[0]);
    nd_inject_push(&iq, &a[3]);
    cr_assert_eq(nd_inject_pop(&iq), &a[1]);
    cr_assert_eq(nd_inject_pop(&iq), &a[2]);
    cr_assert_eq(nd_inject_pop(&iq), &a[3]);
    cr_assert(nd_inject_empty(&iq));
    cr_assert_null(nd_inject_pop(&iq));
    /* Usable again after running empty (first/last reset). */
    nd_inject_push(&iq, &a[4]);
    cr_assert_eq(nd_inject_pop(&iq), &a[4]);
    cr_assert_null(nd_inject_pop(&iq));
    nd_inject_destroy(&iq);
    free(a);
}

/* ---- concurrent owner and thieves: every actor is taken exactly once ---- */

#define CONC_N       200000
#define CONC_THIEVES 2

typedef struct conc {
    nd_runq_t victim;
    nd_actor_t *actors;
    _Atomic uint8_t *taken;
    _Atomic bool done;
    _Atomic long thief_got;
} conc_t;

typedef struct thief_arg {
    conc_t *c;
    nd_runq_t own;
} thief_arg_t;

static void
take(conc_t *c, nd_actor_t *a)
{
    atomic_fetch_add_explicit(&c->taken[a - c->actors], 1, memory_order_relaxed);
}

static void *
thief_main(void *arg)
{
    thief_arg_t *ta = arg;
    conc_t *c = ta->c;
    long got = 0;
    for (;;) {
        /* Read done before stealing, so that a NULL steal after done means the owner drained. */
        bool done = atomic_load(&c->done);
        nd_actor_t *a = nd_runq_steal(&ta->own, &c->victim);
        if (a == NULL) {
            if (done)
                break;
            continue;
        }
        take(c, a);
        got++;
        while ((a = nd_runq_pop_owner(&ta->own)) != NULL) {
            take(c, a);
            got++;
        }
    }
    atomic_fetch_add(&c->thief_got, got);
    return NULL;
}

Test(runq, concurrent_steal_takes_each_once, .timeout = 120)
{
    conc_t *c = nd_xaligned(sizeof(*c)); /* nd_runq_t is cache-line aligned */
    nd_runq_init(&c->victim);
    c->actors = fake_actors(CONC_N);
    c->taken = calloc(CONC_N, sizeof(*c->taken));
    thief_arg_t *ta = nd_xaligned(CONC_THIEVES * sizeof(*ta));
    pthread_t th[CONC_THIEVES];
    for (int i = 0; i < CONC_THIEVES; i++) {
        ta[i].c = c;
        nd_runq_init(&ta[i].own);
        cr_assert_eq(pthread_create(&th[i], NULL, thief_main, &ta[i]), 0);
    }
    long owner_got = 0;
    for (int i = 0; i < CONC_N; i++) {
        while (!nd_runq_push_owner(&c->victim, &c->actors[i])) {
            nd_actor_t *a = nd_runq_pop_owner(&c->victim);
            if (a != NULL) {
                take(c, a);
                owner_got++;
            }
        }
        /* The owner also runs some of its own work, as a worker does. */
        if (i % 3 == 0) {
            nd_actor_t *a = nd_runq_pop_owner(&c->victim);
            if (a != NULL) {
                take(c, a);
                owner_got++;
            }
        }
    }
    nd_actor_t *a;
    while ((a = nd_runq_pop_owner(&c->victim)) != NULL) {
        take(c, a);
        owner_got++;
    }
    atomic_store(&c->done, true);
    for (int i = 0; i < CONC_THIEVES; i++)
        pthread_join(th[i], NULL);

    cr_assert_eq(owner_got + atomic_load(&c->thief_got), CONC_N);
    for (int i = 0; i < CONC_N; i++)
        cr_assert_eq(atomic_load(&c->taken[i]), 1, "actor %d taken %u times", i,
                     (unsigned)atomic_load(&c->taken[i]));
    cr_assert_eq(nd_runq_size(&c->victim), 0);
    free(ta);
    free(c->taken);
    free(c->actors);
    free(c);
}
