/* Unit tests for natsd/epoch.h: deferred destruction waits for the readers that could still see
 * an object, and only for them.
 *
 * Readers and writers are separate threads, each with its own external ctx (one epoch record per
 * thread). The reader announces through a semaphore that it is inside its section, and stays
 * there until told to leave, so "the destructor has not run yet" is checked at a moment when it
 * must not have run, however many times the writer polls. The destructors check a magic value and
 * poison it, so a double destruction or a read of a destroyed object shows up even without ASan.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

#include "actors/epoch.h"
#include "actors/pool.h"
#include "test_wait.h"

#define MAGIC  0x5EC7105Eu
#define POISON 0xDEADDEADu

typedef struct node {
    uint32_t magic;
    uint32_t value;
    nd_epoch_entry_t entry;
} node_t;

static _Atomic int destroyed;
static _Atomic int bad_destroy;

static node_t *
node_new(uint32_t value)
{
    node_t *n = calloc(1, sizeof(*n));
    n->magic = MAGIC;
    n->value = value;
    return n;
}

static void
node_destroy(nd_epoch_entry_t *e)
{
    node_t *n = ND_EPOCH_CONTAINER(e, node_t, entry);
    if (n->magic != MAGIC)
        atomic_fetch_add(&bad_destroy, 1);
    n->magic = POISON;
    atomic_fetch_add(&destroyed, 1);
    free(n);
}

static nd_pool_t *pool;
static _Atomic(node_t *) shared;

static void
setup(void)
{
    pool = nd_pool_new(1); /* never started: only its epoch domain is used */
}

static void
teardown(void)
{
    nd_pool_free(pool);
}

/* ---- a reader thread that stays in its section until released ---- */

typedef struct reader {
    sem_t inside, leave, left;
    uint32_t seen_value;
    bool saw_valid; /* the node it read was intact when it left */
    int nest;       /* extra nested sections */
} reader_t;

static void *
reader_main(void *arg)
{
    reader_t *r = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_epoch_enter(ctx);
    for (int i = 0; i < r->nest; i++)
        nd_epoch_enter(ctx);
    /* acquire: pairs with the release store that published the node. */
    node_t *n = atomic_load_explicit(&shared, memory_order_acquire);
    r->seen_value = n->value;
    sem_post(&r->inside);
    for (int i = 0; i < r->nest; i++) {
        sem_wait(&r->leave); /* leave the inner sections one by one when told */
        nd_epoch_exit(ctx);
        sem_post(&r->left);
    }
    sem_wait(&r->leave);
    /* The node must still be intact here, however long the writer has been polling. */
    r->saw_valid = n->magic == MAGIC && n->value == r->seen_value;
    nd_epoch_exit(ctx);
    sem_post(&r->left);
    nd_ctx_external_free(ctx);
    return NULL;
}

static void
reader_start(reader_t *r, pthread_t *th, int nest)
{
    sem_init(&r->inside, 0, 0);
    sem_init(&r->leave, 0, 0);
    sem_init(&r->left, 0, 0);
    r->nest = nest;
    r->saw_valid = false;
    cr_assert_eq(pthread_create(th, NULL, reader_main, r), 0);
    cr_assert(sem_wait_10s(&r->inside));
}

/* Swaps in a new node and retires the old one. Returns the old one's value. */
static uint32_t
replace_and_retire(nd_ctx_t *ctx, uint32_t value)
{
    node_t *old = atomic_load_explicit(&shared, memory_order_relaxed);
    /* release: publishes the new node's contents to readers (their acquire load). */
    atomic_store_explicit(&shared, node_new(value), memory_order_release);
    uint32_t v = old->value;
    nd_epoch_retire(ctx, &old->entry, node_destroy);
    return v;
}

static void
free_shared(void)
{
    node_t *n = atomic_load(&shared);
    free(n);
    atomic_store(&shared, NULL);
}

Test(epoch, retire_waits_for_reader, .init = setup, .fini = teardown, .timeout = 60)
{
    atomic_store(&shared, node_new(1));
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    reader_t r;
    pthread_t th;
    reader_start(&r, &th, 0);
    cr_assert_eq(r.seen_value, 1);

    cr_assert_eq(replace_and_retire(ctx, 2), 1);
    cr_assert_eq(ctx->epoch->n_pending, 1);
    /* However often we poll, the reader that may hold node 1 is still inside. */
    for (int i = 0; i < 10000; i++) {
        nd_epoch_poll(ctx);
        if (i % 100 == 0)
            sched_yield();
    }
    cr_assert_eq(destroyed, 0, "destroyed while a reader could see it");

    sem_post(&r.leave);
    cr_assert(sem_wait_10s(&r.left));
    WAIT_UNTIL((nd_epoch_poll(ctx), destroyed == 1));
    cr_assert_eq(ctx->epoch->n_pending, 0);
    pthread_join(th, NULL);
    cr_assert(r.saw_valid);
    cr_assert_eq(bad_destroy, 0);
    nd_ctx_external_free(ctx);
    free_shared();
    cr_assert_eq(destroyed, 1, "and exactly once");
}

Test(epoch, retire_without_readers_runs_on_poll, .init = setup, .fini = teardown)
{
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    for (uint32_t i = 0; i < 10; i++) {
        node_t *n = node_new(i);
        nd_epoch_retire(ctx, &n->entry, node_destroy);
    }
    cr_assert_eq(destroyed, 0, "retire never destroys synchronously");
    cr_assert_eq(ctx->epoch->n_pending, 10);
    WAIT_UNTIL((nd_epoch_poll(ctx), destroyed == 10));
    cr_assert_eq(ctx->epoch->n_pending, 0);
    nd_epoch_poll(ctx); /* cheap and harmless with nothing pending */
    cr_assert_eq(destroyed, 10);
    cr_assert_eq(bad_destroy, 0);
    nd_ctx_external_free(ctx);
}

Test(epoch, nested_sections_protect_until_outermost_exit, .init = setup, .fini = teardown,
     .timeout = 60)
{
    atomic_store(&shared, node_new(7));
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    reader_t r;
    pthread_t th;
    reader_start(&r, &th, 2); /* three sections deep */
    replace_and_retire(ctx, 8);
    for (int level = 0; level < 2; level++) {
        sem_post(&r.leave);
        cr_assert(sem_wait_10s(&r.left));
        for (int i = 0; i < 1000; i++)
            nd_epoch_poll(ctx);
        cr_assert_eq(destroyed, 0, "inner exit %d ended the protection", level + 1);
    }
    sem_post(&r.leave);
    cr_assert(sem_wait_10s(&r.left));
    WAIT_UNTIL((nd_epoch_poll(ctx), destroyed == 1));
    pthread_join(th, NULL);
    cr_assert(r.saw_valid);
    nd_ctx_external_free(ctx);
    free_shared();
}

/* ---- nd_epoch_barrier blocks until the reader leaves, then runs the destructors ---- */

typedef struct barrier_arg {
    sem_t retired;
    _Atomic bool returned;
    int destroyed_on_return;
} barrier_arg_t;

static void *
barrier_main(void *arg)
{
    barrier_arg_t *b = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    replace_and_retire(ctx, 3);
    sem_post(&b->retired);
    nd_epoch_barrier(ctx->epoch);
    b->destroyed_on_return = atomic_load(&destroyed);
    atomic_store(&b->returned, true);
    nd_ctx_external_free(ctx);
    return NULL;
}

Test(epoch, barrier_waits_for_reader, .init = setup, .fini = teardown, .timeout = 60)
{
    atomic_store(&shared, node_new(1));
    reader_t r;
    pthread_t rth, bth;
    reader_start(&r, &rth, 0);
    barrier_arg_t b;
    sem_init(&b.retired, 0, 0);
    atomic_init(&b.returned, false);
    cr_assert_eq(pthread_create(&bth, NULL, barrier_main, &b), 0);
    cr_assert(sem_wait_10s(&b.retired));
    /* Give the barrier every chance to return early: it must not while the reader is inside. */
    for (int i = 0; i < 1000; i++)
        sched_yield();
    cr_assert_not(atomic_load(&b.returned), "barrier returned with a reader inside");
    cr_assert_eq(destroyed, 0);

    sem_post(&r.leave);
    pthread_join(rth, NULL);
    pthread_join(bth, NULL);
    cr_assert(atomic_load(&b.returned));
    cr_assert_eq(b.destroyed_on_return, 1, "the barrier ran the pending destructor itself");
    cr_assert(r.saw_valid);
    free_shared();
}

Test(epoch, barrier_without_readers_runs_at_once, .init = setup, .fini = teardown)
{
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    node_t *n = node_new(1);
    nd_epoch_retire(ctx, &n->entry, node_destroy);
    nd_epoch_barrier(ctx->epoch);
    cr_assert_eq(destroyed, 1);
    cr_assert_eq(ctx->epoch->n_pending, 0);
    nd_ctx_external_free(ctx);
}

Test(epoch, ctx_free_runs_pending, .init = setup, .fini = teardown)
{
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    for (uint32_t i = 0; i < 5; i++) {
        node_t *n = node_new(i);
        nd_epoch_retire(ctx, &n->entry, node_destroy);
    }
    nd_ctx_external_free(ctx);
    cr_assert_eq(destroyed, 5, "freeing a ctx runs what it retired");
}

Test(epoch, epoch_free_runs_pending)
{
    /* nd_epoch_new/register/free on their own, as a pool uses them: records that still hold
     * retired objects when the domain is freed have them destroyed then, exactly once. */
    nd_epoch_t *ep = nd_epoch_new();
    nd_ctx_t c1 = {.worker = -1, .epoch = nd_epoch_register(ep)};
    nd_ctx_t c2 = {.worker = -1, .epoch = nd_epoch_register(ep)};
    node_t *a = node_new(1), *b = node_new(2), *c = node_new(3);
    nd_epoch_retire(&c1, &a->entry, node_destroy);
    nd_epoch_retire(&c2, &b->entry, node_destroy);
    nd_epoch_retire(&c2, &c->entry, node_destroy);
    cr_assert_eq(destroyed, 0);
    nd_epoch_free(ep);
    cr_assert_eq(destroyed, 3);
    cr_assert_eq(bad_destroy, 0);
}

/* ---- many readers and a writer replacing and retiring continuously ---- */

#define CHURN_READERS 3
#define CHURN_SWAPS   20000

static _Atomic bool churn_stop;
static _Atomic long churn_bad;

static void *
churn_reader(void *arg)
{
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    long bad = 0;
    while (!atomic_load(&churn_stop)) {
        nd_epoch_enter(ctx);
        node_t *n = atomic_load_explicit(&shared, memory_order_acquire);
        uint32_t v = n->value;
        for (int i = 0; i < 10; i++)
            if (n->magic != MAGIC || n->value != v)
                bad++;
        nd_epoch_exit(ctx);
    }
    atomic_fetch_add(&churn_bad, bad);
    nd_ctx_external_free(ctx);
    return NULL;
}

Test(epoch, churn_readers_never_see_freed_nodes, .init = setup, .fini = teardown, .timeout = 120)
{
    atomic_store(&shared, node_new(0));
    pthread_t th[CHURN_READERS];
    for (int i = 0; i < CHURN_READERS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, churn_reader, NULL), 0);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    for (uint32_t i = 1; i <= CHURN_SWAPS; i++) {
        replace_and_retire(ctx, i);
        nd_epoch_poll(ctx);
    }
    atomic_store(&churn_stop, true);
    for (int i = 0; i < CHURN_READERS; i++)
        pthread_join(th[i], NULL);
    nd_epoch_barrier(ctx->epoch);
    cr_assert_eq(destroyed, CHURN_SWAPS, "every retired node destroyed exactly once");
    cr_assert_eq(churn_bad, 0);
    cr_assert_eq(bad_destroy, 0);
    nd_ctx_external_free(ctx);
    free_shared();
}

/* ---- on workers: an actor retires, the worker's poll after the turn destroys ---- */

enum { MSG_RETIRE = ND_MSG_USER_BASE, MSG_POKE };

static void
retirer_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    if (msg->id == MSG_RETIRE) {
        node_t *n = node_new(99);
        nd_epoch_retire(ctx, &n->entry, node_destroy);
    }
}

static const nd_actor_type_t retirer_type = {
    .name = "retirer",
    .size = sizeof(nd_actor_t),
    .dispatch = retirer_dispatch,
};

Test(epoch, worker_polls_after_turns, .timeout = 60)
{
    nd_pool_t *p = nd_pool_new(2);
    nd_pool_start(p);
    nd_ctx_t *ctx = nd_ctx_external_new(p);
    nd_actor_t *a = nd_actor_spawn(ctx, &retirer_type);
    nd_actor_send(ctx, a, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_RETIRE));
    /* Workers poll after every turn: keep giving the actor turns until its object goes. */
    uint64_t deadline = nd_now_ns() + 10000000000ull;
    while (atomic_load(&destroyed) == 0) {
        cr_assert(nd_now_ns() < deadline, "retired object never destroyed by a worker");
        nd_actor_send(ctx, a, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_POKE));
        sched_yield();
    }
    cr_assert_eq(destroyed, 1);
    /* One more retired just before shutdown is destroyed by then, and only once. */
    nd_actor_send(ctx, a, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_RETIRE));
    nd_actor_close(ctx, a);
    nd_actor_unref(ctx, a);
    cr_assert(nd_pool_wait_empty(p, 10000));
    nd_ctx_external_free(ctx);
    nd_pool_free(p);
    cr_assert_eq(destroyed, 2);
    cr_assert_eq(bad_destroy, 0);
}
