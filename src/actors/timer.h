/* Timers that deliver messages to actors: one-shot, periodic, cancel.
 *
 * A timer is embedded in its owner actor (one per connection is fine: arming and cancelling are
 * O(log n) under one short lock; firing allocates one message). When it fires, the owner receives
 * an nd_timer_msg_t with the id given at init. Cancelling or re-arming makes messages already in
 * flight stale: the handler must start with `if (!nd_timer_fired(t, msg)) return;`. A periodic
 * timer never has more than one message in flight, so a busy actor is not flooded.
 * The owner must cancel its timers in its final() (the runtime then drops stale messages).
 */
#ifndef NATSD_TIMER_H
#define NATSD_TIMER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actors/actor.h"

typedef struct nd_timers nd_timers_t;

typedef struct nd_timer {
    /* immutable after init */
    nd_actor_t *owner;
    uint32_t msg_id;
    /* under the timer service's lock */
    uint32_t heap_index; /* 0 = not armed; else 1-based slot in the heap */
    uint64_t deadline_ns;
    uint64_t period_ns;
    /* any thread, atomic */
    _Atomic uint64_t seq;      /* bumped by start and cancel; messages carry the value they saw */
    _Atomic bool in_flight;    /* a periodic message is queued and not yet consumed */
} nd_timer_t;

typedef struct nd_timer_msg {
    nd_msg_t hdr;
    nd_timer_t *timer;
    uint64_t seq;
} nd_timer_msg_t;

/* Starts the timer service thread for a pool. Ctx: the main thread. */
nd_timers_t *nd_timers_new(nd_pool_t *pool);
/* Stops the thread; armed timers are dropped. */
void nd_timers_free(nd_timers_t *ts);

void nd_timer_init(nd_timer_t *t, nd_actor_t *owner, uint32_t msg_id);
/* Arms (or re-arms) the timer: first message after delay_ns, then every period_ns if non-zero.
 * Ctx: any thread with a ctx, normally the owner's turn. */
void nd_timer_start(nd_ctx_t *ctx, nd_timer_t *t, uint64_t delay_ns, uint64_t period_ns);
/* Disarms the timer; messages already sent become stale. Safe on an unarmed timer. */
void nd_timer_cancel(nd_ctx_t *ctx, nd_timer_t *t);
/* Returns: true when msg is a current firing of t (not cancelled or re-armed since). Ctx: owner. */
bool nd_timer_fired(nd_timer_t *t, const nd_msg_t *msg);
bool nd_timer_armed(nd_ctx_t *ctx, nd_timer_t *t);

/* Monotonic clock in nanoseconds. */
uint64_t nd_now_ns(void);

#endif
