/* nd_ctx_t: the context every function running on a worker takes first.
 *
 * A ctx belongs to exactly one thread. Workers own one each (created by the pool); a non-worker
 * thread (poller, timer, main, a test) that sends messages or reads epoch-protected state makes its
 * own with nd_ctx_external_new(). No thread-locals are used on hot paths: everything per-thread
 * lives here.
 */
#ifndef NATSD_CTX_H
#define NATSD_CTX_H

#include <stdint.h>

#include "actors/msgcache.h"

typedef struct nd_pool nd_pool_t;
typedef struct nd_actor nd_actor_t;
typedef struct ck_epoch_record nd_epoch_rec_t;
struct nd_worker;

typedef struct nd_ctx_stats {
    uint64_t msgs;   /* messages dispatched */
    uint64_t turns;  /* actor turns run */
    uint64_t steals; /* actors stolen from other workers */
    uint64_t parks;  /* times this worker went to sleep */
} nd_ctx_stats_t;

typedef struct nd_ctx {
    nd_pool_t *pool;         /* immutable */
    int worker;              /* immutable: 0..n-1 on a worker, -1 on any other thread */
    struct nd_worker *self;  /* immutable: this worker's run queue; NULL off-worker */
    nd_epoch_rec_t *epoch;   /* immutable: this thread's ck_epoch record */
    nd_actor_t *current;     /* the actor whose turn is running, or NULL */
    uint64_t rng;            /* xorshift state for stealing and queue-group picks */
    nd_msgcache_t msgs;      /* per-thread message free lists */
    nd_ctx_stats_t stats;
} nd_ctx_t;

/* A ctx for a thread that is not a worker. Ctx: the calling thread, which then owns it.
 * Returns: a ctx with its own epoch record; free it on the same thread before nd_pool_free(). */
nd_ctx_t *nd_ctx_external_new(nd_pool_t *pool);
void nd_ctx_external_free(nd_ctx_t *ctx);

/* Cheap per-thread random numbers (xorshift64*), for stealing and queue-group choices. */
static inline uint64_t
nd_ctx_rand(nd_ctx_t *ctx)
{
    uint64_t x = ctx->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ctx->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

#endif
