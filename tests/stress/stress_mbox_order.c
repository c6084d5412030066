/* Stress: many producers into one mailbox; per-producer FIFO order, exactly-once delivery, and
 * exactly one scheduling per idle period.
 *
 * Phase 1 drives nd_mbox_t directly. Producer threads push numbered messages; the push that
 * reports "was idle" takes a scheduling token (it must be free: two holders would mean the actor
 * runs on two workers at once) and wakes the consumer thread through a semaphore. The consumer
 * pops in bursts, checks every message against the next sequence number it expects from that
 * producer (so a loss, a duplicate or a reordering all show up as a mismatch), returns the token
 * and marks the mailbox idle, or takes the token back when marking fails. Producers pause now and
 * then so that the mailbox goes idle often, which exercises the stub re-push and the idle bit.
 *
 * Phase 2 does the same through the runtime: one sink actor receives from raw pthreads (each with
 * an external ctx, so their pushes go through the inject queue) and from producer actors running
 * on the pool (which push to the sink from worker run queues and re-queue themselves, so workers
 * steal them). The sink checks order per producer, and that no two workers ever run it at once.
 * The phase repeats for pools of 2, 3 and 4 workers.
 *
 * Usage: stress_mbox_order [scale]   (or ND_STRESS_SCALE); see stress_util.h.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/actor.h"
#include "actors/alloc.h"
#include "actors/mbox.h"
#include "actors/pool.h"
#include "stress_util.h"

#define MAX_PRODUCERS 32

/* ---------------------------------------------------------------------------------------------
 * Phase 1: the bare mailbox.
 */

#define RAW_PRODUCERS 8

typedef struct raw_msg {
    nd_msg_t hdr;
    uint32_t producer;
    uint32_t seq;
} raw_msg_t;

typedef struct raw_state {
    nd_mbox_t mb;
    uint32_t per_producer;
    /* The scheduling token: 1 while someone owns the consumer role. */
    _Atomic int token;
    sem_t wake;
    _Atomic uint64_t consumed;  /* progress for the watchdog */
    _Atomic uint64_t schedules; /* pushes that found the mailbox idle */
    _Atomic int done;
} raw_state_t;

typedef struct raw_producer {
    raw_state_t *st;
    uint32_t id;
    pthread_t thread;
} raw_producer_t;

static void *
raw_producer_main(void *arg)
{
    raw_producer_t *p = arg;
    raw_state_t *st = p->st;
    uint64_t rng = 0x9E3779B97F4A7C15ull * (p->id + 1);

    for (uint32_t seq = 0; seq < st->per_producer; seq++) {
        raw_msg_t *m = nd_xmalloc(sizeof(*m));
        m->hdr.id = 1;
        m->hdr.flags = 0;
        m->producer = p->id;
        m->seq = seq;
        if (nd_mbox_push(&st->mb, &m->hdr)) {
            /* acq_rel: the token is a lock on the consumer role; pairs with the consumer's
             * release store that gives it back. */
            if (atomic_exchange_explicit(&st->token, 1, memory_order_acq_rel) != 0)
                stress_fail("mbox: push reported idle while the consumer role was held "
                            "(producer %u seq %u)",
                            p->id, seq);
            atomic_fetch_add_explicit(&st->schedules, 1, memory_order_relaxed);
            sem_post(&st->wake);
        }
        /* Pause now and then so that the consumer catches up and the mailbox goes idle. */
        uint64_t r = stress_rand(&rng);
        if ((r & 255) == 0)
            stress_sleep_us((unsigned)(r >> 40) % 200);
        else if ((r & 31) == 0)
            sched_yield();
    }
    return NULL;
}

static void *
raw_consumer_main(void *arg)
{
    raw_state_t *st = arg;
    uint32_t next[RAW_PRODUCERS] = {0};
    uint64_t total = (uint64_t)RAW_PRODUCERS * st->per_producer;
    uint64_t got = 0;
    uint64_t rng = 12345;

    while (got < total) {
        sem_wait(&st->wake);
        for (;;) {
            /* A burst of at most 64, like an actor's turn, then maybe yield while still owning. */
            unsigned burst = 0;
            nd_msg_t *m;
            while (burst < 64 && (m = nd_mbox_pop_sc(&st->mb)) != NULL) {
                raw_msg_t *rm = (raw_msg_t *)m;
                STRESS_CHECK(rm->producer < RAW_PRODUCERS, "mbox: bad producer id %u",
                             rm->producer);
                STRESS_CHECK(rm->seq == next[rm->producer],
                             "mbox: producer %u: got seq %u, expected %u (lost, duplicated "
                             "or reordered)",
                             rm->producer, rm->seq, next[rm->producer]);
                next[rm->producer]++;
                nd_free(rm);
                burst++;
                got++;
                atomic_fetch_add_explicit(&st->consumed, 1, memory_order_relaxed);
            }
            if (burst == 64) {
                if ((stress_rand(&rng) & 7) == 0)
                    sched_yield();
                continue;
            }
            /* Give the role back before marking idle: once idle, a producer takes it at once.
             * release: pairs with the acq_rel exchange of the producer that takes it next. */
            atomic_store_explicit(&st->token, 0, memory_order_release);
            if (nd_mbox_mark_idle_sc(&st->mb))
                break;
            /* Not idle: a push is in progress, so no producer can have taken the role. */
            if (atomic_exchange_explicit(&st->token, 1, memory_order_acq_rel) != 0)
                stress_fail("mbox: a push reported idle while mark_idle failed");
        }
    }
    for (uint32_t i = 0; i < RAW_PRODUCERS; i++)
        STRESS_CHECK(next[i] == st->per_producer, "mbox: producer %u: %u of %u delivered", i,
                     next[i], st->per_producer);
    /* release: pairs with the acquire in stress_wait(). */
    atomic_store_explicit(&st->done, 1, memory_order_release);
    return NULL;
}

static void
phase_raw(uint32_t per_producer)
{
    raw_state_t *st = nd_new(raw_state_t);
    nd_mbox_init(&st->mb);
    st->per_producer = per_producer;
    sem_init(&st->wake, 0, 0);

    raw_producer_t prod[RAW_PRODUCERS];
    pthread_t consumer;
    pthread_create(&consumer, NULL, raw_consumer_main, st);
    for (uint32_t i = 0; i < RAW_PRODUCERS; i++) {
        prod[i].st = st;
        prod[i].id = i;
        pthread_create(&prod[i].thread, NULL, raw_producer_main, &prod[i]);
    }
    stress_wait("mbox phase", &st->done, &st->consumed);
    for (uint32_t i = 0; i < RAW_PRODUCERS; i++)
        pthread_join(prod[i].thread, NULL);
    pthread_join(consumer, NULL);

    /* Everything consumed and marked idle: the next push must report idle exactly once. */
    STRESS_CHECK(atomic_load(&st->token) == 0, "mbox: consumer role still held at the end");
    nd_msg_t probe = {.id = 2, .flags = ND_MSG_F_EMBEDDED};
    nd_msg_t probe2 = {.id = 3, .flags = ND_MSG_F_EMBEDDED};
    STRESS_CHECK(nd_mbox_push(&st->mb, &probe), "mbox: not idle after draining");
    STRESS_CHECK(!nd_mbox_push(&st->mb, &probe2), "mbox: idle reported twice");
    STRESS_CHECK(nd_mbox_pop_sc(&st->mb) == &probe, "mbox: probe not popped first");
    STRESS_CHECK(nd_mbox_pop_sc(&st->mb) == &probe2, "mbox: probe2 not popped second");
    STRESS_CHECK(nd_mbox_pop_sc(&st->mb) == NULL, "mbox: phantom message");
    STRESS_CHECK(nd_mbox_mark_idle_sc(&st->mb), "mbox: cannot mark idle when empty");

    printf("mbox: %u producers x %u msgs, %llu idle->scheduled transitions\n", RAW_PRODUCERS,
           per_producer, (unsigned long long)atomic_load(&st->schedules));
    sem_destroy(&st->wake);
    nd_free(st);
}

/* ---------------------------------------------------------------------------------------------
 * Phase 2: through the actor runtime.
 */

enum {
    MSG_ITEM = ND_MSG_USER_BASE,
    MSG_PRODUCE,
    MSG_RESUME,
};

typedef struct item_msg {
    nd_msg_t hdr;
    uint32_t producer;
    uint32_t seq;
} item_msg_t;

typedef struct sink {
    nd_actor_t base;
    /* owner actor only */
    uint32_t next[MAX_PRODUCERS];
    uint32_t producers;
    uint32_t per_producer;
    uint64_t got;
    uint64_t total;
    /* any thread, atomic */
    _Atomic int running;       /* 1 while a worker is inside dispatch: must never be seen set */
    _Atomic uint64_t progress; /* for the watchdog */
    _Atomic int done;
    _Atomic uint64_t overloaded; /* times the sink was seen behind (informational) */
} sink_t;

typedef struct kicker kicker_t;

typedef struct producer {
    nd_actor_t base;
    /* immutable after spawn */
    sink_t *sink;     /* borrowed: main holds a reference until every producer has finished */
    kicker_t *kicker; /* borrowed, likewise */
    uint32_t id;
    uint32_t count;
    /* owner actor only */
    uint32_t seq;
} producer_t;

static void
sink_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    sink_t *s = (sink_t *)self;
    /* acq_rel: a second worker running the sink at the same time would see 1 here. */
    STRESS_CHECK(atomic_exchange_explicit(&s->running, 1, memory_order_acq_rel) == 0,
                 "sink: dispatched on two workers at once");
    STRESS_CHECK(msg->id == MSG_ITEM, "sink: unexpected message id %u", msg->id);
    item_msg_t *m = (item_msg_t *)msg;
    STRESS_CHECK(m->producer < s->producers, "sink: bad producer id %u", m->producer);
    STRESS_CHECK(m->seq == s->next[m->producer],
                 "sink: producer %u: got seq %u, expected %u (lost, duplicated or reordered)",
                 m->producer, m->seq, s->next[m->producer]);
    s->next[m->producer]++;
    s->got++;
    atomic_fetch_add_explicit(&s->progress, 1, memory_order_relaxed);
    if (nd_actor_overloaded(self))
        atomic_fetch_add_explicit(&s->overloaded, 1, memory_order_relaxed);
    if (s->got == s->total) {
        for (uint32_t i = 0; i < s->producers; i++)
            STRESS_CHECK(s->next[i] == s->per_producer, "sink: producer %u: %u of %u delivered", i,
                         s->next[i], s->per_producer);
        /* release: pairs with the acquire in stress_wait(); publishes the checks above. */
        atomic_store_explicit(&s->done, 1, memory_order_release);
    }
    STRESS_CHECK(s->got <= s->total, "sink: more messages than were sent");
    /* release: pairs with the acq_rel exchange of the next dispatch. */
    atomic_store_explicit(&s->running, 0, memory_order_release);
}

static void
sink_discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    stress_fail("sink: message %u discarded: the sink is closed only after the last one", msg->id);
}

static const nd_actor_type_t sink_type = {
    .name = "stress_sink",
    .size = sizeof(sink_t),
    .dispatch = sink_dispatch,
    .discard = sink_discard,
};

static void
send_item(nd_ctx_t *ctx, sink_t *s, uint32_t producer, uint32_t seq)
{
    item_msg_t *m = ND_MSG_NEW(ctx, item_msg_t, MSG_ITEM);
    m->producer = producer;
    m->seq = seq;
    nd_actor_send(ctx, &s->base, &m->hdr);
}

/* The kicker starts the producer actors and, now and then, resumes one: everything it makes
 * runnable lands on its own worker's run queue, so the other workers have to steal. */
struct kicker {
    nd_actor_t base;
};

typedef struct resume_msg {
    nd_msg_t hdr;
    producer_t *who; /* borrowed: main holds a reference to every producer */
} resume_msg_t;

static void
kicker_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    STRESS_CHECK(msg->id == MSG_RESUME, "kicker: unexpected message id %u", msg->id);
    resume_msg_t *m = (resume_msg_t *)msg;
    nd_actor_send(ctx, &m->who->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_PRODUCE));
}

static const nd_actor_type_t kicker_type = {
    .name = "stress_kicker",
    .size = sizeof(kicker_t),
    .dispatch = kicker_dispatch,
};

static void
producer_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    producer_t *p = (producer_t *)self;
    STRESS_CHECK(msg->id == MSG_PRODUCE, "producer: unexpected message id %u", msg->id);
    /* A random burst, then a message to ourselves (or, one time in four, a detour through the
     * kicker): the producer goes back on a run queue between bursts, where another worker may
     * steal it. Only one PRODUCE is ever outstanding per producer, so its items stay ordered. */
    uint64_t r = nd_ctx_rand(ctx);
    uint32_t burst = 1 + (uint32_t)(r % 96);
    for (uint32_t i = 0; i < burst && p->seq < p->count; i++)
        send_item(ctx, p->sink, p->id, p->seq++);
    if (p->seq == p->count)
        return;
    if ((r >> 32) % 4 == 0) {
        resume_msg_t *m = ND_MSG_NEW(ctx, resume_msg_t, MSG_RESUME);
        m->who = p;
        nd_actor_send(ctx, &p->kicker->base, &m->hdr);
    } else {
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_PRODUCE));
    }
}

static const nd_actor_type_t producer_type = {
    .name = "stress_producer",
    .size = sizeof(producer_t),
    .dispatch = producer_dispatch,
};

typedef struct thread_producer {
    nd_pool_t *pool;
    sink_t *sink;
    uint32_t id;
    uint32_t count;
    pthread_t thread;
} thread_producer_t;

static void *
thread_producer_main(void *arg)
{
    thread_producer_t *tp = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(tp->pool);
    uint64_t rng = 0xC0FFEEull + tp->id;
    for (uint32_t seq = 0; seq < tp->count; seq++) {
        send_item(ctx, tp->sink, tp->id, seq);
        uint64_t r = stress_rand(&rng);
        if ((r & 511) == 0)
            stress_sleep_us((unsigned)(r >> 40) % 300);
        else if ((r & 63) == 0)
            sched_yield();
    }
    nd_ctx_external_free(ctx);
    return NULL;
}

static void
phase_actors(unsigned workers, uint32_t threads, uint32_t actors, uint32_t per_producer)
{
    uint32_t producers = threads + actors;
    STRESS_CHECK(producers <= MAX_PRODUCERS, "too many producers");
    nd_pool_t *pool = nd_pool_new(workers);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);

    sink_t *sink = (sink_t *)nd_actor_spawn(ctx, &sink_type);
    /* The sink has not received anything yet, so nobody else touches it: plain setup is fine;
     * the first send publishes it (release in the mailbox XCHG). */
    sink->producers = producers;
    sink->per_producer = per_producer;
    sink->total = (uint64_t)producers * per_producer;

    kicker_t *kicker = (kicker_t *)nd_actor_spawn(ctx, &kicker_type);
    producer_t *pa[MAX_PRODUCERS];
    for (uint32_t i = 0; i < actors; i++) {
        pa[i] = (producer_t *)nd_actor_spawn(ctx, &producer_type);
        pa[i]->sink = sink;
        pa[i]->kicker = kicker;
        pa[i]->id = threads + i;
        pa[i]->count = per_producer;
    }
    thread_producer_t tp[MAX_PRODUCERS];
    for (uint32_t i = 0; i < threads; i++) {
        tp[i] = (thread_producer_t){.pool = pool, .sink = sink, .id = i, .count = per_producer};
        pthread_create(&tp[i].thread, NULL, thread_producer_main, &tp[i]);
    }
    for (uint32_t i = 0; i < actors; i++) {
        resume_msg_t *m = ND_MSG_NEW(ctx, resume_msg_t, MSG_RESUME);
        m->who = pa[i];
        nd_actor_send(ctx, &kicker->base, &m->hdr);
    }

    stress_wait("actor phase", &sink->done, &sink->progress);
    for (uint32_t i = 0; i < threads; i++)
        pthread_join(tp[i].thread, NULL);

    uint64_t overloaded = atomic_load(&sink->overloaded);

    /* Every producer has sent its last item (the sink saw it), so closing them now discards
     * nothing that matters; the sink is closed last. */
    for (uint32_t i = 0; i < actors; i++) {
        nd_actor_close(ctx, &pa[i]->base);
        nd_actor_unref(ctx, &pa[i]->base);
    }
    nd_actor_close(ctx, &kicker->base);
    nd_actor_unref(ctx, &kicker->base);
    nd_actor_close(ctx, &sink->base);
    nd_actor_unref(ctx, &sink->base);
    /* A hang guard only: closing a dozen actors takes no time on any machine. */
    STRESS_CHECK(nd_pool_wait_empty(pool, (unsigned)(stress_stall_limit_s() * 1000)),
                 "actors still live after close: %zu", nd_pool_live_actors(pool));
    nd_pool_shutdown(pool);
    STRESS_CHECK(nd_pool_live_actors(pool) == 0, "live actors after shutdown: %zu",
                 nd_pool_live_actors(pool));
    /* Only now: the workers' counters are plain fields, read safely once they have stopped. */
    nd_ctx_stats_t stats = nd_pool_stats(pool);
    printf("actors: %u workers, %u threads + %u actors x %u msgs: %llu turns, %llu steals, "
           "%llu parks, sink seen overloaded %llu times\n",
           workers, threads, actors, per_producer, (unsigned long long)stats.turns,
           (unsigned long long)stats.steals, (unsigned long long)stats.parks,
           (unsigned long long)overloaded);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    double t0 = stress_now_s();
    setvbuf(stdout, NULL, _IOLBF, 0);

    phase_raw((uint32_t)stress_scaled(200000, f));
    printf("  (%.1f s)\n", stress_now_s() - t0);
    for (unsigned workers = 2; workers <= 4; workers++) {
        phase_actors(workers, 4, 8, (uint32_t)stress_scaled(60000, f));
        printf("  (%.1f s)\n", stress_now_s() - t0);
    }

    printf("stress_mbox_order: OK (%.1f s)\n", stress_now_s() - t0);
    return 0;
}
