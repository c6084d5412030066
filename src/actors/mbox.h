/* Intrusive MPSC mailbox with an idle bit: the queue of messages of one actor.
 *
 * Any thread may push; only the thread running the owning actor pops. push() returns true exactly
 * when the mailbox went from idle to scheduled: the pusher must then put the actor on a run queue.
 * See src/actors/mbox.c for the algorithm, its invariants and references.
 */
#ifndef NATSD_MBOX_H
#define NATSD_MBOX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Every message begins with nd_msg_t. Ids are defined in the receiver's header. */
typedef struct nd_msg nd_msg_t;
struct nd_msg {
    _Atomic(nd_msg_t *) next; /* mailbox link, owned by the mailbox while queued */
    uint32_t id;              /* receiver-defined; ND_MSG_CLOSE is the runtime's */
    uint8_t flags;            /* ND_MSG_F_* */
    uint8_t cls;              /* msgcache size class, set by nd_msg_new */
    uint16_t spare;
};

/* The message is embedded in a longer-lived struct: the runtime never frees it. */
#define ND_MSG_F_EMBEDDED 0x01

typedef struct nd_mbox {
    _Atomic uintptr_t head; /* any thread: the last message pushed; low bit = idle */
    nd_msg_t *tail;         /* consumer only: the next message to pop, or the stub */
    nd_msg_t stub;          /* consumer only (next written by the producer that follows it) */
} nd_mbox_t;

/* Initialises an empty mailbox in the idle state: the first push returns true. */
void nd_mbox_init(nd_mbox_t *mb);

/* Appends msg. Ctx: any thread. Owns: msg passes to the mailbox.
 * Returns: true when the mailbox was idle, so the caller must schedule its actor. */
bool nd_mbox_push(nd_mbox_t *mb, nd_msg_t *msg);

/* Removes the oldest message. Ctx: the consumer only.
 * Returns: the message (ownership passes to the caller) or NULL when none is visible yet. A NULL
 * may be transient: a producer can be between its two steps; nd_mbox_mark_idle_sc() tells. */
nd_msg_t *nd_mbox_pop_sc(nd_mbox_t *mb);

/* Tries to move an empty mailbox to idle. Ctx: the consumer only, after pop returned NULL.
 * Returns: true when it is now idle (the consumer must stop touching the actor: the next push
 * reschedules it elsewhere); false when messages are pending or being pushed (keep running). */
bool nd_mbox_mark_idle_sc(nd_mbox_t *mb);

#endif
