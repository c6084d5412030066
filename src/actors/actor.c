/* Actors: spawn, send, turns, close and reference counting.
 *
 * Lifetime protocol (who may touch an actor when):
 *  - refs counts holders; the actor itself holds one "life" reference from spawn until the first
 *    turn that ends idle after ND_MSG_CLOSE. The memory is freed when refs reaches zero, which
 *    therefore only happens to a closed, idle actor.
 *  - Whoever pushes the message that finds the mailbox idle owns the consumer role. For an open
 *    actor it hands that role to a run queue; for a closed one it drains the mailbox itself
 *    (discarding), so a closed actor is never scheduled again and its life reference is dropped
 *    exactly once. CLOSED is set before the release CAS that marks the mailbox idle, so the pusher
 *    (acquire XCHG) always sees it.
 */
#include "actors/actor.h"

#include "actors/alloc.h"
#include "actors/sched.h"

nd_msg_t *
nd_msg_new(nd_ctx_t *ctx, size_t size, uint32_t id)
{
    uint8_t cls;
    nd_msg_t *m = nd_msgcache_alloc(&ctx->msgs, size < sizeof(nd_msg_t) ? sizeof(nd_msg_t) : size,
                                    &cls);
    m->id = id;
    m->flags = 0;
    m->cls = cls;
    m->spare = 0;
    return m;
}

void
nd_msg_free(nd_ctx_t *ctx, nd_msg_t *msg)
{
    if (!(msg->flags & ND_MSG_F_EMBEDDED))
        nd_msgcache_release(&ctx->msgs, msg, msg->cls);
}

nd_actor_t *
nd_actor_spawn(nd_ctx_t *ctx, const nd_actor_type_t *type)
{
    if (type->size < sizeof(nd_actor_t))
        nd_fatal("actor type %s is smaller than nd_actor_t", type->name);
    nd_actor_t *a = nd_xaligned(type->size);
    nd_mbox_init(&a->mbox);
    a->type = type;
    a->pool = ctx->pool;
    atomic_init(&a->refs, 2); /* life + the caller's */
    atomic_init(&a->state, 0);
    nd_sched_register(ctx, a);
    return a;
}

static void
discard(nd_ctx_t *ctx, nd_actor_t *a, nd_msg_t *m)
{
    if (m->id != ND_MSG_CLOSE && a->type->discard != NULL)
        a->type->discard(ctx, m);
    nd_msg_free(ctx, m);
}

/* The pusher of a closed actor's mailbox drains it in place of a turn. */
static void
drain_closed(nd_ctx_t *ctx, nd_actor_t *a)
{
    do {
        nd_msg_t *m;
        while ((m = nd_mbox_pop_sc(&a->mbox)) != NULL)
            discard(ctx, a, m);
    } while (!nd_mbox_mark_idle_sc(&a->mbox));
}

void
nd_actor_send(nd_ctx_t *ctx, nd_actor_t *to, nd_msg_t *msg)
{
    if (!nd_mbox_push(&to->mbox, msg))
        return;
    if (nd_actor_closed(to))
        drain_closed(ctx, to);
    else
        nd_sched_push(ctx, to);
}

void
nd_actor_close(nd_ctx_t *ctx, nd_actor_t *a)
{
    nd_actor_send(ctx, a, nd_msg_new(ctx, sizeof(nd_msg_t), ND_MSG_CLOSE));
}

void
nd_actor_ref(nd_actor_t *a)
{
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void
nd_actor_unref(nd_ctx_t *ctx, nd_actor_t *a)
{
    (void)ctx;
    /* acq_rel: the release orders our uses before the free; the acquire on the last decrement
     * makes every other holder's uses happen before it. */
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    nd_sched_unregister(a->pool, a);
    nd_free(a);
}

bool
nd_actor_run(nd_ctx_t *ctx, nd_actor_t *a)
{
    uint32_t state = atomic_load_explicit(&a->state, memory_order_relaxed);
    uint32_t n = 0;

    ctx->current = a;
    while (n < ND_ACTOR_BATCH) {
        nd_msg_t *m = nd_mbox_pop_sc(&a->mbox);
        if (m == NULL)
            break;
        n++;
        if (state & ND_ACTOR_CLOSED) {
            discard(ctx, a, m);
        } else if (m->id == ND_MSG_CLOSE) {
            if (a->type->final != NULL)
                a->type->final(ctx, a);
            state |= ND_ACTOR_CLOSED;
            /* release: pairs with the acquire in nd_actor_closed() of other threads. */
            atomic_store_explicit(&a->state, state, memory_order_release);
            nd_msg_free(ctx, m);
        } else {
            a->type->dispatch(ctx, a, m);
            nd_msg_free(ctx, m);
        }
    }
    if (a->type->turn_end != NULL && !(state & ND_ACTOR_CLOSED))
        a->type->turn_end(ctx, a);
    ctx->current = NULL;
    ctx->stats.msgs += n;
    ctx->stats.turns++;

    if (n == ND_ACTOR_BATCH) {
        if (!(state & ND_ACTOR_OVERLOADED))
            atomic_store_explicit(&a->state, state | ND_ACTOR_OVERLOADED, memory_order_relaxed);
        return true;
    }
    if (state & ND_ACTOR_OVERLOADED) {
        state &= ~ND_ACTOR_OVERLOADED;
        atomic_store_explicit(&a->state, state, memory_order_relaxed);
    }
    if (!nd_mbox_mark_idle_sc(&a->mbox))
        return true; /* a message is being pushed: run again soon */
    /* Idle now: a pusher may already be running us elsewhere, unless we are closed. */
    if (state & ND_ACTOR_CLOSED)
        nd_actor_unref(ctx, a);
    return false;
}
