/* Unit tests for natsd/actor.h: turns, the batch limit, close/final/discard and references.
 *
 * Two set-ups are used. "Manual" tests make a pool that is never started and run the actor's
 * turns themselves with nd_actor_run() on an external ctx, which makes batch boundaries, return
 * values and the moment memory is freed exactly observable. (A send that schedules the actor puts
 * it on the pool's inject queue, which nobody pops; the test plays the worker instead.) "Pool"
 * tests run the same actors on real workers and wait for them with semaphores or
 * nd_pool_wait_empty, with a 10 s hang guard, never with sleeps.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "actors/actor.h"
#include "actors/pool.h"
#include "test_wait.h"

enum {
    MSG_SEQ = ND_MSG_USER_BASE,
    MSG_BLOCK,
    MSG_SPAWN,
    MSG_FORWARD,
};

typedef struct seq_msg {
    nd_msg_t hdr;
    uint32_t seq;
    uint32_t sender;
} seq_msg_t;

#define LOG_MAX 1024
#define SENDERS 4

/* What the actors saw. Each Criterion test runs in its own process, so these start at zero. */
static _Atomic int n_dispatched, n_finals, n_discards, n_order_errors;
static _Atomic long child_sum;
static uint32_t discard_log[LOG_MAX];
static sem_t entered, release_sem, final_sem, last_sem;
static _Atomic uint32_t last_seq = UINT32_MAX; /* posts last_sem when this seq is dispatched */

typedef struct rec {
    nd_actor_t base;
    /* owner actor only; read by the test after a semaphore or in manual mode */
    uint32_t n;
    uint32_t next_seq[SENDERS];
    uint32_t log[LOG_MAX];
    bool overloaded_at[LOG_MAX];
    bool current_ok;
    uint32_t n_at_final;
} rec_t;

static void
rec_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    rec_t *r = (rec_t *)self;
    if (ctx->current != self)
        r->current_ok = false;
    switch (msg->id) {
    case MSG_SEQ: {
        seq_msg_t *m = (seq_msg_t *)msg;
        if (r->n < LOG_MAX) {
            r->log[r->n] = m->seq;
            r->overloaded_at[r->n] = nd_actor_overloaded(self);
        }
        if (m->seq != r->next_seq[m->sender])
            atomic_fetch_add(&n_order_errors, 1);
        r->next_seq[m->sender] = m->seq + 1;
        r->n++;
        atomic_fetch_add(&n_dispatched, 1);
        if (m->seq == atomic_load(&last_seq))
            sem_post(&last_sem);
        break;
    }
    case MSG_BLOCK:
        sem_post(&entered);
        sem_wait(&release_sem);
        break;
    default:
        cr_log_error("unexpected message id %u", msg->id);
        atomic_fetch_add(&n_order_errors, 1);
    }
}

static void
rec_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    rec_t *r = (rec_t *)self;
    r->n_at_final = r->n;
    atomic_fetch_add(&child_sum, r->n);
    atomic_fetch_add(&n_finals, 1);
    sem_post(&final_sem);
}

static void
rec_discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    int i = atomic_fetch_add(&n_discards, 1);
    if (msg->id == MSG_SEQ && i < LOG_MAX)
        discard_log[i] = ((seq_msg_t *)msg)->seq;
}

static const nd_actor_type_t rec_type = {
    .name = "rec",
    .size = sizeof(rec_t),
    .dispatch = rec_dispatch,
    .final = rec_final,
    .discard = rec_discard,
};

static void
sems_init(void)
{
    sem_init(&entered, 0, 0);
    sem_init(&release_sem, 0, 0);
    sem_init(&final_sem, 0, 0);
    sem_init(&last_sem, 0, 0);
}

static void
send_seq(nd_ctx_t *ctx, nd_actor_t *to, uint32_t seq, uint32_t sender)
{
    seq_msg_t *m = ND_MSG_NEW(ctx, seq_msg_t, MSG_SEQ);
    m->seq = seq;
    m->sender = sender;
    nd_actor_send(ctx, to, &m->hdr);
}

static void
send_id(nd_ctx_t *ctx, nd_actor_t *to, uint32_t id)
{
    nd_actor_send(ctx, to, nd_msg_new(ctx, sizeof(nd_msg_t), id));
}

static uint32_t
refs_of(nd_actor_t *a)
{
    return atomic_load(&a->refs);
}

/* ======== manual mode: an unstarted pool, turns run by the test ======== */

static nd_pool_t *mpool;
static nd_ctx_t *mctx;

static void
manual_setup(void)
{
    sems_init();
    mpool = nd_pool_new(1);
    mctx = nd_ctx_external_new(mpool);
}

static void
manual_teardown(void)
{
    nd_ctx_external_free(mctx);
    nd_pool_free(mpool);
}

Test(actor, dispatch_order_and_ctx, .init = manual_setup, .fini = manual_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    r->current_ok = true;
    cr_assert_eq(nd_pool_live_actors(mpool), 1);
    cr_assert_eq(refs_of(a), 2, "life + the caller's reference");
    cr_assert_eq(a->type, &rec_type);
    cr_assert_eq(a->pool, mpool);

    for (uint32_t i = 0; i < 10; i++)
        send_seq(mctx, a, i, 0);
    cr_assert_eq(r->n, 0, "nothing runs before its turn");
    cr_assert_not(nd_actor_run(mctx, a), "10 messages fit in one turn, which ends idle");
    cr_assert_eq(r->n, 10);
    for (uint32_t i = 0; i < 10; i++)
        cr_assert_eq(r->log[i], i);
    cr_assert(r->current_ok, "ctx->current is the actor during its dispatch");
    cr_assert_null(mctx->current);
    cr_assert_eq(mctx->stats.msgs, 10);
    cr_assert_eq(mctx->stats.turns, 1);

    nd_actor_close(mctx, a);
    cr_assert_eq(n_finals, 0, "final waits for the actor's turn");
    cr_assert_not(nd_actor_closed(a));
    cr_assert_not(nd_actor_run(mctx, a));
    cr_assert_eq(n_finals, 1);
    cr_assert_eq(r->n_at_final, 10);
    cr_assert(nd_actor_closed(a));
    cr_assert_eq(refs_of(a), 1, "the life reference is gone once the closed turn ends idle");
    cr_assert_eq(nd_pool_live_actors(mpool), 1);
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
    cr_assert_eq(n_order_errors, 0);
}

Test(actor, batch_limit_and_overloaded_flag, .init = manual_setup, .fini = manual_teardown)
{
    enum { N = 200 };
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    for (uint32_t i = 0; i < N; i++)
        send_seq(mctx, a, i, 0);

    cr_assert_not(nd_actor_overloaded(a));
    cr_assert(nd_actor_run(mctx, a), "turn 1 stops at the batch limit with work left");
    cr_assert_eq(r->n, ND_ACTOR_BATCH);
    cr_assert(nd_actor_overloaded(a));
    cr_assert(nd_actor_run(mctx, a));
    cr_assert_eq(r->n, 2 * ND_ACTOR_BATCH);
    cr_assert(nd_actor_overloaded(a));
    cr_assert(nd_actor_run(mctx, a));
    cr_assert_eq(r->n, 3 * ND_ACTOR_BATCH);
    cr_assert(nd_actor_overloaded(a));
    cr_assert_not(nd_actor_run(mctx, a), "the short last turn ends idle");
    cr_assert_eq(r->n, N);
    cr_assert_not(nd_actor_overloaded(a), "a turn below the limit clears the flag");
    for (uint32_t i = 0; i < N; i++) {
        cr_assert_eq(r->log[i], i);
        cr_assert_eq(r->overloaded_at[i], i >= ND_ACTOR_BATCH, "message %u", i);
    }
    cr_assert_eq(mctx->stats.turns, 4);

    nd_actor_close(mctx, a);
    cr_assert_not(nd_actor_run(mctx, a));
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
}

Test(actor, exact_batch_then_empty_turn, .init = manual_setup, .fini = manual_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    for (uint32_t i = 0; i < ND_ACTOR_BATCH; i++)
        send_seq(mctx, a, i, 0);
    cr_assert(nd_actor_run(mctx, a), "a full batch cannot know it was the last message");
    cr_assert(nd_actor_overloaded(a));
    cr_assert_not(nd_actor_run(mctx, a), "the next turn finds nothing and goes idle");
    cr_assert_eq(r->n, ND_ACTOR_BATCH);
    cr_assert_not(nd_actor_overloaded(a));

    /* Idle again: the actor is scheduled by the next send and runs it. */
    send_seq(mctx, a, ND_ACTOR_BATCH, 0);
    cr_assert_not(nd_actor_run(mctx, a));
    cr_assert_eq(r->n, ND_ACTOR_BATCH + 1);

    nd_actor_close(mctx, a);
    nd_actor_run(mctx, a);
    nd_actor_unref(mctx, a);
    cr_assert_eq(n_order_errors, 0);
}

Test(actor, final_once_and_later_messages_discarded, .init = manual_setup, .fini = manual_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    for (uint32_t i = 0; i < 3; i++)
        send_seq(mctx, a, i, 0);
    nd_actor_close(mctx, a);
    send_seq(mctx, a, 3, 0);
    send_seq(mctx, a, 4, 0);
    nd_actor_close(mctx, a); /* a second close is just another late message */

    cr_assert_not(nd_actor_run(mctx, a));
    cr_assert_eq(r->n, 3, "messages queued before the close are dispatched");
    cr_assert_eq(r->n_at_final, 3, "final runs after them");
    cr_assert_eq(n_finals, 1);
    cr_assert_eq(n_discards, 2, "late messages go to discard; a late CLOSE does not");
    cr_assert_eq(discard_log[0], 3);
    cr_assert_eq(discard_log[1], 4);
    cr_assert(nd_actor_closed(a));

    /* The closed actor is idle: a sender that schedules it drains the mailbox itself, so the
     * discard happens inside nd_actor_send and the actor never runs again. */
    for (uint32_t i = 5; i < 10; i++) {
        send_seq(mctx, a, i, 0);
        cr_assert_eq(n_discards, (int)i - 2);
        cr_assert_eq(discard_log[i - 3], i);
    }
    nd_actor_close(mctx, a);
    cr_assert_eq(n_discards, 7);
    cr_assert_eq(n_finals, 1, "final runs exactly once");
    cr_assert_eq(r->n, 3, "nothing is dispatched after the close");
    cr_assert_eq(refs_of(a), 1);
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
}

Test(actor, close_across_batches, .init = manual_setup, .fini = manual_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    for (uint32_t i = 0; i < 100; i++)
        send_seq(mctx, a, i, 0);
    nd_actor_close(mctx, a);
    for (uint32_t i = 100; i < 110; i++)
        send_seq(mctx, a, i, 0);

    cr_assert(nd_actor_run(mctx, a));
    cr_assert_eq(n_finals, 0);
    cr_assert_eq(r->n, ND_ACTOR_BATCH);
    cr_assert_not(nd_actor_run(mctx, a), "36 + close + 10 late messages fit in one turn");
    cr_assert_eq(r->n, 100);
    cr_assert_eq(n_finals, 1);
    cr_assert_eq(n_discards, 10);
    cr_assert_eq(refs_of(a), 1);
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
}

Test(actor, close_ending_a_full_batch, .init = manual_setup, .fini = manual_teardown)
{
    /* The CLOSE is the 64th message: the turn ends at the limit, closed but not yet idle. The
     * life reference must be dropped by the following (empty) turn, exactly once. */
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    for (uint32_t i = 0; i < ND_ACTOR_BATCH - 1; i++)
        send_seq(mctx, a, i, 0);
    nd_actor_close(mctx, a);
    cr_assert(nd_actor_run(mctx, a));
    cr_assert_eq(n_finals, 1);
    cr_assert_eq(refs_of(a), 2, "not idle yet: the life reference is still held");
    cr_assert_not(nd_actor_run(mctx, a));
    cr_assert_eq(refs_of(a), 1);
    cr_assert_eq(n_finals, 1);
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
}

Test(actor, memory_freed_only_after_last_unref, .init = manual_setup, .fini = manual_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    nd_actor_ref(a);
    nd_actor_ref(a);
    cr_assert_eq(refs_of(a), 4);
    nd_actor_close(mctx, a);
    nd_actor_run(mctx, a);
    cr_assert_eq(n_finals, 1);
    cr_assert_eq(refs_of(a), 3);
    for (int left = 3; left > 1; left--) {
        nd_actor_unref(mctx, a);
        /* Still allocated: reading it is fine (ASan would report a use after free). */
        cr_assert(nd_actor_closed(a));
        cr_assert_eq(refs_of(a), (uint32_t)left - 1);
        cr_assert_eq(nd_pool_live_actors(mpool), 1);
    }
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
    cr_assert_eq(n_finals, 1);
}

Test(actor, life_reference_outlives_callers, .init = manual_setup, .fini = manual_teardown)
{
    nd_actor_t *a = nd_actor_spawn(mctx, &rec_type);
    nd_actor_unref(mctx, a); /* the caller lets go at once; the actor lives on */
    cr_assert_eq(nd_pool_live_actors(mpool), 1);
    send_seq(mctx, a, 0, 0);
    send_seq(mctx, a, 1, 0);
    nd_actor_run(mctx, a);
    cr_assert_eq(n_dispatched, 2);
    cr_assert_eq(nd_pool_live_actors(mpool), 1);
    nd_actor_close(mctx, a);
    cr_assert_not(nd_actor_run(mctx, a)); /* its last turn frees it */
    cr_assert_eq(n_finals, 1);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
}

static _Atomic int bare_dispatched;

static void
bare_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    atomic_fetch_add(&bare_dispatched, 1);
}

static const nd_actor_type_t bare_type = {
    .name = "bare",
    .size = sizeof(nd_actor_t),
    .dispatch = bare_dispatch,
};

Test(actor, final_and_discard_are_optional, .init = manual_setup, .fini = manual_teardown)
{
    nd_actor_t *a = nd_actor_spawn(mctx, &bare_type);
    send_seq(mctx, a, 0, 0);
    nd_actor_close(mctx, a);
    send_seq(mctx, a, 1, 0);
    nd_actor_run(mctx, a);
    send_seq(mctx, a, 2, 0); /* drained by this send; the message is freed (LSan checks) */
    cr_assert_eq(bare_dispatched, 1);
    nd_actor_unref(mctx, a);
    cr_assert_eq(nd_pool_live_actors(mpool), 0);
}

typedef struct emb {
    nd_msg_t hdr;
    uint32_t seq;
    uint32_t sender;
} emb_t;

Test(actor, embedded_messages_are_not_freed, .init = manual_setup, .fini = manual_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(mctx, &rec_type);
    nd_actor_t *a = &r->base;
    /* A message that lives on the stack: freeing it would be a bad free under ASan, and reusing
     * it after a free would be a use after free. */
    emb_t e = {.hdr = {.id = MSG_SEQ, .flags = ND_MSG_F_EMBEDDED}, .seq = 0};
    for (uint32_t i = 0; i < 3; i++) {
        e.seq = i;
        nd_actor_send(mctx, a, &e.hdr);
        nd_actor_run(mctx, a);
    }
    cr_assert_eq(r->n, 3);
    nd_actor_close(mctx, a);
    nd_actor_run(mctx, a);
    e.seq = 3;
    nd_actor_send(mctx, a, &e.hdr); /* discarded, still not freed */
    cr_assert_eq(n_discards, 1);
    cr_assert_eq(discard_log[0], 3);
    nd_actor_unref(mctx, a);
    cr_assert_eq(n_order_errors, 0);
}

Test(actor, msg_new_sets_header, .init = manual_setup, .fini = manual_teardown)
{
    nd_msg_t *m = nd_msg_new(mctx, 0, 77);
    cr_assert_eq(m->id, 77);
    cr_assert_eq(m->flags, 0);
    nd_msg_free(mctx, m);
    seq_msg_t *s = ND_MSG_NEW(mctx, seq_msg_t, MSG_SEQ);
    cr_assert_eq(s->hdr.id, MSG_SEQ);
    s->seq = 1;
    s->sender = 2;
    nd_msg_free(mctx, &s->hdr);
    m = nd_msg_new(mctx, 4096, 5);
    cr_assert_eq(m->cls, ND_MSGCACHE_BIG);
    ((char *)m)[4095] = 1;
    nd_msg_free(mctx, m);
}

static const nd_actor_type_t tiny_type = {
    .name = "tiny",
    .size = sizeof(nd_actor_t) - 1,
    .dispatch = bare_dispatch,
};

static void
manual_setup_quiet(void)
{
    manual_setup();
    cr_redirect_stderr(); /* the expected "natsd: fatal" line is not noise in the test log */
}

Test(actor, spawn_rejects_too_small_type, .init = manual_setup_quiet, .signal = SIGABRT)
{
    nd_actor_spawn(mctx, &tiny_type);
}

/* ======== on a running pool ======== */

static nd_pool_t *pool;
static nd_ctx_t *ctx;

static void
pool_setup(void)
{
    sems_init();
    pool = nd_pool_new(2);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
}

static void
pool_teardown(void)
{
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

typedef struct sender_arg {
    nd_actor_t *to;
    uint32_t id;
    uint32_t n;
    bool close_after;
} sender_arg_t;

static void *
sender_main(void *arg)
{
    sender_arg_t *sa = arg;
    nd_ctx_t *c = nd_ctx_external_new(pool);
    for (uint32_t i = 0; i < sa->n; i++)
        send_seq(c, sa->to, i, sa->id);
    if (sa->close_after)
        nd_actor_close(c, sa->to);
    nd_ctx_external_free(c);
    return NULL;
}

Test(actor, pool_per_sender_fifo, .init = pool_setup, .fini = pool_teardown, .timeout = 120)
{
    enum { PER = 20000 };
    rec_t *r = (rec_t *)nd_actor_spawn(ctx, &rec_type);
    r->current_ok = true;
    pthread_t th[SENDERS];
    sender_arg_t sa[SENDERS];
    for (uint32_t i = 0; i < SENDERS; i++) {
        sa[i] = (sender_arg_t){.to = &r->base, .id = i, .n = PER};
        cr_assert_eq(pthread_create(&th[i], NULL, sender_main, &sa[i]), 0);
    }
    for (int i = 0; i < SENDERS; i++)
        pthread_join(th[i], NULL);
    nd_actor_close(ctx, &r->base);
    cr_assert(sem_wait_10s(&final_sem));
    cr_assert_eq(r->n_at_final, SENDERS * PER);
    cr_assert_eq(n_order_errors, 0);
    for (int i = 0; i < SENDERS; i++)
        cr_assert_eq(r->next_seq[i], PER);
    cr_assert(r->current_ok);
    nd_actor_unref(ctx, &r->base);
    cr_assert(nd_pool_wait_empty(pool, 10000));
}

Test(actor, pool_batch_limit_and_overloaded, .init = pool_setup, .fini = pool_teardown)
{
    enum { N = 199 };
    rec_t *r = (rec_t *)nd_actor_spawn(ctx, &rec_type);
    nd_actor_t *a = &r->base;
    /* Hold the first turn inside its first message until all N messages are queued, so the
     * turns are exactly [BLOCK + 63], [64], [64], [8]. */
    send_id(ctx, a, MSG_BLOCK);
    cr_assert(sem_wait_10s(&entered));
    atomic_store(&last_seq, N - 1);
    for (uint32_t i = 0; i < N; i++)
        send_seq(ctx, a, i, 0);
    sem_post(&release_sem);
    cr_assert(sem_wait_10s(&last_sem));
    for (uint32_t i = 0; i < N; i++)
        cr_assert_eq(r->overloaded_at[i], i >= ND_ACTOR_BATCH - 1, "message %u", i);
    /* The last, short turn clears the flag as it ends. */
    WAIT_UNTIL(!nd_actor_overloaded(a));
    nd_actor_close(ctx, a);
    nd_actor_unref(ctx, a);
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(n_dispatched, N);
}

typedef struct fwd_msg {
    nd_msg_t hdr;
    nd_actor_t *target; /* a reference travels with the message */
    uint32_t seq;
} fwd_msg_t;

static void
fwd_dispatch(nd_ctx_t *c, nd_actor_t *self, nd_msg_t *msg)
{
    fwd_msg_t *f = (fwd_msg_t *)msg;
    send_seq(c, f->target, f->seq, 0);
    nd_actor_unref(c, f->target);
}

static const nd_actor_type_t fwd_type = {
    .name = "fwd",
    .size = sizeof(nd_actor_t),
    .dispatch = fwd_dispatch,
};

Test(actor, pool_messages_after_close_are_discarded, .init = pool_setup, .fini = pool_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(ctx, &rec_type);
    nd_actor_t *a = &r->base;
    for (uint32_t i = 0; i < 10; i++)
        send_seq(ctx, a, i, 0);
    nd_actor_close(ctx, a);
    cr_assert(sem_wait_10s(&final_sem));
    cr_assert_eq(r->n_at_final, 10);
    /* Wait for the closing turn to end idle (it drops the life reference). */
    WAIT_UNTIL(refs_of(a) == 1);
    cr_assert_eq(nd_pool_live_actors(pool), 1, "our reference keeps it allocated");

    for (uint32_t i = 10; i < 30; i++)
        send_seq(ctx, a, i, 0);
    cr_assert_eq(n_discards, 20, "the sender drained them through discard");

    /* From a worker too: another actor forwards into the closed one. */
    nd_actor_t *fwd = nd_actor_spawn(ctx, &fwd_type);
    for (uint32_t i = 30; i < 40; i++) {
        fwd_msg_t *f = ND_MSG_NEW(ctx, fwd_msg_t, MSG_FORWARD);
        nd_actor_ref(a);
        f->target = a;
        f->seq = i;
        nd_actor_send(ctx, fwd, &f->hdr);
    }
    WAIT_UNTIL(n_discards == 30);
    WAIT_UNTIL(refs_of(a) == 1);
    cr_assert_eq(n_dispatched, 10);
    cr_assert_eq(n_finals, 1);
    nd_actor_close(ctx, fwd);
    nd_actor_unref(ctx, fwd);
    nd_actor_unref(ctx, a);
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(n_finals, 1);
}

Test(actor, pool_messages_behind_close_in_same_turn, .init = pool_setup, .fini = pool_teardown)
{
    rec_t *r = (rec_t *)nd_actor_spawn(ctx, &rec_type);
    nd_actor_t *a = &r->base;
    send_id(ctx, a, MSG_BLOCK);
    cr_assert(sem_wait_10s(&entered));
    send_seq(ctx, a, 0, 0);
    nd_actor_close(ctx, a);
    for (uint32_t i = 1; i < 6; i++)
        send_seq(ctx, a, i, 0);
    sem_post(&release_sem);
    cr_assert(sem_wait_10s(&final_sem));
    nd_actor_unref(ctx, a);
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(n_dispatched, 1);
    cr_assert_eq(n_discards, 5);
    for (uint32_t i = 0; i < 5; i++)
        cr_assert_eq(discard_log[i], i + 1);
}

Test(actor, pool_refs_keep_memory, .init = pool_setup, .fini = pool_teardown)
{
    nd_actor_t *a = nd_actor_spawn(ctx, &rec_type);
    nd_actor_ref(a);
    nd_actor_close(ctx, a);
    cr_assert(sem_wait_10s(&final_sem));
    WAIT_UNTIL(refs_of(a) == 2);
    cr_assert_eq(nd_pool_live_actors(pool), 1);
    nd_actor_unref(ctx, a);
    cr_assert_eq(nd_pool_live_actors(pool), 1);
    cr_assert(nd_actor_closed(a));
    nd_actor_unref(ctx, a);
    cr_assert_eq(nd_pool_live_actors(pool), 0);
    cr_assert(nd_pool_wait_empty(pool, 0));
}

/* A parent that spawns children from inside its dispatch, feeds and closes them. */
typedef struct spawn_msg {
    nd_msg_t hdr;
    uint32_t children;
    uint32_t per_child;
} spawn_msg_t;

static _Atomic int parent_finals;
static _Atomic int spawn_ctx_errors;

static void
parent_dispatch(nd_ctx_t *c, nd_actor_t *self, nd_msg_t *msg)
{
    spawn_msg_t *s = (spawn_msg_t *)msg;
    if (c->worker < 0 || c->current != self)
        atomic_fetch_add(&spawn_ctx_errors, 1);
    for (uint32_t i = 0; i < s->children; i++) {
        nd_actor_t *child = nd_actor_spawn(c, &rec_type);
        if (child->pool != c->pool)
            atomic_fetch_add(&spawn_ctx_errors, 1);
        for (uint32_t k = 0; k < s->per_child; k++)
            send_seq(c, child, k, 0);
        nd_actor_close(c, child);
        nd_actor_unref(c, child);
    }
}

static void
parent_final(nd_ctx_t *c, nd_actor_t *self)
{
    atomic_fetch_add(&parent_finals, 1);
}

static const nd_actor_type_t parent_type = {
    .name = "parent",
    .size = sizeof(nd_actor_t),
    .dispatch = parent_dispatch,
    .final = parent_final,
};

Test(actor, pool_spawn_from_dispatch, .init = pool_setup, .fini = pool_teardown)
{
    nd_actor_t *p = nd_actor_spawn(ctx, &parent_type);
    for (int round = 0; round < 3; round++) {
        spawn_msg_t *s = ND_MSG_NEW(ctx, spawn_msg_t, MSG_SPAWN);
        s->children = 50;
        s->per_child = 20;
        nd_actor_send(ctx, p, &s->hdr);
    }
    nd_actor_close(ctx, p);
    nd_actor_unref(ctx, p);
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(parent_finals, 1);
    cr_assert_eq(n_finals, 150, "every child ran final");
    cr_assert_eq(child_sum, 150 * 20, "and saw all its messages first");
    cr_assert_eq(spawn_ctx_errors, 0);
    cr_assert_eq(n_order_errors, 0);
}

Test(actor, shutdown_closes_unclosed_actors, .timeout = 120)
{
    sems_init();
    pool = nd_pool_new(2);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
    enum { N = 50, PER = 10 };
    for (int i = 0; i < N; i++) {
        nd_actor_t *a = nd_actor_spawn(ctx, &rec_type);
        for (uint32_t k = 0; k < PER; k++)
            send_seq(ctx, a, k, 0);
        nd_actor_unref(ctx, a); /* nobody closes it */
    }
    nd_ctx_external_free(ctx);
    cr_assert_eq(n_finals, 0, "nothing closes them before shutdown");
    nd_pool_shutdown(pool);
    cr_assert_eq(nd_pool_live_actors(pool), 0);
    cr_assert_eq(n_finals, N);
    cr_assert_eq(child_sum, N * PER, "queued messages are handled before final");
    nd_pool_free(pool);
}

/* Sends args[i].n messages to each args[i].to in turn (interleaved), then the closes; the array
 * ends with an entry whose `to` is NULL. */
static void *
sender_all_main(void *arg)
{
    sender_arg_t *sa = arg;
    nd_ctx_t *c = nd_ctx_external_new(pool);
    for (uint32_t k = 0; k < sa[0].n; k++)
        for (sender_arg_t *x = sa; x->to != NULL; x++)
            send_seq(c, x->to, k, x->id);
    for (sender_arg_t *x = sa; x->to != NULL; x++)
        if (x->close_after)
            nd_actor_close(c, x->to);
    nd_ctx_external_free(c);
    return NULL;
}

Test(actor, pool_concurrent_closes_final_once, .init = pool_setup, .fini = pool_teardown,
     .timeout = 120)
{
    enum { ACTORS = 20, PER = 500 };
    nd_actor_t *as[ACTORS];
    for (int i = 0; i < ACTORS; i++)
        as[i] = nd_actor_spawn(ctx, &rec_type);
    /* Every sender sends PER messages and then a close to every actor, racing the others: each
     * message is dispatched (before the first close) or discarded (after it), never lost. */
    pthread_t th[SENDERS];
    sender_arg_t sa[SENDERS][ACTORS + 1];
    for (uint32_t s = 0; s < SENDERS; s++) {
        for (int i = 0; i < ACTORS; i++)
            sa[s][i] = (sender_arg_t){.to = as[i], .id = s, .n = PER, .close_after = true};
        sa[s][ACTORS] = (sender_arg_t){.to = NULL};
    }
    for (uint32_t s = 0; s < SENDERS; s++)
        cr_assert_eq(pthread_create(&th[s], NULL, sender_all_main, sa[s]), 0);
    for (uint32_t s = 0; s < SENDERS; s++)
        pthread_join(th[s], NULL);
    for (int i = 0; i < ACTORS; i++)
        nd_actor_unref(ctx, as[i]);
    cr_assert(nd_pool_wait_empty(pool, 10000));
    cr_assert_eq(n_finals, ACTORS);
    cr_assert_eq(n_dispatched + n_discards, SENDERS * ACTORS * PER);
    cr_assert_eq(n_order_errors, 0);
}
