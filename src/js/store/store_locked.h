/* A store shared by its stream and the stream's consumers: every op of the wrapped store runs
 * under one mutex.
 *
 * A store is single-threaded (store.h). A stream actor owns it and keeps calling its ops as
 * before through the wrapper (`base`), while consumer actors, which read messages, count what is
 * pending and write their own state, take the lock explicitly (nd_store_locked_acquire) and call
 * the inner store directly for a run of ops. As nats-server's consumers read their stream's
 * store under the store's lock, a consumer never waits for its stream's turn, and the stream
 * never waits for a consumer's, beyond one op.
 *
 * The wrapper lives as long as its stream; the inner store may be replaced (a reopen after a
 * write error) or closed (inner NULL: a consumer that acquires it then finds no store). The
 * wrapper's io_errno takes the inner store's after each op, so the owner's error checks work
 * unchanged.
 */
#ifndef NATSD_STORE_LOCKED_H
#define NATSD_STORE_LOCKED_H

#include <pthread.h>

#include "js/store/store.h"

typedef struct nd_store_locked {
    nd_store_t base; /* what the owner calls */
    nd_store_ops_t ops; /* base's: the locked ops, and the inner store's consumer-state ops */
    pthread_mutex_t mu;
    nd_store_t *inner; /* under mu; NULL once closed or destroyed */
    uint64_t gen;      /* under mu: counts the inner stores set (a handle of the inner store,
                        * e.g. a consumer's state, is valid while gen is the same) */
} nd_store_locked_t;

void nd_store_locked_init(nd_store_locked_t *l);
/* Frees the mutex; the inner store must be closed already. */
void nd_store_locked_fini(nd_store_locked_t *l);
/* Wraps inner (ownership passes; a previous inner store is replaced, not closed). Returns:
 * &l->base, for the owner's st->store. */
nd_store_t *nd_store_locked_set(nd_store_locked_t *l, nd_store_t *inner);
/* Locks l. Returns: the inner store (NULL when closed); call nd_store_locked_release after. */
nd_store_t *nd_store_locked_acquire(nd_store_locked_t *l);
void nd_store_locked_release(nd_store_locked_t *l);

#endif
