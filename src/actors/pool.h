/* The worker pool: N worker threads running actors, with work stealing, parking, a timer service
 * and an epoch domain.
 *
 * Scheduling: each worker has a FIFO run queue that only it pushes; actors made runnable on a
 * worker go to that worker's queue; non-worker threads use the global inject queue. An idle worker
 * takes from the inject queue, steals about half of a victim's queue (whole actors), spins a
 * little, then parks. See pool.c for the parking protocol.
 *
 * Lifecycle: nd_pool_new -> nd_pool_start -> ... -> nd_pool_shutdown -> nd_pool_free.
 * Shutdown closes every live actor, waits until all are freed, stops the workers and the timer
 * thread, then runs every pending epoch destructor.
 */
#ifndef NATSD_POOL_H
#define NATSD_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "actors/actor.h"
#include "actors/ctx.h"
#include "actors/epoch.h"
#include "actors/timer.h"

/* workers == 0 means one per online CPU. Ctx: the main thread. */
nd_pool_t *nd_pool_new(unsigned workers);

/* An idle hook: what a worker with nothing to run does instead of parking, e.g. block in epoll
 * (src/net/poller.c). At most one worker is inside poll() at a time. poll(ctx, arg, -1) must
 * return soon after wake(arg) is called from any thread; poll(ctx, arg, 0) must not block (busy
 * workers call it now and then so that the hook's events are not starved). */
typedef struct nd_pool_idle {
    void (*poll)(nd_ctx_t *ctx, void *arg, int timeout_ms);
    void (*wake)(void *arg);
    void *arg;
} nd_pool_idle_t;

/* Installs the idle hook (copied). Ctx: the main thread, before nd_pool_start. */
void nd_pool_set_idle(nd_pool_t *pool, const nd_pool_idle_t *idle);
void nd_pool_start(nd_pool_t *pool);
/* Closes every live actor and waits for them to be freed, then stops all threads.
 * Ctx: the main thread, which must not hold an external ctx that is still in an epoch section. */
void nd_pool_shutdown(nd_pool_t *pool);
void nd_pool_free(nd_pool_t *pool);

unsigned nd_pool_workers(const nd_pool_t *pool);
/* Number of actors spawned and not yet freed. Ctx: any thread (a snapshot). */
size_t nd_pool_live_actors(nd_pool_t *pool);
/* Waits until no actor is live or timeout_ms passes. Returns: true when none is live. */
bool nd_pool_wait_empty(nd_pool_t *pool, unsigned timeout_ms);

nd_timers_t *nd_pool_timers(nd_pool_t *pool);
nd_epoch_t *nd_pool_epoch(nd_pool_t *pool);

/* Sums of every worker's nd_ctx_stats_t (approximate while running). */
nd_ctx_stats_t nd_pool_stats(nd_pool_t *pool);

#endif
