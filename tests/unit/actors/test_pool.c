/* Unit tests for natsd/pool.h: worker pools of 1 and 4 threads running many actors, messages
 * between actors (worker-local pushes, stealing, parking and waking), nd_pool_wait_empty, stats
 * and the lifecycle calls. Actors report through atomics and semaphores; every wait has a 10 s
 * hang guard and no result depends on timing.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "actors/pool.h"
#include "test_wait.h"

enum {
    MSG_COUNT = ND_MSG_USER_BASE,
    MSG_TOKEN,
    MSG_PING,
    MSG_WHO,
};

#define MAX_ACTORS 256

/* ---- a counter actor: counts messages, reports the count in final ---- */

typedef struct counter {
    nd_actor_t base;
    uint32_t index;
    uint64_t count; /* owner only */
    uint64_t sum;   /* owner only: sum of the values received */
} counter_t;

typedef struct count_msg {
    nd_msg_t hdr;
    uint32_t value;
} count_msg_t;

static _Atomic uint64_t final_count[MAX_ACTORS];
static _Atomic uint64_t final_sum[MAX_ACTORS];
static _Atomic int finals;
static _Atomic int bad_worker;
static unsigned n_workers; /* of the pool under test */

static void
counter_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    counter_t *c = (counter_t *)self;
    if (ctx->worker < 0 || (unsigned)ctx->worker >= n_workers || ctx->self == NULL ||
        ctx->current != self)
        atomic_fetch_add(&bad_worker, 1);
    c->count++;
    c->sum += ((count_msg_t *)msg)->value;
}

static void
counter_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    counter_t *c = (counter_t *)self;
    atomic_store(&final_count[c->index], c->count);
    atomic_store(&final_sum[c->index], c->sum);
    atomic_fetch_add(&finals, 1);
}

static const nd_actor_type_t counter_type = {
    .name = "counter",
    .size = sizeof(counter_t),
    .dispatch = counter_dispatch,
    .final = counter_final,
};

static void
send_count(nd_ctx_t *ctx, nd_actor_t *to, uint32_t value)
{
    count_msg_t *m = ND_MSG_NEW(ctx, count_msg_t, MSG_COUNT);
    m->value = value;
    nd_actor_send(ctx, to, &m->hdr);
}

/* Many actors, each sent `per` messages round-robin from the main thread, then closed; the
 * counts each one reports in final must be exact. */
static void
many_counters(unsigned workers, uint32_t actors, uint32_t per)
{
    n_workers = workers;
    nd_pool_t *pool = nd_pool_new(workers);
    cr_assert_eq(nd_pool_workers(pool), workers);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);

    counter_t **cs = calloc(actors, sizeof(*cs));
    for (uint32_t i = 0; i < actors; i++) {
        cs[i] = (counter_t *)nd_actor_spawn(ctx, &counter_type);
        cs[i]->index = i; /* written before the first send publishes the actor */
    }
    cr_assert_eq(nd_pool_live_actors(pool), actors);
    for (uint32_t k = 0; k < per; k++)
        for (uint32_t i = 0; i < actors; i++)
            send_count(ctx, &cs[i]->base, k + i);
    for (uint32_t i = 0; i < actors; i++) {
        nd_actor_close(ctx, &cs[i]->base);
        nd_actor_unref(ctx, &cs[i]->base);
    }
    cr_assert(nd_pool_wait_empty(pool, 10000), "%zu actors still live", nd_pool_live_actors(pool));
    cr_assert_eq(nd_pool_live_actors(pool), 0);
    cr_assert_eq(finals, (int)actors);
    uint64_t base_sum = (uint64_t)per * (per - 1) / 2;
    for (uint32_t i = 0; i < actors; i++) {
        cr_assert_eq(final_count[i], per, "actor %u counted %lu", i, (unsigned long)final_count[i]);
        cr_assert_eq(final_sum[i], base_sum + (uint64_t)i * per, "actor %u", i);
    }
    cr_assert_eq(bad_worker, 0);
    nd_ctx_external_free(ctx);
    nd_pool_shutdown(pool);
    nd_ctx_stats_t st = nd_pool_stats(pool);
    cr_assert_eq(st.msgs, (uint64_t)actors * (per + 1), "every message and close counted once");
    cr_assert_geq(st.turns, actors);
    nd_pool_free(pool);
    free(cs);
}

Test(pool, counters_one_worker, .timeout = 120)
{
    many_counters(1, 200, 500);
}

Test(pool, counters_four_workers, .timeout = 120)
{
    many_counters(4, 200, 500);
}

/* ---- external senders on several threads ---- */

typedef struct fan {
    nd_pool_t *pool;
    nd_actor_t **targets;
    uint32_t n_targets;
    uint32_t per;
} fan_t;

static void *
fan_sender(void *arg)
{
    fan_t *f = arg;
    /* Each thread sends with its own ctx; messages are freed on the workers' caches. */
    nd_ctx_t *ctx = nd_ctx_external_new(f->pool);
    for (uint32_t k = 0; k < f->per; k++)
        for (uint32_t i = 0; i < f->n_targets; i++)
            send_count(ctx, f->targets[i], 1);
    nd_ctx_external_free(ctx);
    return NULL;
}

Test(pool, fan_in_from_many_threads, .timeout = 120)
{
    enum { THREADS = 4, ACTORS = 16, PER = 2000 };
    n_workers = 4;
    nd_pool_t *pool = nd_pool_new(n_workers);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_actor_t *as[ACTORS];
    for (uint32_t i = 0; i < ACTORS; i++) {
        counter_t *c = (counter_t *)nd_actor_spawn(ctx, &counter_type);
        c->index = i;
        as[i] = &c->base;
    }
    fan_t f = {pool, as, ACTORS, PER};
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, fan_sender, &f), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (uint32_t i = 0; i < ACTORS; i++) {
        nd_actor_close(ctx, as[i]);
        nd_actor_unref(ctx, as[i]);
    }
    cr_assert(nd_pool_wait_empty(pool, 10000));
    for (uint32_t i = 0; i < ACTORS; i++)
        cr_assert_eq(final_count[i], THREADS * PER, "actor %u", i);
    cr_assert_eq(bad_worker, 0);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

/* ---- actors messaging actors: tokens travelling around a ring ---- */

typedef struct ring_node {
    nd_actor_t base;
    nd_actor_t *next; /* immutable after set-up; the ring holds references */
    uint64_t seen;    /* owner only */
    uint32_t index;
} ring_node_t;

typedef struct token_msg {
    nd_msg_t hdr;
    uint32_t hops_left;
} token_msg_t;

static sem_t tokens_done;
static _Atomic uint64_t ring_seen_total;

static void
ring_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    ring_node_t *r = (ring_node_t *)self;
    token_msg_t *t = (token_msg_t *)msg;
    r->seen++;
    if (t->hops_left == 0) {
        sem_post(&tokens_done);
        return;
    }
    token_msg_t *m = ND_MSG_NEW(ctx, token_msg_t, MSG_TOKEN);
    m->hops_left = t->hops_left - 1;
    nd_actor_send(ctx, r->next, &m->hdr);
}

static void
ring_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    ring_node_t *r = (ring_node_t *)self;
    atomic_fetch_add(&ring_seen_total, r->seen);
    nd_actor_unref(ctx, r->next); /* the reference to our successor */
    atomic_fetch_add(&finals, 1);
}

static const nd_actor_type_t ring_type = {
    .name = "ring",
    .size = sizeof(ring_node_t),
    .dispatch = ring_dispatch,
    .final = ring_final,
};

static void
token_ring(unsigned workers)
{
    enum { NODES = 64, TOKENS = 100, HOPS = 500 };
    sem_init(&tokens_done, 0, 0);
    nd_pool_t *pool = nd_pool_new(workers);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    ring_node_t *nodes[NODES];
    for (int i = 0; i < NODES; i++) {
        nodes[i] = (ring_node_t *)nd_actor_spawn(ctx, &ring_type);
        nodes[i]->index = (uint32_t)i;
    }
    for (int i = 0; i < NODES; i++) {
        nd_actor_ref(&nodes[(i + 1) % NODES]->base);
        nodes[i]->next = &nodes[(i + 1) % NODES]->base;
    }
    for (int t = 0; t < TOKENS; t++) {
        token_msg_t *m = ND_MSG_NEW(ctx, token_msg_t, MSG_TOKEN);
        m->hops_left = HOPS;
        nd_actor_send(ctx, &nodes[(t * 7) % NODES]->base, &m->hdr);
    }
    for (int t = 0; t < TOKENS; t++)
        cr_assert(sem_wait_10s(&tokens_done), "only %d of %d tokens arrived", t, TOKENS);
    for (int i = 0; i < NODES; i++) {
        nd_actor_close(ctx, &nodes[i]->base);
        nd_actor_unref(ctx, &nodes[i]->base);
    }
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(finals, NODES);
    cr_assert_eq(ring_seen_total, (uint64_t)TOKENS * (HOPS + 1));
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

Test(pool, token_ring_one_worker, .timeout = 120)
{
    token_ring(1);
}

Test(pool, token_ring_four_workers, .timeout = 120)
{
    token_ring(4);
}

/* ---- request/response with the main thread: every round needs a parked worker woken ---- */

static sem_t pong;

static void
ping_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    sem_post(&pong);
}

static const nd_actor_type_t ping_type = {
    .name = "ping",
    .size = sizeof(nd_actor_t),
    .dispatch = ping_dispatch,
};

Test(pool, wakes_parked_workers, .timeout = 120)
{
    enum { ROUNDS = 500 };
    sem_init(&pong, 0, 0);
    nd_pool_t *pool = nd_pool_new(4);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_actor_t *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = nd_actor_spawn(ctx, &ping_type);
    /* Between rounds every worker runs out of work and parks; a lost wake-up hangs a round. */
    for (int r = 0; r < ROUNDS; r++) {
        nd_actor_send(ctx, a[r % 3], nd_msg_new(ctx, sizeof(nd_msg_t), MSG_PING));
        cr_assert(sem_wait_10s(&pong), "round %d was never run", r);
    }
    for (int i = 0; i < 3; i++) {
        nd_actor_close(ctx, a[i]);
        nd_actor_unref(ctx, a[i]);
    }
    cr_assert(nd_pool_wait_empty(pool, 10000));
    nd_ctx_external_free(ctx);
    nd_pool_shutdown(pool);
    cr_assert_eq(nd_pool_stats(pool).msgs, ROUNDS + 3);
    nd_pool_free(pool);
}

/* ---- nd_pool_wait_empty ---- */

Test(pool, wait_empty_without_actors)
{
    nd_pool_t *pool = nd_pool_new(1);
    nd_pool_start(pool);
    cr_assert(nd_pool_wait_empty(pool, 0));
    cr_assert(nd_pool_wait_empty(pool, 10));
    cr_assert_eq(nd_pool_live_actors(pool), 0);
    nd_pool_free(pool);
}

Test(pool, wait_empty_times_out_while_referenced)
{
    n_workers = 2;
    nd_pool_t *pool = nd_pool_new(2);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_actor_t *a = nd_actor_spawn(ctx, &counter_type);
    cr_assert_not(nd_pool_wait_empty(pool, 0));
    cr_assert_not(nd_pool_wait_empty(pool, 20), "a live actor keeps the pool non-empty");
    nd_actor_close(ctx, a);
    cr_assert_not(nd_pool_wait_empty(pool, 20), "our reference keeps it allocated");
    cr_assert_eq(nd_pool_live_actors(pool), 1);
    nd_actor_unref(ctx, a);
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(finals, 1);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

/* A waiter blocked in nd_pool_wait_empty is woken by the last actor's free, not by its timeout. */
typedef struct waiter {
    nd_pool_t *pool;
    bool result;
} waiter_t;

static void *
waiter_main(void *arg)
{
    waiter_t *w = arg;
    w->result = nd_pool_wait_empty(w->pool, 60000);
    return NULL;
}

Test(pool, wait_empty_wakes_on_last_free, .timeout = 30)
{
    n_workers = 2;
    nd_pool_t *pool = nd_pool_new(2);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_actor_t *a = nd_actor_spawn(ctx, &counter_type);
    waiter_t w = {pool, false};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, waiter_main, &w), 0);
    nd_actor_close(ctx, a);
    nd_actor_unref(ctx, a);
    /* The test's own 30 s timeout is the hang guard: the waiter's 60 s would fail it. */
    pthread_join(th, NULL);
    cr_assert(w.result);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

/* ---- lifecycle ---- */

Test(pool, default_worker_count)
{
    nd_pool_t *pool = nd_pool_new(0);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_eq(nd_pool_workers(pool), cpus > 0 ? (unsigned)cpus : 1u);
    nd_pool_free(pool); /* never started */
}

Test(pool, accessors_and_repeated_shutdown)
{
    nd_pool_t *pool = nd_pool_new(3);
    cr_assert_eq(nd_pool_workers(pool), 3);
    cr_assert_not_null(nd_pool_epoch(pool));
    nd_pool_start(pool);
    cr_assert_not_null(nd_pool_timers(pool));
    nd_pool_shutdown(pool);
    cr_assert_null(nd_pool_timers(pool), "the timer service is gone after shutdown");
    nd_pool_shutdown(pool); /* idempotent */
    nd_pool_free(pool);
}

/* Workers report their own ids; with enough blocked actors every worker must take part. */
static sem_t who_entered, who_release;
static _Atomic int who_seen[8];

static void
who_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    if (ctx->worker >= 0 && ctx->worker < 8)
        atomic_fetch_add(&who_seen[ctx->worker], 1);
    sem_post(&who_entered);
    sem_wait(&who_release);
}

static const nd_actor_type_t who_type = {
    .name = "who",
    .size = sizeof(nd_actor_t),
    .dispatch = who_dispatch,
};

Test(pool, every_worker_runs_actors, .timeout = 60)
{
    enum { W = 4 };
    sem_init(&who_entered, 0, 0);
    sem_init(&who_release, 0, 0);
    nd_pool_t *pool = nd_pool_new(W);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_actor_t *a[W];
    for (int i = 0; i < W; i++)
        a[i] = nd_actor_spawn(ctx, &who_type);
    /* Let every worker go to sleep first (nd_pool_stats is documented as approximate while the
     * pool runs, which is all this needs), so the burst below must wake them all. */
    uint64_t deadline = nd_now_ns() + 10000000000ull;
    while (nd_pool_stats(pool).parks < W) {
        cr_assert(nd_now_ns() < deadline, "workers never parked");
        sched_yield();
    }
    /* Each actor blocks its worker until all W have started, so W distinct workers must be
     * running them at the same time: a worker that never wakes would hang this. */
    for (int i = 0; i < W; i++)
        nd_actor_send(ctx, a[i], nd_msg_new(ctx, sizeof(nd_msg_t), MSG_WHO));
    for (int i = 0; i < W; i++)
        cr_assert(sem_wait_10s(&who_entered), "only %d workers ran", i);
    for (int i = 0; i < W; i++)
        cr_assert_eq(who_seen[i], 1, "worker %d", i);
    for (int i = 0; i < W; i++)
        sem_post(&who_release);
    for (int i = 0; i < W; i++) {
        nd_actor_close(ctx, a[i]);
        nd_actor_unref(ctx, a[i]);
    }
    cr_assert(nd_pool_wait_empty(pool, 10000));
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

/* Regression for a lost wake-up (a wake token left set by a notifier whose sleeper had already
 * left, which silenced every later notify): bursts of actors made runnable by a non-worker
 * thread while both workers are idle must all run. Before the fix, a burst could wait forever. */
Test(pool, external_bursts_always_run, .timeout = 120)
{
    n_workers = 2;
    atomic_store(&bad_worker, 0);
    nd_pool_t *p = nd_pool_new(n_workers);
    nd_pool_start(p);
    nd_ctx_t *ctx = nd_ctx_external_new(p);
    for (int round = 0; round < 50; round++) {
        nd_actor_t *actors[MAX_ACTORS];
        atomic_store(&finals, 0);
        for (uint32_t i = 0; i < MAX_ACTORS; i++) {
            actors[i] = nd_actor_spawn(ctx, &counter_type);
            ((counter_t *)actors[i])->index = i;
        }
        for (uint32_t i = 0; i < MAX_ACTORS; i++)
            send_count(ctx, actors[i], i);
        for (uint32_t i = 0; i < MAX_ACTORS; i++) {
            nd_actor_close(ctx, actors[i]);
            nd_actor_unref(ctx, actors[i]);
        }
        WAIT_UNTIL(atomic_load(&finals) == MAX_ACTORS);
        cr_assert(nd_pool_wait_empty(p, 10000), "round %d: actors still live", round);
        for (uint32_t i = 0; i < MAX_ACTORS; i++) {
            cr_assert_eq(atomic_load(&final_count[i]), 1, "round %d actor %u", round, i);
            cr_assert_eq(atomic_load(&final_sum[i]), i);
        }
    }
    cr_assert_eq(atomic_load(&bad_worker), 0);
    nd_ctx_external_free(ctx);
    nd_pool_free(p);
}
