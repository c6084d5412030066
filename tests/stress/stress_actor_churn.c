/* Stress: thousands of actors spawned and closed while workers steal; references, timers, and
 * senders racing with close.
 *
 * Tree churn. The main thread spawns root "nodes" until a global actor budget is used up. A node
 * told to GROW spawns a few children (holding the reference nd_actor_spawn returns), introduces
 * them to each other and to itself with INTRO messages that each carry a counted reference
 * (nd_actor_ref before the send, ownership in the message), and pokes them. A POKE carries a heap
 * payload that whoever consumes the message frees, and is forwarded for a few hops to peers or
 * children. On the way, nodes close themselves, close a peer (so two closes may race), drop peer
 * references early, spawn a lone child, and arm, re-arm or cancel a one-shot or periodic timer.
 * A node's final() cancels its timer and drops every reference it holds.
 *
 * Close races. A coordinator thread repeatedly spawns a target and hands a reference to each of
 * several sender threads, which poke it concurrently while one of them closes it midway. Messages
 * the closer sent before its close must be dispatched (a mailbox is FIFO per sender); messages
 * sent after nd_actor_closed() turned true must be discarded through type->discard.
 *
 * Checks: dispatch never runs concurrently for one actor, never after final; discard only after
 * final; for every message kind sent == dispatched + discarded; every payload freed; every actor
 * finalised exactly once (created == finalised) and nd_pool_live_actors() == 0 after shutdown.
 * ASan adds use-after-free and leak detection, TSan the absence of races.
 *
 * Usage: stress_actor_churn [scale]   (or ND_STRESS_SCALE); see stress_util.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "actors/actor.h"
#include "actors/alloc.h"
#include "actors/pool.h"
#include "actors/timer.h"
#include "stress_util.h"

#define WORKERS       4
#define MAX_PEERS     8
#define MAX_CHILDREN  6
#define SENDERS       3
#define ROOT_RING     32
#define IN_FLIGHT_MAX 3000 /* messages queued before the main thread plants more roots */
#define PAYLOAD_MAGIC 0x5A5A1234C0DEF00Dull

enum {
    MSG_GROW = ND_MSG_USER_BASE, /* arg: depth still to grow */
    MSG_INTRO,                   /* peer: a counted reference that passes to the receiver */
    MSG_POKE,                    /* payload: owned heap block; arg: hops left */
    MSG_TICK,                    /* the node's timer */
};
#define KINDS 3 /* GROW, INTRO, POKE: the messages this program sends itself */

/* user_msg_t.flags */
#define F_MUST_DISPATCH 0x1u /* sent by the closer before its close */
#define F_MUST_DISCARD  0x2u /* sent after nd_actor_closed() was seen true */

typedef struct node {
    nd_actor_t base;
    /* immutable after spawn (written before the first message is sent to the node) */
    uint32_t id;
    uint32_t lifetime; /* closes itself after this many messages; 0 = never */
    bool passive;      /* a race target: no random closes, timers or spawns */
    /* owner actor only */
    uint32_t handled;
    uint32_t npeers, nchildren;
    nd_actor_t *peers[MAX_PEERS];       /* counted references */
    nd_actor_t *children[MAX_CHILDREN]; /* counted references (from spawn) */
    nd_timer_t timer;
    uint32_t ticks;
    bool closing;
    /* Written by final() on the node's turn; read by discard, which the runtime runs after final
     * on the node's turn or on a pusher that saw the node idle and closed (both ordered after). */
    bool finalised;
    /* any thread, atomic */
    _Atomic int running; /* 1 inside dispatch: two workers running one node would see it set */
} node_t;

typedef struct user_msg {
    nd_msg_t hdr;
    node_t *target; /* the receiver, for the checks */
    uint32_t flags;
    uint32_t arg;
    nd_actor_t *peer;  /* INTRO */
    uint64_t *payload; /* POKE */
} user_msg_t;

/* Counters, all relaxed: they are read after the threads that write them have been joined or
 * after nd_pool_shutdown(), which orders everything before it. */
static _Atomic uint64_t g_spawned, g_finalised, g_budget_left, g_tree_spawned;
static _Atomic uint64_t g_sent[KINDS], g_dispatched[KINDS], g_discarded[KINDS];
static _Atomic uint64_t g_payload_alloc, g_payload_free;
static _Atomic uint64_t g_must_dispatch_sent, g_must_dispatch_seen;
static _Atomic uint64_t g_must_discard_sent, g_must_discard_seen;
static _Atomic uint64_t g_self_close, g_peer_close, g_ref_drop;
static _Atomic uint64_t g_timer_armed, g_timer_cancel, g_ticks, g_ticks_stale, g_ticks_discarded;

static void node_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg);
static void node_final(nd_ctx_t *ctx, nd_actor_t *self);
static void node_discard(nd_ctx_t *ctx, nd_msg_t *msg);

static const nd_actor_type_t node_type = {
    .name = "stress_node",
    .size = sizeof(node_t),
    .dispatch = node_dispatch,
    .final = node_final,
    .discard = node_discard,
};

/* Index of a message kind in the g_sent/g_dispatched/g_discarded arrays. */
static inline unsigned
kind_of(uint32_t id)
{
    return id - MSG_GROW;
}

static inline void
count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Takes one unit of the tree budget. Returns: false when it is used up. */
static bool
budget_take(void)
{
    uint64_t left = atomic_load_explicit(&g_budget_left, memory_order_relaxed);
    while (left != 0)
        if (atomic_compare_exchange_weak_explicit(&g_budget_left, &left, left - 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return true;
    return false;
}

/* Spawns and initialises a node. Returns: it with the spawn reference, which the caller owns. */
static node_t *
node_spawn(nd_ctx_t *ctx, uint32_t lifetime, bool passive)
{
    node_t *n = (node_t *)nd_actor_spawn(ctx, &node_type);
    n->id = (uint32_t)atomic_fetch_add_explicit(&g_spawned, 1, memory_order_relaxed);
    n->lifetime = lifetime;
    n->passive = passive;
    nd_timer_init(&n->timer, &n->base, MSG_TICK);
    return n;
}

static uint32_t
random_lifetime(nd_ctx_t *ctx)
{
    uint64_t r = nd_ctx_rand(ctx);
    return r % 32 == 0 ? 0 : 2 + (uint32_t)((r >> 8) % 14);
}

static user_msg_t *
user_msg(nd_ctx_t *ctx, node_t *to, uint32_t id, uint32_t arg, uint32_t flags)
{
    user_msg_t *m = ND_MSG_NEW(ctx, user_msg_t, id);
    m->target = to;
    m->flags = flags;
    m->arg = arg;
    m->peer = NULL;
    m->payload = NULL;
    return m;
}

/* Every send below goes to an actor the sender holds a reference to (or is). */
static void
send_user(nd_ctx_t *ctx, user_msg_t *m)
{
    count(&g_sent[kind_of(m->hdr.id)]);
    nd_actor_send(ctx, &m->target->base, &m->hdr);
}

static void
send_grow(nd_ctx_t *ctx, node_t *to, uint32_t depth)
{
    send_user(ctx, user_msg(ctx, to, MSG_GROW, depth, 0));
}

/* Sends `to` a new reference to `peer`. */
static void
send_intro(nd_ctx_t *ctx, node_t *to, nd_actor_t *peer)
{
    user_msg_t *m = user_msg(ctx, to, MSG_INTRO, 0, 0);
    nd_actor_ref(peer);
    m->peer = peer;
    send_user(ctx, m);
}

static void
send_poke(nd_ctx_t *ctx, node_t *to, uint32_t hops, uint32_t flags)
{
    user_msg_t *m = user_msg(ctx, to, MSG_POKE, hops, flags);
    m->payload = nd_xmalloc(2 * sizeof(uint64_t));
    m->payload[0] = PAYLOAD_MAGIC;
    m->payload[1] = (uint64_t)(uintptr_t)m;
    count(&g_payload_alloc);
    if (flags & F_MUST_DISPATCH)
        count(&g_must_dispatch_sent);
    if (flags & F_MUST_DISCARD)
        count(&g_must_discard_sent);
    send_user(ctx, m);
}

static void
free_payload(user_msg_t *m)
{
    STRESS_CHECK(m->payload[0] == PAYLOAD_MAGIC && m->payload[1] == (uint64_t)(uintptr_t)m,
                 "poke payload corrupted (consumed twice?)");
    m->payload[0] = 0;
    nd_free(m->payload);
    m->payload = NULL;
    count(&g_payload_free);
}

static nd_actor_t *
random_peer(nd_ctx_t *ctx, node_t *n)
{
    uint32_t k = n->npeers + n->nchildren;
    if (k == 0)
        return NULL;
    uint32_t i = (uint32_t)(nd_ctx_rand(ctx) % k);
    return i < n->npeers ? n->peers[i] : n->children[i - n->npeers];
}

static void
close_self(nd_ctx_t *ctx, node_t *n)
{
    if (n->closing)
        return;
    n->closing = true;
    count(&g_self_close);
    nd_actor_close(ctx, &n->base);
}

static void
arm_timer(nd_ctx_t *ctx, node_t *n, bool periodic)
{
    uint64_t r = nd_ctx_rand(ctx);
    uint64_t delay = (r % 2000) * 1000; /* 0-2 ms */
    nd_timer_start(ctx, &n->timer, delay, periodic ? 1000000 : 0);
    count(&g_timer_armed);
}

/* Spawns one child (budget permitting), adopts its spawn reference and introduces it. */
static node_t *
adopt_child(nd_ctx_t *ctx, node_t *n)
{
    if (n->nchildren == MAX_CHILDREN || !budget_take())
        return NULL;
    node_t *c = node_spawn(ctx, random_lifetime(ctx), false);
    count(&g_tree_spawned);
    n->children[n->nchildren++] = &c->base;
    send_intro(ctx, c, &n->base);
    return c;
}

static void
on_grow(nd_ctx_t *ctx, node_t *n, uint32_t depth)
{
    /* Every node gets a timer, which usually ends it: leaves that receive fewer messages than
     * their lifetime would otherwise stay open, and keep their relatives alive, until shutdown
     * (some still do: a poke may cancel the timer). */
    uint64_t r = nd_ctx_rand(ctx);
    arm_timer(ctx, n, r % 8 == 1);
    if (depth == 0)
        return;
    uint32_t first = n->nchildren;
    uint32_t want = 2 + (uint32_t)((r >> 8) % 3);
    for (uint32_t i = 0; i < want; i++)
        if (adopt_child(ctx, n) == NULL)
            break;
    /* Introduce siblings to each other: each INTRO carries its own reference. */
    for (uint32_t i = first; i < n->nchildren; i++) {
        node_t *c = (node_t *)n->children[i];
        for (uint32_t j = first; j < n->nchildren; j++)
            if (j != i && nd_ctx_rand(ctx) % 3 != 0)
                send_intro(ctx, c, n->children[j]);
        send_grow(ctx, c, depth - 1);
        send_poke(ctx, c, 3, 0);
    }
}

static void
on_intro(nd_ctx_t *ctx, node_t *n, user_msg_t *m)
{
    nd_actor_t *peer = m->peer;
    m->peer = NULL;
    if (peer == &n->base || n->npeers == MAX_PEERS) {
        nd_actor_unref(ctx, peer);
        return;
    }
    n->peers[n->npeers++] = peer;
    send_poke(ctx, (node_t *)peer, 1, 0);
}

static void
on_poke(nd_ctx_t *ctx, node_t *n, user_msg_t *m)
{
    free_payload(m);
    if (n->passive)
        return;
    uint64_t r = nd_ctx_rand(ctx) % 100;
    if (r < 3 && n->npeers > 0) {
        /* Close a peer we still reference: its owner, or itself, may be closing it too. */
        count(&g_peer_close);
        nd_actor_close(ctx, n->peers[nd_ctx_rand(ctx) % n->npeers]);
    } else if (r < 6 && n->npeers > 0) {
        uint32_t i = (uint32_t)(nd_ctx_rand(ctx) % n->npeers);
        nd_actor_t *peer = n->peers[i];
        n->peers[i] = n->peers[--n->npeers];
        count(&g_ref_drop);
        nd_actor_unref(ctx, peer);
    } else if (r < 9 && n->nchildren > 0) {
        /* Let a child go: it lives on while it is open or others reference it. */
        uint32_t i = (uint32_t)(nd_ctx_rand(ctx) % n->nchildren);
        nd_actor_t *child = n->children[i];
        n->children[i] = n->children[--n->nchildren];
        count(&g_ref_drop);
        nd_actor_unref(ctx, child);
    } else if (r < 12) {
        close_self(ctx, n);
    } else if (r < 17) {
        arm_timer(ctx, n, r == 16);
    } else if (r < 20) {
        count(&g_timer_cancel);
        nd_timer_cancel(ctx, &n->timer);
    } else if (r < 22) {
        node_t *c = adopt_child(ctx, n);
        if (c != NULL) {
            if (n->npeers > 0)
                send_intro(ctx, c, n->peers[nd_ctx_rand(ctx) % n->npeers]);
            send_grow(ctx, c, 0);
        }
    }
    if (m->arg > 0) {
        nd_actor_t *to = random_peer(ctx, n);
        if (to != NULL)
            send_poke(ctx, (node_t *)to, m->arg - 1, 0);
    }
}

static void
on_tick(nd_ctx_t *ctx, node_t *n, nd_msg_t *msg)
{
    if (!nd_timer_fired(&n->timer, msg)) {
        count(&g_ticks_stale);
        return;
    }
    count(&g_ticks);
    n->ticks++;
    if (n->timer.period_ns != 0) {
        /* Periodic: a few ticks, then stop, and sometimes close (final cancels it anyway). */
        if (n->ticks % 5 == 0) {
            count(&g_timer_cancel);
            nd_timer_cancel(ctx, &n->timer);
            if (nd_ctx_rand(ctx) % 2 == 0)
                close_self(ctx, n);
        }
        return;
    }
    /* One-shot: usually close; otherwise poke someone and try again later. */
    uint64_t r = nd_ctx_rand(ctx) % 10;
    if (r < 6) {
        close_self(ctx, n);
    } else {
        nd_actor_t *to = random_peer(ctx, n);
        if (to != NULL)
            send_poke(ctx, (node_t *)to, 2, 0);
        arm_timer(ctx, n, false);
    }
}

static void
node_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    node_t *n = (node_t *)self;
    /* acq_rel: pairs with the release store at the end of the previous dispatch. */
    STRESS_CHECK(atomic_exchange_explicit(&n->running, 1, memory_order_acq_rel) == 0,
                 "node %u dispatched on two workers at once", n->id);
    STRESS_CHECK(!n->finalised, "node %u: message %u dispatched after final", n->id, msg->id);
    n->handled++;
    if (msg->id == MSG_TICK) {
        on_tick(ctx, n, msg);
    } else {
        user_msg_t *m = (user_msg_t *)msg;
        STRESS_CHECK(m->target == n, "node %u got a message meant for node %u", n->id,
                     m->target->id);
        STRESS_CHECK(!(m->flags & F_MUST_DISCARD),
                     "node %u: message sent after it was seen closed was dispatched", n->id);
        if (m->flags & F_MUST_DISPATCH)
            count(&g_must_dispatch_seen);
        switch (msg->id) {
        case MSG_GROW:
            on_grow(ctx, n, m->arg);
            break;
        case MSG_INTRO:
            on_intro(ctx, n, m);
            break;
        case MSG_POKE:
            on_poke(ctx, n, m);
            break;
        default:
            stress_fail("node %u: unknown message %u", n->id, msg->id);
        }
        /* Counted only now, after the messages it sent were counted: see in_flight(). */
        count(&g_dispatched[kind_of(msg->id)]);
    }
    if (n->lifetime != 0 && n->handled >= n->lifetime)
        close_self(ctx, n);
    /* release: pairs with the acq_rel exchange of the next dispatch. */
    atomic_store_explicit(&n->running, 0, memory_order_release);
}

static void
node_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    node_t *n = (node_t *)self;
    STRESS_CHECK(atomic_load_explicit(&n->running, memory_order_relaxed) == 0,
                 "node %u finalised during a dispatch", n->id);
    STRESS_CHECK(!n->finalised, "node %u finalised twice", n->id);
    n->finalised = true;
    nd_timer_cancel(ctx, &n->timer);
    for (uint32_t i = 0; i < n->npeers; i++)
        nd_actor_unref(ctx, n->peers[i]);
    for (uint32_t i = 0; i < n->nchildren; i++)
        nd_actor_unref(ctx, n->children[i]);
    n->npeers = n->nchildren = 0;
    count(&g_finalised);
}

static void
node_discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    if (msg->id == MSG_TICK) {
        count(&g_ticks_discarded);
        return;
    }
    user_msg_t *m = (user_msg_t *)msg;
    STRESS_CHECK(m->target->finalised, "node %u: message %u discarded before final", m->target->id,
                 msg->id);
    STRESS_CHECK(!(m->flags & F_MUST_DISPATCH),
                 "node %u: message sent before close by the closer was discarded", m->target->id);
    if (m->flags & F_MUST_DISCARD)
        count(&g_must_discard_seen);
    count(&g_discarded[kind_of(msg->id)]);
    if (msg->id == MSG_POKE)
        free_payload(m);
    else if (msg->id == MSG_INTRO)
        nd_actor_unref(ctx, m->peer); /* the reference the message carried */
}

/* ---- the planter ---- */

/* The planter spawns the roots on a worker, so that new trees start on that worker's run queue
 * and the other workers have to steal them. It keeps the last ROOT_RING roots and closes half of
 * those it lets go (the others close themselves, are closed by peers, or at shutdown). */
typedef struct planter {
    nd_actor_t base;
    /* owner actor only */
    node_t *ring[ROOT_RING]; /* counted references */
    uint64_t roots;
} planter_t;

#define MSG_PLANT   ND_MSG_USER_BASE
#define PLANT_BATCH 8

static _Atomic uint64_t g_roots, g_plants_done;
static _Atomic int g_planted_all;

static void
planter_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    planter_t *p = (planter_t *)self;
    STRESS_CHECK(msg->id == MSG_PLANT, "planter: unexpected message %u", msg->id);
    for (int i = 0; i < PLANT_BATCH; i++) {
        if (!budget_take()) {
            /* release: pairs with the acquire load in main. */
            atomic_store_explicit(&g_planted_all, 1, memory_order_release);
            break;
        }
        node_t *root = node_spawn(ctx, random_lifetime(ctx), false);
        count(&g_tree_spawned);
        count(&g_roots);
        send_grow(ctx, root, 3);
        send_poke(ctx, root, 6, 0);
        node_t **slot = &p->ring[p->roots++ % ROOT_RING];
        if (*slot != NULL) {
            if (nd_ctx_rand(ctx) % 2 == 0)
                nd_actor_close(ctx, &(*slot)->base);
            nd_actor_unref(ctx, &(*slot)->base);
        }
        *slot = root;
    }
    count(&g_plants_done);
}

static void
planter_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    planter_t *p = (planter_t *)self;
    for (int i = 0; i < ROOT_RING; i++)
        if (p->ring[i] != NULL)
            nd_actor_unref(ctx, &p->ring[i]->base);
}

static const nd_actor_type_t planter_type = {
    .name = "stress_planter",
    .size = sizeof(planter_t),
    .dispatch = planter_dispatch,
    .final = planter_final,
};

/* ---- close races ---- */

typedef struct race {
    nd_pool_t *pool;
    uint32_t rounds, pokes;
    pthread_barrier_t start, end;
    node_t *target; /* written by the coordinator before `start`, read after it */
} race_t;

typedef struct sender {
    race_t *race;
    uint32_t id;
    pthread_t thread;
} sender_t;

static void
pause_randomly(nd_ctx_t *ctx)
{
    uint64_t r = nd_ctx_rand(ctx);
    if (r % 64 == 0)
        stress_sleep_us((unsigned)(r >> 40) % 100);
    else if (r % 8 == 0)
        sched_yield();
}

static void *
sender_main(void *arg)
{
    sender_t *s = arg;
    race_t *race = s->race;
    nd_ctx_t *ctx = nd_ctx_external_new(race->pool);
    for (uint32_t round = 0; round < race->rounds; round++) {
        pthread_barrier_wait(&race->start);
        node_t *t = race->target; /* the coordinator took one reference for us */
        uint32_t close_at = (uint32_t)(nd_ctx_rand(ctx) % (race->pokes + 1));
        for (uint32_t i = 0; i < race->pokes; i++) {
            if (s->id == 0 && i == close_at)
                nd_actor_close(ctx, &t->base);
            uint32_t flags = s->id == 0 && i < close_at ? F_MUST_DISPATCH : 0;
            send_poke(ctx, t, 0, flags);
            pause_randomly(ctx);
        }
        if (s->id == 0) {
            if (close_at == race->pokes)
                nd_actor_close(ctx, &t->base);
            /* Wait for the close to take effect, then everything we send must be discarded. */
            double since = stress_now_s();
            while (!nd_actor_closed(&t->base)) {
                sched_yield();
                if (stress_now_s() - since > stress_stall_limit_s())
                    stress_fail("race: the target never processed its close");
            }
            for (int i = 0; i < 4; i++)
                send_poke(ctx, t, 0, F_MUST_DISCARD);
        }
        nd_actor_unref(ctx, &t->base);
        pthread_barrier_wait(&race->end);
    }
    nd_ctx_external_free(ctx);
    return NULL;
}

static void *
coordinator_main(void *arg)
{
    race_t *race = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(race->pool);
    for (uint32_t round = 0; round < race->rounds; round++) {
        node_t *t = node_spawn(ctx, 0, true);
        for (int i = 0; i < SENDERS; i++)
            nd_actor_ref(&t->base);
        race->target = t;
        pthread_barrier_wait(&race->start);
        pthread_barrier_wait(&race->end);
        nd_actor_unref(ctx, &t->base);
    }
    nd_ctx_external_free(ctx);
    return NULL;
}

/* ---- main ---- */

static uint64_t
load(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static uint64_t
consumed(void)
{
    uint64_t n = 0;
    for (int k = 0; k < KINDS; k++)
        n += load(&g_dispatched[k]) + load(&g_discarded[k]);
    return n;
}

/* Messages sent and not yet consumed. A message counts as consumed only after its handler has
 * counted what it sent, and consumed is read before sent, so a zero here means that at the
 * moment consumed was read nothing was queued or being handled (timer ticks aside). */
static uint64_t
in_flight(void)
{
    uint64_t c = consumed();
    uint64_t n = 0;
    for (int k = 0; k < KINDS; k++)
        n += load(&g_sent[k]);
    return n - c;
}

/* Waits until at most `limit` messages are in flight and `plants` PLANTs have been handled.
 * This is flow control, not timing: the main thread must not outrun the workers. */
static void
wait_below(uint64_t limit, uint64_t plants)
{
    double stall = stress_stall_limit_s();
    uint64_t last = consumed() + load(&g_plants_done);
    double since = stress_now_s();
    while (in_flight() > limit || load(&g_plants_done) < plants) {
        stress_sleep_us(200);
        uint64_t c = consumed() + load(&g_plants_done);
        if (c != last) {
            last = c;
            since = stress_now_s();
        } else if (stress_now_s() - since > stall) {
            stress_fail("churn: %llu messages in flight and no progress for %.0f s",
                        (unsigned long long)in_flight(), stall);
        }
    }
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    double t0 = stress_now_s();
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t budget = stress_scaled(160000, f);
    atomic_store(&g_budget_left, budget);

    nd_pool_t *pool = nd_pool_new(WORKERS);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);

    race_t race = {.pool = pool, .rounds = (uint32_t)stress_scaled(300, f), .pokes = 40};
    pthread_barrier_init(&race.start, NULL, SENDERS + 1);
    pthread_barrier_init(&race.end, NULL, SENDERS + 1);
    sender_t senders[SENDERS];
    pthread_t coordinator;
    pthread_create(&coordinator, NULL, coordinator_main, &race);
    for (uint32_t i = 0; i < SENDERS; i++) {
        senders[i] = (sender_t){.race = &race, .id = i};
        pthread_create(&senders[i].thread, NULL, sender_main, &senders[i]);
    }

    planter_t *planter = (planter_t *)nd_actor_spawn(ctx, &planter_type);
    uint64_t plants = 0;
    /* acquire: pairs with the planter's release store. */
    while (!atomic_load_explicit(&g_planted_all, memory_order_acquire)) {
        wait_below(IN_FLIGHT_MAX, plants);
        nd_actor_send(ctx, &planter->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_PLANT));
        plants++;
    }
    nd_actor_close(ctx, &planter->base);
    nd_actor_unref(ctx, &planter->base);

    for (uint32_t i = 0; i < SENDERS; i++)
        pthread_join(senders[i].thread, NULL);
    pthread_join(coordinator, NULL);
    pthread_barrier_destroy(&race.start);
    pthread_barrier_destroy(&race.end);

    wait_below(0, plants);
    size_t live_before = nd_pool_live_actors(pool);
    double shutdown_start = stress_now_s();
    nd_pool_shutdown(pool);
    double shutdown_s = stress_now_s() - shutdown_start;
    size_t live_after = nd_pool_live_actors(pool);
    nd_ctx_stats_t st = nd_pool_stats(pool);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);

    printf("churn: %llu actors (%llu roots, %llu tree, %u race targets), %zu not yet freed at "
           "shutdown (which took %.2f s)\n",
           (unsigned long long)load(&g_spawned), (unsigned long long)load(&g_roots),
           (unsigned long long)load(&g_tree_spawned), race.rounds, live_before, shutdown_s);
    printf("  sent grow/intro/poke %llu/%llu/%llu, discarded %llu/%llu/%llu\n",
           (unsigned long long)load(&g_sent[0]), (unsigned long long)load(&g_sent[1]),
           (unsigned long long)load(&g_sent[2]), (unsigned long long)load(&g_discarded[0]),
           (unsigned long long)load(&g_discarded[1]), (unsigned long long)load(&g_discarded[2]));
    printf("  closes self/peer %llu/%llu, ref drops %llu, timers armed %llu cancelled %llu "
           "ticks %llu stale %llu discarded %llu\n",
           (unsigned long long)load(&g_self_close), (unsigned long long)load(&g_peer_close),
           (unsigned long long)load(&g_ref_drop), (unsigned long long)load(&g_timer_armed),
           (unsigned long long)load(&g_timer_cancel), (unsigned long long)load(&g_ticks),
           (unsigned long long)load(&g_ticks_stale), (unsigned long long)load(&g_ticks_discarded));
    printf("  must-dispatch %llu/%llu, must-discard %llu/%llu; %llu turns, %llu steals, %llu "
           "parks\n",
           (unsigned long long)load(&g_must_dispatch_seen),
           (unsigned long long)load(&g_must_dispatch_sent),
           (unsigned long long)load(&g_must_discard_seen),
           (unsigned long long)load(&g_must_discard_sent), (unsigned long long)st.turns,
           (unsigned long long)st.steals, (unsigned long long)st.parks);

    STRESS_CHECK(live_after == 0, "%zu actors live after shutdown", live_after);
    STRESS_CHECK(load(&g_spawned) == load(&g_finalised), "%llu actors spawned, %llu finalised",
                 (unsigned long long)load(&g_spawned), (unsigned long long)load(&g_finalised));
    static const char *const kind_name[KINDS] = {"grow", "intro", "poke"};
    for (int k = 0; k < KINDS; k++)
        STRESS_CHECK(load(&g_sent[k]) == load(&g_dispatched[k]) + load(&g_discarded[k]),
                     "%s: sent %llu != dispatched %llu + discarded %llu", kind_name[k],
                     (unsigned long long)load(&g_sent[k]),
                     (unsigned long long)load(&g_dispatched[k]),
                     (unsigned long long)load(&g_discarded[k]));
    STRESS_CHECK(load(&g_payload_alloc) == load(&g_payload_free), "payloads: %llu made, %llu freed",
                 (unsigned long long)load(&g_payload_alloc),
                 (unsigned long long)load(&g_payload_free));
    STRESS_CHECK(load(&g_must_dispatch_seen) == load(&g_must_dispatch_sent),
                 "messages sent before close: %llu of %llu dispatched",
                 (unsigned long long)load(&g_must_dispatch_seen),
                 (unsigned long long)load(&g_must_dispatch_sent));
    STRESS_CHECK(load(&g_must_discard_seen) == load(&g_must_discard_sent),
                 "messages sent after close: %llu of %llu discarded",
                 (unsigned long long)load(&g_must_discard_seen),
                 (unsigned long long)load(&g_must_discard_sent));
    STRESS_CHECK(load(&g_must_discard_sent) > 0 && load(&g_discarded[kind_of(MSG_POKE)]) > 0,
                 "no message was ever discarded: the close races did not happen");
    printf("stress_actor_churn: OK (%.1f s)\n", stress_now_s() - t0);
    return 0;
}
