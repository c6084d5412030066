/* What actor.c needs from the pool: making an actor runnable and the registry of live actors.
 * Private to src/actors. */
#ifndef ND_SCHED_H
#define ND_SCHED_H

#include "actors/actor.h"

/* Puts a runnable actor on a run queue: the current worker's, or the inject queue off-worker.
 * Ctx: any thread with a ctx. */
void nd_sched_push(nd_ctx_t *ctx, nd_actor_t *a);

void nd_sched_register(nd_ctx_t *ctx, nd_actor_t *a);
/* Removes a from the registry; the last live actor wakes a waiting shutdown. */
void nd_sched_unregister(nd_pool_t *pool, nd_actor_t *a);

nd_msgcache_depot_t *nd_sched_depot(nd_pool_t *pool);

#endif
