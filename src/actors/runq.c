/* Run queues.
 *
 * Per-worker ring (the scheme of Go's runtime runq, proc.go runqput/runqget/runqsteal): a ring of
 * ND_RUNQ_SIZE actor pointers with free-running 32-bit head and tail counters. Only the owning
 * worker pushes (stores a slot, then publishes tail with release). Both the owner and thieves
 * take from head by CAS, so every actor is taken exactly once. A thief copies up to half of the
 * victim's entries into its own ring before its CAS on the victim's head; if the CAS fails, the
 * copy is discarded and retried. The owner never overwrites a slot that a consumer may still be
 * reading for a successful CAS: a slot is reused only once head has moved past it, and a consumer
 * that read a stale slot fails its CAS.
 *
 * Invariants: 0 <= tail - head <= ND_RUNQ_SIZE; slots in [head, tail) hold runnable actors that are
 * on no other queue. Slots are atomics (relaxed) only so that the benign reads of stale slots
 * are not data races in C11 terms.
 *
 * Inject queue: a mutex-protected FIFO linked through nd_actor_t.runq_next with an atomic count so
 * that workers can test emptiness without the lock. It is used by non-worker threads (poller,
 * timer, main) and when a worker's ring is full.
 */
#include "actors/runq.h"

#include <stddef.h>

void
nd_runq_init(nd_runq_t *q)
{
    atomic_init(&q->head, 0);
    atomic_init(&q->tail, 0);
    for (uint32_t i = 0; i < ND_RUNQ_SIZE; i++)
        atomic_init(&q->slot[i], NULL);
}

bool
nd_runq_push_owner(nd_runq_t *q, nd_actor_t *a)
{
    /* acquire: pairs with the release CAS of consumers, so the slot we reuse is no longer read. */
    uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (t - h >= ND_RUNQ_SIZE)
        return false;
    atomic_store_explicit(&q->slot[t % ND_RUNQ_SIZE], a, memory_order_relaxed);
    /* release: publishes the slot to consumers (acquire load of tail). */
    atomic_store_explicit(&q->tail, t + 1, memory_order_release);
    return true;
}

nd_actor_t *
nd_runq_pop_owner(nd_runq_t *q)
{
    for (;;) {
        uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
        uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
        if (t == h)
            return NULL;
        nd_actor_t *a = atomic_load_explicit(&q->slot[h % ND_RUNQ_SIZE], memory_order_relaxed);
        /* release: pairs with the acquire load of head in push, ending our read of the slot. */
        if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + 1, memory_order_release,
                                                  memory_order_relaxed))
            return a;
    }
}

nd_actor_t *
nd_runq_steal(nd_runq_t *into, nd_runq_t *victim)
{
    uint32_t t_into = atomic_load_explicit(&into->tail, memory_order_relaxed);
    for (;;) {
        uint32_t h = atomic_load_explicit(&victim->head, memory_order_acquire);
        /* acquire: pairs with the owner's release store of tail, making the slots visible. */
        uint32_t t = atomic_load_explicit(&victim->tail, memory_order_acquire);
        uint32_t n = t - h;
        if (n == 0 || n > ND_RUNQ_SIZE)
            return NULL; /* empty, or an inconsistent snapshot: the caller tries again later */
        n -= n / 2;
        for (uint32_t i = 0; i < n; i++) {
            nd_actor_t *a = atomic_load_explicit(&victim->slot[(h + i) % ND_RUNQ_SIZE],
                                                 memory_order_relaxed);
            atomic_store_explicit(&into->slot[(t_into + i) % ND_RUNQ_SIZE], a,
                                  memory_order_relaxed);
        }
        if (!atomic_compare_exchange_weak_explicit(&victim->head, &h, h + n,
                                                   memory_order_acq_rel, memory_order_relaxed))
            continue;
        /* Run the last one now; publish the others in our own ring. */
        n--;
        nd_actor_t *run = atomic_load_explicit(&into->slot[(t_into + n) % ND_RUNQ_SIZE],
                                               memory_order_relaxed);
        if (n > 0)
            atomic_store_explicit(&into->tail, t_into + n, memory_order_release);
        return run;
    }
}

uint32_t
nd_runq_size(nd_runq_t *q)
{
    uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
    uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
    uint32_t n = t - h;
    return n > ND_RUNQ_SIZE ? 0 : n;
}

void
nd_inject_init(nd_inject_t *iq)
{
    pthread_mutex_init(&iq->lock, NULL);
    iq->first = iq->last = NULL;
    atomic_init(&iq->count, 0);
}

void
nd_inject_destroy(nd_inject_t *iq)
{
    pthread_mutex_destroy(&iq->lock);
}

void
nd_inject_push(nd_inject_t *iq, nd_actor_t *a)
{
    a->runq_next = NULL;
    pthread_mutex_lock(&iq->lock);
    if (iq->last != NULL)
        iq->last->runq_next = a;
    else
        iq->first = a;
    iq->last = a;
    atomic_fetch_add_explicit(&iq->count, 1, memory_order_release);
    pthread_mutex_unlock(&iq->lock);
}

nd_actor_t *
nd_inject_pop(nd_inject_t *iq)
{
    if (nd_inject_empty(iq))
        return NULL;
    pthread_mutex_lock(&iq->lock);
    nd_actor_t *a = iq->first;
    if (a != NULL) {
        iq->first = a->runq_next;
        if (iq->first == NULL)
            iq->last = NULL;
        atomic_fetch_sub_explicit(&iq->count, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&iq->lock);
    return a;
}
