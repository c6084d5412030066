/* Unit tests for natsd/timer.h: one-shot and periodic timers delivering messages to their owner,
 * cancel and re-arm making in-flight messages stale, the one-in-flight limit of periodic timers,
 * and deadline order across many timers.
 *
 * Nothing here asserts on how long something took. Where a test needs "the timer has fired and
 * its message is queued", it holds the owner inside a blocking message and watches the timer's
 * own state (a one-shot is disarmed, under the service's lock, in the same step that sends its
 * message; a periodic sets in_flight). Where it needs "enough time passed for a wrong extra firing
 * to have happened", it waits for a probe timer with a later deadline, which the service can only
 * fire after passing the earlier ones. Every wait has a 10 s hang guard.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

#include "actors/pool.h"
#include "actors/timer.h"
#include "test_wait.h"

#define MS 1000000ull

enum {
    MSG_T1 = ND_MSG_USER_BASE, /* timer t1 */
    MSG_PROBE,                 /* timer probe */
    MSG_BLOCK,
    MSG_MARK,
    MSG_CANCEL,
    MSG_SYNC,
    MSG_ARRAY, /* timers of the many-timers actor */
};

typedef struct tact {
    nd_actor_t base;
    nd_timer_t t1, probe;
    /* any thread reads, owner writes */
    _Atomic int fired, stale, probe_fired;
    _Atomic int t1_msgs;         /* every t1 message, fired or stale */
    _Atomic int t1_msgs_at_mark; /* t1 messages handled before MSG_MARK */
    _Atomic int fired_at_mark;   /* ... of which firings */
    _Atomic int fired_at_cancel;
    _Atomic bool cancel_done;
} tact_t;

static sem_t entered, release_sem, t1_sem, probe_sem, sync_sem;
static _Atomic int finals;

static void
tact_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    tact_t *a = (tact_t *)self;
    switch (msg->id) {
    case MSG_T1:
        atomic_fetch_add(&a->t1_msgs, 1);
        if (nd_timer_fired(&a->t1, msg))
            atomic_fetch_add(&a->fired, 1);
        else
            atomic_fetch_add(&a->stale, 1);
        sem_post(&t1_sem);
        break;
    case MSG_PROBE:
        if (nd_timer_fired(&a->probe, msg)) {
            atomic_fetch_add(&a->probe_fired, 1);
            sem_post(&probe_sem);
        }
        break;
    case MSG_BLOCK:
        sem_post(&entered);
        sem_wait(&release_sem);
        break;
    case MSG_MARK:
        atomic_store(&a->t1_msgs_at_mark, atomic_load(&a->t1_msgs));
        atomic_store(&a->fired_at_mark, atomic_load(&a->fired));
        sem_post(&sync_sem);
        break;
    case MSG_CANCEL:
        /* Cancel on the owner's turn: no firing of t1 can be half-handled at this point. */
        nd_timer_cancel(ctx, &a->t1);
        atomic_store(&a->fired_at_cancel, atomic_load(&a->fired));
        atomic_store(&a->cancel_done, true);
        sem_post(&sync_sem);
        break;
    case MSG_SYNC:
        sem_post(&sync_sem);
        break;
    }
}

static void
tact_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    tact_t *a = (tact_t *)self;
    /* The owner cancels its timers in final: after that the service never touches them. */
    nd_timer_cancel(ctx, &a->t1);
    nd_timer_cancel(ctx, &a->probe);
    atomic_fetch_add(&finals, 1);
}

static const nd_actor_type_t tact_type = {
    .name = "tact",
    .size = sizeof(tact_t),
    .dispatch = tact_dispatch,
    .final = tact_final,
};

static nd_pool_t *pool;
static nd_ctx_t *ctx;

static void
setup(void)
{
    sem_init(&entered, 0, 0);
    sem_init(&release_sem, 0, 0);
    sem_init(&t1_sem, 0, 0);
    sem_init(&probe_sem, 0, 0);
    sem_init(&sync_sem, 0, 0);
    pool = nd_pool_new(2);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
}

static void
teardown(void)
{
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

static tact_t *
tact_new(void)
{
    tact_t *a = (tact_t *)nd_actor_spawn(ctx, &tact_type);
    nd_timer_init(&a->t1, &a->base, MSG_T1);
    nd_timer_init(&a->probe, &a->base, MSG_PROBE);
    return a;
}

static void
tact_done(tact_t *a)
{
    nd_actor_close(ctx, &a->base);
    nd_actor_unref(ctx, &a->base);
    cr_assert(nd_pool_wait_empty(pool, 10000));
}

static void
send_id(nd_actor_t *to, uint32_t id)
{
    nd_actor_send(ctx, to, nd_msg_new(ctx, sizeof(nd_msg_t), id));
}

/* Holds the owner inside MSG_BLOCK until unblock(). */
static void
block(tact_t *a)
{
    send_id(&a->base, MSG_BLOCK);
    cr_assert(sem_wait_10s(&entered));
}

static void
unblock(void)
{
    sem_post(&release_sem);
}

/* Arms the probe and waits for it: the service has then passed every earlier deadline. */
static void
probe_after(tact_t *a, uint64_t delay_ns)
{
    nd_timer_start(ctx, &a->probe, delay_ns, 0);
    cr_assert(sem_wait_10s(&probe_sem), "the probe timer never fired");
}

Test(timer, init_is_unarmed_and_cancel_is_safe, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    cr_assert_not(nd_timer_armed(ctx, &a->t1));
    nd_timer_cancel(ctx, &a->t1); /* unarmed: harmless */
    nd_timer_cancel(ctx, &a->t1);
    cr_assert_not(nd_timer_armed(ctx, &a->t1));
    nd_timer_start(ctx, &a->t1, 3600 * 1000 * MS, 0);
    cr_assert(nd_timer_armed(ctx, &a->t1));
    nd_timer_cancel(ctx, &a->t1);
    cr_assert_not(nd_timer_armed(ctx, &a->t1));
    tact_done(a);
    cr_assert_eq(atomic_load(&finals), 1);
}

Test(timer, one_shot_fires_once, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    nd_timer_start(ctx, &a->t1, 1 * MS, 0);
    cr_assert(sem_wait_10s(&t1_sem));
    cr_assert_not(nd_timer_armed(ctx, &a->t1), "a one-shot disarms when it fires");
    /* A one-shot that stayed armed would fire again long before a probe 30 ms later. */
    probe_after(a, 30 * MS);
    cr_assert_eq(atomic_load(&a->fired), 1);
    cr_assert_eq(atomic_load(&a->stale), 0);
    cr_assert_eq(atomic_load(&a->t1_msgs), 1);
    tact_done(a);
    cr_assert_eq(finals, 1);
}

Test(timer, zero_delay_fires, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    nd_timer_start(ctx, &a->t1, 0, 0);
    cr_assert(sem_wait_10s(&t1_sem));
    cr_assert_eq(atomic_load(&a->fired), 1);
    tact_done(a);
}

Test(timer, periodic_fires_repeatedly_until_cancelled, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    nd_timer_start(ctx, &a->t1, 1 * MS, 1 * MS);
    for (int i = 0; i < 10; i++)
        cr_assert(sem_wait_10s(&t1_sem), "firing %d never came", i + 1);
    cr_assert_geq(atomic_load(&a->fired), 10);
    cr_assert(nd_timer_armed(ctx, &a->t1), "a periodic timer stays armed");

    send_id(&a->base, MSG_CANCEL);
    cr_assert(sem_wait_10s(&sync_sem));
    cr_assert_not(nd_timer_armed(ctx, &a->t1));
    int at_cancel = atomic_load(&a->fired_at_cancel);
    /* 30 periods later (the probe's deadline) it would have fired again many times. */
    probe_after(a, 30 * MS);
    send_id(&a->base, MSG_SYNC); /* let any stale in-flight message be handled first */
    cr_assert(sem_wait_10s(&sync_sem));
    cr_assert_eq(atomic_load(&a->fired), at_cancel, "fired after cancel");
    cr_assert_leq(atomic_load(&a->stale), 1, "at most the one in-flight message is stale");
    tact_done(a);
}

Test(timer, cancel_makes_in_flight_one_shot_stale, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    block(a);
    nd_timer_start(ctx, &a->t1, 1 * MS, 0);
    /* Disarmed means fired: its message is now queued behind MSG_BLOCK. */
    WAIT_UNTIL(!nd_timer_armed(ctx, &a->t1));
    nd_timer_cancel(ctx, &a->t1);
    unblock();
    cr_assert(sem_wait_10s(&t1_sem));
    cr_assert_eq(atomic_load(&a->fired), 0, "a cancelled firing must read as stale");
    cr_assert_eq(atomic_load(&a->stale), 1);
    tact_done(a);
}

Test(timer, cancel_makes_in_flight_periodic_stale, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    block(a);
    nd_timer_start(ctx, &a->t1, 1 * MS, 1 * MS);
    WAIT_UNTIL(atomic_load(&a->t1.in_flight));
    nd_timer_cancel(ctx, &a->t1);
    cr_assert_not(atomic_load(&a->t1.in_flight), "cancel resets the in-flight flag");
    unblock();
    cr_assert(sem_wait_10s(&t1_sem));
    probe_after(a, 20 * MS);
    send_id(&a->base, MSG_SYNC);
    cr_assert(sem_wait_10s(&sync_sem));
    cr_assert_eq(atomic_load(&a->fired), 0);
    cr_assert_eq(atomic_load(&a->stale), 1, "exactly the one message in flight, now stale");
    tact_done(a);
}

Test(timer, rearm_replaces_deadline, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    nd_timer_start(ctx, &a->t1, 3600 * 1000 * MS, 0); /* an hour: must never be waited for */
    nd_timer_start(ctx, &a->t1, 1 * MS, 0);
    cr_assert(sem_wait_10s(&t1_sem), "re-arming with a shorter delay did not take effect");
    cr_assert_eq(atomic_load(&a->fired), 1);
    cr_assert_not(nd_timer_armed(ctx, &a->t1), "the old deadline is gone too");
    tact_done(a);
}

Test(timer, rearm_makes_in_flight_stale, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    block(a);
    nd_timer_start(ctx, &a->t1, 1 * MS, 0);
    WAIT_UNTIL(!nd_timer_armed(ctx, &a->t1));
    nd_timer_start(ctx, &a->t1, 1 * MS, 0); /* re-arm while the first firing is queued */
    WAIT_UNTIL(!nd_timer_armed(ctx, &a->t1));
    unblock();
    cr_assert(sem_wait_10s(&t1_sem));
    cr_assert(sem_wait_10s(&t1_sem));
    cr_assert_eq(atomic_load(&a->stale), 1, "the firing from before the re-arm");
    cr_assert_eq(atomic_load(&a->fired), 1, "the firing of the re-armed timer");
    tact_done(a);
}

Test(timer, rearm_periodic_as_one_shot, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    nd_timer_start(ctx, &a->t1, 1 * MS, 1 * MS);
    for (int i = 0; i < 3; i++)
        cr_assert(sem_wait_10s(&t1_sem));
    block(a);
    nd_timer_start(ctx, &a->t1, 1 * MS, 0);
    WAIT_UNTIL(!nd_timer_armed(ctx, &a->t1));
    int before = atomic_load(&a->fired);
    unblock();
    probe_after(a, 30 * MS);
    send_id(&a->base, MSG_SYNC);
    cr_assert(sem_wait_10s(&sync_sem));
    cr_assert_eq(atomic_load(&a->fired), before + 1, "one firing of the one-shot, no more");
    tact_done(a);
}

Test(timer, periodic_keeps_one_message_in_flight, .init = setup, .fini = teardown)
{
    tact_t *slow = tact_new();
    tact_t *pacer = tact_new();
    block(slow);
    nd_timer_start(ctx, &slow->t1, 1 * MS, 1 * MS);
    WAIT_UNTIL(atomic_load(&slow->t1.in_flight));
    /* The pacer runs on the other worker with the same period: once it has fired 20 times the
     * service has passed at least ~20 due deadlines of the slow actor's timer too. */
    nd_timer_start(ctx, &pacer->t1, 1 * MS, 1 * MS);
    for (int i = 0; i < 20; i++)
        cr_assert(sem_wait_10s(&t1_sem));
    nd_timer_cancel(ctx, &pacer->t1);
    send_id(&slow->base, MSG_MARK); /* queued behind every firing sent so far */
    unblock();
    cr_assert(sem_wait_10s(&sync_sem));
    cr_assert_eq(atomic_load(&slow->t1_msgs_at_mark), 1,
                 "a blocked owner had %d periodic messages queued",
                 atomic_load(&slow->t1_msgs_at_mark));
    /* At the mark, not now: the timer may have fired again since the owner took it. */
    cr_assert_eq(atomic_load(&slow->fired_at_mark), 1);
    /* Once the owner consumed it, firing resumes. */
    int had = atomic_load(&slow->fired);
    WAIT_UNTIL(atomic_load(&slow->fired) >= had + 3);
    nd_actor_close(ctx, &pacer->base);
    nd_actor_unref(ctx, &pacer->base);
    tact_done(slow);
    cr_assert_eq(finals, 2);
}

Test(timer, fired_rejects_other_timers_messages, .init = setup, .fini = teardown)
{
    tact_t *a = tact_new();
    nd_timer_t other;
    nd_timer_init(&other, &a->base, MSG_T1);
    nd_timer_msg_t m = {.hdr = {.id = MSG_T1}, .timer = &other, .seq = 0};
    cr_assert(nd_timer_fired(&other, &m.hdr));
    cr_assert_not(nd_timer_fired(&a->t1, &m.hdr), "a message of another timer");
    m.seq = 5;
    cr_assert_not(nd_timer_fired(&other, &m.hdr), "a sequence number never issued");
    tact_done(a);
}

/* ---- many timers on one actor fire in deadline order; cancelled ones never fire ---- */

#define MANY 200

typedef struct many {
    nd_actor_t base;
    nd_timer_t t[MANY];
    uint64_t deadline[MANY]; /* written before arming */
    bool cancelled[MANY];
    /* owner only; read by the test after sync */
    int fired[MANY];
    int order_errors;
    uint64_t last_deadline;
    int n_fired;
} many_t;

static void
many_dispatch(nd_ctx_t *c, nd_actor_t *self, nd_msg_t *msg)
{
    many_t *m = (many_t *)self;
    if (msg->id == MSG_SYNC) {
        sem_post(&sync_sem);
        return;
    }
    nd_timer_t *t = ((nd_timer_msg_t *)msg)->timer;
    int i = (int)(t - m->t);
    if (!nd_timer_fired(t, msg))
        return;
    m->fired[i]++;
    m->n_fired++;
    if (m->deadline[i] < m->last_deadline)
        m->order_errors++;
    m->last_deadline = m->deadline[i];
    if (m->n_fired == MANY - MANY / 4)
        sem_post(&t1_sem);
}

static void
many_final(nd_ctx_t *c, nd_actor_t *self)
{
    many_t *m = (many_t *)self;
    for (int i = 0; i < MANY; i++)
        nd_timer_cancel(c, &m->t[i]);
}

static const nd_actor_type_t many_type = {
    .name = "many",
    .size = sizeof(many_t),
    .dispatch = many_dispatch,
    .final = many_final,
};

Test(timer, many_timers_fire_in_deadline_order, .init = setup, .fini = teardown)
{
    many_t *m = (many_t *)nd_actor_spawn(ctx, &many_type);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < MANY; i++)
        nd_timer_init(&m->t[i], &m->base, MSG_ARRAY);
    /* Every 4th timer gets a long delay and is cancelled before it can fire. */
    for (int i = 0; i < MANY; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        bool cancel = i % 4 == 0;
        uint64_t delay = cancel ? 3600 * 1000 * MS : (rng % 50) * MS;
        m->cancelled[i] = cancel;
        nd_timer_start(ctx, &m->t[i], delay, 0);
        m->deadline[i] = m->t[i].deadline_ns; /* only the service reads it while armed */
    }
    for (int i = 0; i < MANY; i += 4)
        nd_timer_cancel(ctx, &m->t[i]);
    cr_assert(sem_wait_10s(&t1_sem));
    /* Every live timer fired; a probe (sync) message settles what the actor has recorded. */
    nd_actor_send(ctx, &m->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_SYNC));
    cr_assert(sem_wait_10s(&sync_sem));
    cr_assert_eq(m->order_errors, 0, "timers fired out of deadline order");
    for (int i = 0; i < MANY; i++) {
        cr_assert_eq(m->fired[i], m->cancelled[i] ? 0 : 1, "timer %d fired %d times", i,
                     m->fired[i]);
        cr_assert_not(nd_timer_armed(ctx, &m->t[i]));
    }
    nd_actor_close(ctx, &m->base);
    nd_actor_unref(ctx, &m->base);
    cr_assert(nd_pool_wait_empty(pool, 10000));
}

Test(timer, shutdown_with_armed_periodic_timers, .timeout = 60)
{
    setup();
    for (int i = 0; i < 20; i++) {
        tact_t *a = tact_new();
        nd_timer_start(ctx, &a->t1, 1 * MS, 1 * MS);
        nd_actor_unref(ctx, &a->base);
    }
    for (int i = 0; i < 20; i++)
        cr_assert(sem_wait_10s(&t1_sem));
    nd_ctx_external_free(ctx);
    /* Shutdown closes them; each cancels its timer in final, so the service never sends to a
     * freed actor (ASan would see it). */
    nd_pool_shutdown(pool);
    cr_assert_eq(finals, 20);
    cr_assert_eq(nd_pool_live_actors(pool), 0);
    nd_pool_free(pool);
}
