/* Run queues: a bounded per-worker FIFO that its owner pushes and anyone pops (stealing), and
 * the global inject queue for actors made runnable by non-worker threads or overflow.
 * See runq.c for the algorithm. Private to src/actors.
 */
#ifndef ND_RUNQ_H
#define ND_RUNQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actors/actor.h"
#include "actors/alloc.h"

#define ND_RUNQ_SIZE 256u /* power of two */

typedef struct nd_runq {
    _Atomic uint32_t head ND_CACHE_ALIGNED; /* any thread: next slot to take (CAS) */
    _Atomic uint32_t tail ND_CACHE_ALIGNED; /* owner writes, anyone reads */
    _Atomic(nd_actor_t *) slot[ND_RUNQ_SIZE];
} nd_runq_t;

void nd_runq_init(nd_runq_t *q);
/* Appends a. Ctx: the owner. Returns: false when the ring is full (caller uses the inject queue). */
bool nd_runq_push_owner(nd_runq_t *q, nd_actor_t *a);
/* Takes the oldest actor. Ctx: the owner. */
nd_actor_t *nd_runq_pop_owner(nd_runq_t *q);
/* Moves about half of victim's actors into the thief's own (empty) ring and returns one of them
 * to run now, or NULL. Ctx: the thief, owner of `into`. */
nd_actor_t *nd_runq_steal(nd_runq_t *into, nd_runq_t *victim);
/* Number of queued actors (a snapshot). Ctx: any thread. */
uint32_t nd_runq_size(nd_runq_t *q);

typedef struct nd_inject {
    pthread_mutex_t lock;
    nd_actor_t *first, *last; /* under lock, linked through runq_next */
    _Atomic uint32_t count;   /* snapshot for lock-free emptiness checks */
} nd_inject_t;

void nd_inject_init(nd_inject_t *iq);
void nd_inject_destroy(nd_inject_t *iq);
void nd_inject_push(nd_inject_t *iq, nd_actor_t *a);
nd_actor_t *nd_inject_pop(nd_inject_t *iq);

static inline bool
nd_inject_empty(nd_inject_t *iq)
{
    return atomic_load_explicit(&iq->count, memory_order_acquire) == 0;
}

#endif
