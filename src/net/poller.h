/* The poller: turns socket readiness into messages to the owning actor.
 *
 * Who waits in epoll: by default no thread of its own. The pool's idle hook (natsd/pool.h) makes
 * the first worker that runs out of work block in nd_poller_poll() instead of parking, so a
 * readable socket wakes one thread that then runs the connection itself (the scheme of Go's
 * netpoller, which nats-server relies on): one wake-up per hop instead of two (poller thread,
 * then a worker). Busy workers also poll without blocking every so often, so I/O is never
 * starved. With own_thread (NATSD_POLLER_THREAD=1 in the environment, for A/B measurements) a
 * dedicated thread polls instead, as DESIGN.md §1 first described.
 *
 * Sockets are registered edge-triggered for read, write and hang-up. Readiness bits accumulate in
 * nd_io_t.events; only the transition from "nothing pending" sends the embedded message, so an
 * actor gets at most one I/O message in flight however many events arrive. The owner takes the bits
 * with nd_io_take() when it handles that message, and must then read or write until EAGAIN, or call
 * nd_io_again() to continue in a later turn (edge-triggered: no new event comes otherwise).
 *
 * A registration holds a reference on its owner. nd_poller_remove() is asynchronous: the next
 * poll deletes the fd from epoll after its event batch, closes it and drops the reference, so a
 * batch that still names the fd never touches freed memory.
 */
#ifndef ND_POLLER_H
#define ND_POLLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actors/actor.h"
#include "actors/pool.h"

#define ND_IO_READ  0x1u
#define ND_IO_WRITE 0x2u
#define ND_IO_HUP   0x4u

typedef struct nd_poller nd_poller_t;
typedef struct nd_io nd_io_t;

struct nd_io {
    int fd;                  /* immutable while registered */
    nd_actor_t *owner;       /* immutable */
    _Atomic uint32_t events; /* any thread: ND_IO_* not yet taken by the owner */
    nd_msg_t msg;            /* embedded message sent to the owner; never freed by the runtime */
    nd_io_t *next_removal;   /* under the poller's lock */
    _Atomic bool removed;    /* set by the poller thread once the fd is closed */
};

/* Creates the poller; with own_thread a dedicated thread polls, else the caller installs
 * nd_poller_idle() as the pool's idle hook before starting the pool. */
nd_poller_t *nd_poller_new(nd_pool_t *pool, bool own_thread);
/* Applies pending removals and frees the poller. Ctx: after the pool's shutdown. */
void nd_poller_free(nd_poller_t *p);

/* Waits up to timeout_ms (-1: until an event or nd_poller_wake), posts readiness to the owners
 * through ctx, then applies removals. Ctx: one thread at a time. */
void nd_poller_poll(nd_ctx_t *ctx, nd_poller_t *p, int timeout_ms);
/* Makes a blocked nd_poller_poll return. Ctx: any thread. */
void nd_poller_wake(nd_poller_t *p);
/* The pool idle hook that polls this poller (see natsd/pool.h). */
void nd_poller_idle(nd_pool_idle_t *out, nd_poller_t *p);

/* Registers a socket (a connection, or a listener: net/listener.h); msg_id is the id of the I/O message sent to owner.
 * Takes a reference on owner. Returns: 0 or an errno. Ctx: any thread. */
int nd_poller_add(nd_poller_t *p, nd_io_t *io, int fd, nd_actor_t *owner, uint32_t msg_id);
/* Unregisters asynchronously, then closes the fd and drops the owner reference. Ctx: any thread. */
void nd_poller_remove(nd_poller_t *p, nd_io_t *io);

/* Takes the pending readiness bits. Ctx: the owner's turn. */
static inline uint32_t
nd_io_take(nd_io_t *io)
{
    return atomic_exchange_explicit(&io->events, 0, memory_order_acquire);
}

/* Re-posts readiness bits to the owner (to continue reading in a later turn). Ctx: any worker. */
void nd_io_again(nd_ctx_t *ctx, nd_io_t *io, uint32_t events);

#endif
