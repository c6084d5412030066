/* Intrusive MPSC mailbox with an idle bit.
 *
 * Algorithm: Dmitry Vyukov's intrusive non-blocking MPSC node-based queue with a stub node
 * (1024cores.net, "Intrusive MPSC node-based queue"), combined with the "empty bit" of Pony's
 * actor message queue (ponyc src/libponyrt/actor/messageq.c): the low bit of `head` says the
 * actor is idle (not on any run queue).
 *
 *   push(n):  n.next = NULL; prev = XCHG(head, n); prev&~1 .next = n; return prev&1
 *   pop():    walk from tail; when only the last node is left, re-push the stub so that the last
 *             node can be handed out (Vyukov). NULL while a producer is between XCHG and link.
 *   idle():   CAS(head, &stub, &stub|1): only succeeds when the queue is empty, i.e. head is the
 *             stub and tail is the stub (the stub is only ever head when everything is consumed).
 *
 * Invariants:
 *  - head is never NULL; it points at the newest node, which is the stub when empty.
 *  - Only the stub can carry the idle bit: marking idle needs head == &stub, and every push
 *    replaces head with an untagged node.
 *  - Exactly one push observes the idle bit per idle period, so exactly one pusher schedules the
 *    actor: an actor is never on two run queues and never lost.
 *  - The consumer touches the actor after a successful mark_idle only if it knows nobody else
 *    can free it (see actor.c).
 *
 * Memory order: the XCHG in push is acq_rel: release publishes n (and everything the pusher wrote
 * into the message) to the consumer, acquire pairs with the release CAS in mark_idle so that a
 * pusher that reschedules the actor sees everything the previous consumer did. The link store
 * prev->next = n is release and pairs with the acquire load of next in pop.
 */
#include "actors/mbox.h"

#include <stddef.h>

#define IDLE_BIT ((uintptr_t)1)

void
nd_mbox_init(nd_mbox_t *mb)
{
    atomic_store_explicit(&mb->stub.next, NULL, memory_order_relaxed);
    mb->stub.id = 0;
    mb->stub.flags = ND_MSG_F_EMBEDDED;
    mb->tail = &mb->stub;
    atomic_store_explicit(&mb->head, (uintptr_t)&mb->stub | IDLE_BIT, memory_order_release);
}

static inline uintptr_t
exchange_head(nd_mbox_t *mb, nd_msg_t *msg)
{
    atomic_store_explicit(&msg->next, NULL, memory_order_relaxed);
    /* acq_rel: release publishes msg; acquire pairs with the release CAS of mark_idle. */
    uintptr_t prev = atomic_exchange_explicit(&mb->head, (uintptr_t)msg, memory_order_acq_rel);
    nd_msg_t *p = (nd_msg_t *)(prev & ~IDLE_BIT);
    /* release: pairs with the acquire load of next in pop. */
    atomic_store_explicit(&p->next, msg, memory_order_release);
    return prev;
}

bool
nd_mbox_push(nd_mbox_t *mb, nd_msg_t *msg)
{
    return (exchange_head(mb, msg) & IDLE_BIT) != 0;
}

nd_msg_t *
nd_mbox_pop_sc(nd_mbox_t *mb)
{
    nd_msg_t *tail = mb->tail;
    /* acquire: pairs with the release link store in push. */
    nd_msg_t *next = atomic_load_explicit(&tail->next, memory_order_acquire);

    if (tail == &mb->stub) {
        if (next == NULL)
            return NULL;
        mb->tail = next;
        tail = next;
        next = atomic_load_explicit(&next->next, memory_order_acquire);
    }
    if (next != NULL) {
        mb->tail = next;
        return tail;
    }
    /* tail is the last linked node. If a producer has already swapped head, it is about to link
     * after tail: report nothing for now rather than wait. */
    uintptr_t head = atomic_load_explicit(&mb->head, memory_order_acquire);
    if ((nd_msg_t *)head != tail)
        return NULL;
    /* Re-push the stub behind tail so that tail can be handed out. The consumer is running, so
     * head carries no idle bit and this push cannot report "became runnable". */
    exchange_head(mb, &mb->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next != NULL) {
        mb->tail = next;
        return tail;
    }
    return NULL;
}

bool
nd_mbox_mark_idle_sc(nd_mbox_t *mb)
{
    if (mb->tail != &mb->stub ||
        atomic_load_explicit(&mb->stub.next, memory_order_acquire) != NULL)
        return false;
    uintptr_t expect = (uintptr_t)&mb->stub;
    /* release: pairs with the acquire of the XCHG of the push that finds the idle bit. */
    return atomic_compare_exchange_strong_explicit(&mb->head, &expect, expect | IDLE_BIT,
                                                   memory_order_acq_rel, memory_order_relaxed);
}
