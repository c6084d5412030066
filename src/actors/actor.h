/* Actors: a struct that begins with nd_actor_t, a static type descriptor, and typed messages.
 *
 * An actor runs on one worker at a time and handles at most ND_ACTOR_BATCH messages per turn,
 * then yields; hitting that limit with messages still queued marks it overloaded. It is destroyed
 * only by itself, on ND_MSG_CLOSE: the runtime runs type->final on the actor's own turn, discards
 * every later message (type->discard releases what they own), and frees the memory once the last
 * reference is dropped.
 *
 * References: nd_actor_spawn returns one reference for the caller. Anyone who keeps a pointer to
 * an actor past the moment its owner might close it holds a reference (nd_actor_ref/unref).
 * Sending needs a live reference (or a pointer otherwise guaranteed alive), never ownership.
 */
#ifndef NATSD_ACTOR_H
#define NATSD_ACTOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/ctx.h"
#include "actors/mbox.h"

#define ND_ACTOR_BATCH 64

/* Runtime message id: ids 0..15 are reserved for the runtime. */
#define ND_MSG_CLOSE     0
#define ND_MSG_USER_BASE 16

typedef struct nd_actor_type {
    const char *name;
    size_t size; /* of the whole actor struct, which begins with nd_actor_t */
    /* Handles one message. Borrows: msg, which the runtime frees after the call. */
    void (*dispatch)(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg);
    /* Optional: releases what self owns; runs once, on the actor's own turn, on ND_MSG_CLOSE. */
    void (*final)(nd_ctx_t *ctx, nd_actor_t *self);
    /* Optional: releases what an undelivered message owns (sent after close). */
    void (*discard)(nd_ctx_t *ctx, nd_msg_t *msg);
    /* Optional: runs after each turn of an open actor (e.g. to flush output gathered by it). */
    void (*turn_end)(nd_ctx_t *ctx, nd_actor_t *self);
} nd_actor_type_t;

/* Actor state bits (nd_actor_t.state). */
#define ND_ACTOR_CLOSED     0x01u
#define ND_ACTOR_OVERLOADED 0x02u

struct nd_actor {
    nd_mbox_t mbox;
    /* immutable after spawn */
    const nd_actor_type_t *type;
    nd_pool_t *pool;
    /* any thread, atomic */
    _Atomic uint32_t refs;
    _Atomic uint32_t state; /* ND_ACTOR_*; written only by the actor's own turn */
    /* owned by whichever run queue holds the actor */
    nd_actor_t *runq_next;
    /* registry of live actors (pool.c), under the shard's lock */
    nd_actor_t *reg_prev, *reg_next;
    uint32_t reg_shard;
    uint32_t spare;
};

/* Allocates a zeroed actor of type->size bytes with an empty mailbox.
 * Ctx: any thread with a ctx. Returns: the actor, holding one reference for the caller. */
nd_actor_t *nd_actor_spawn(nd_ctx_t *ctx, const nd_actor_type_t *type);

/* Hands msg to the actor `to`, scheduling it if it was idle. Sending to a closed actor discards
 * the message. Ctx: any thread with a ctx. Owns: msg passes to the receiver. */
void nd_actor_send(nd_ctx_t *ctx, nd_actor_t *to, nd_msg_t *msg);

/* Sends ND_MSG_CLOSE: the actor finalises on its own turn, after the messages already queued. */
void nd_actor_close(nd_ctx_t *ctx, nd_actor_t *a);

void nd_actor_ref(nd_actor_t *a);
/* Drops a reference; the last one frees the memory of a closed actor. */
void nd_actor_unref(nd_ctx_t *ctx, nd_actor_t *a);

/* True while the actor is behind: its last turn ended at the batch limit. Ctx: any thread. */
static inline bool
nd_actor_overloaded(const nd_actor_t *a)
{
    return (atomic_load_explicit(&a->state, memory_order_relaxed) & ND_ACTOR_OVERLOADED) != 0;
}

static inline bool
nd_actor_closed(const nd_actor_t *a)
{
    return (atomic_load_explicit(&a->state, memory_order_acquire) & ND_ACTOR_CLOSED) != 0;
}

/* Allocates a message of `size` bytes (at least sizeof(nd_msg_t)) with its id set; the body is
 * uninitialised. Ctx: the calling thread's ctx (its free lists are used). */
nd_msg_t *nd_msg_new(nd_ctx_t *ctx, size_t size, uint32_t id);
/* Frees a message from nd_msg_new; embedded messages are left alone. */
void nd_msg_free(nd_ctx_t *ctx, nd_msg_t *msg);

/* Allocates a message struct T (which begins with nd_msg_t hdr). */
#define ND_MSG_NEW(ctx, T, id) ((T *)nd_msg_new((ctx), sizeof(T), (id)))

/* Runs one turn of `a`: at most ND_ACTOR_BATCH messages. Used by the pool's workers.
 * Returns: true when the actor must be put back on a run queue (more messages pending). */
bool nd_actor_run(nd_ctx_t *ctx, nd_actor_t *a);

#endif
