/* nd_sub_t: one subscription (SUB <subject> [queue] <sid>) of one connection.
 *
 * A subscription is created by its connection actor, shared with the account's sublist (where
 * publishers on any worker find it inside epoch sections) and freed when the last holder lets go.
 * Holders count references: the creator gets one from nd_sub_new(); nd_acct_send_sub() takes one
 * for the sublist; nd_acct_send_unsub()/nd_acct_send_unsub_all() hand the caller's over. Dropping
 * the last reference does not free at once: readers may still see the sub through a match done
 * before it was unlinked, so the memory is retired through the epoch and freed after the grace
 * period. The free also drops the reference on the subscriber connection that nd_sub_new() took,
 * so a publisher that found a sub inside a section may always use sub->conn in that section.
 *
 * Field groups say who may touch what (see each group). Strings are NUL-terminated copies living
 * in the same allocation as the struct: the subject first (subject[] is the struct's tail), then
 * the sid, then the queue name.
 *
 * Memory. One subscription is one allocation of sizeof(nd_sub_t) (96 bytes) plus its strings,
 * since a server may hold millions. The fields only holders of a reference use (the connection's
 * conn_data, the sublist writer's sl_*) share their memory with the retirement record, which is
 * written only after the last reference is gone: from then on no holder exists, and publishers
 * that still see the sub in their sections read only the fields outside the union.
 */
#ifndef NATSD_SUB_H
#define NATSD_SUB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/actor.h"
#include "actors/epoch.h"

/* Where a subscription comes from (nd_sub_t.origin). Local interest (clients, services) is
 * propagated to routes; a route's interest never is (one hop). A leaf connection's interest is
 * ND_SUB_LEAF when we are its hub (it counts as local for routes, as nats-server's) and
 * ND_SUB_LEAF_HUB on a connection we solicited (the hub's interest: never sent on to routes).
 * ND_SUB_GATEWAY is another cluster's, on our outbound gateway connection to it. */
enum { ND_SUB_LOCAL = 0, ND_SUB_ROUTE = 1, ND_SUB_LEAF = 2, ND_SUB_LEAF_HUB = 3, ND_SUB_GATEWAY = 4 };

/* Returns: whether origin is one of a leaf connection's. */
#define ND_SUB_IS_LEAF(origin) ((origin) == ND_SUB_LEAF || (origin) == ND_SUB_LEAF_HUB)

#define ND_SUB_MAGIC 0x53554221u /* "SUB!" while alive */
#define ND_SUB_DEAD  0xDEADB0B0u /* written just before the memory is freed */

typedef struct nd_sub {
    /* immutable after nd_sub_new; publishers may read these until the memory is freed */
    nd_actor_t *conn;  /* the subscriber; a reference is held until the sub is freed */
    const char *sid;   /* points into the strings after subject[] */
    const char *queue; /* NULL for a plain subscription; else points after the sid */

    /* any thread, atomic */
    _Atomic uint64_t delivered; /* messages handed to the subscriber so far */
    _Atomic uint64_t max_msgs;  /* auto-unsubscribe after this many; 0 = no limit */

    /* immutable after nd_sub_new */
    uint32_t subject_len;
    uint32_t queue_len;
    uint32_t sid_len;
    uint32_t magic; /* ND_SUB_MAGIC; a canary that stress tests check to catch early frees */

    /* any thread, atomic */
    _Atomic uint32_t refs;
    _Atomic bool cancelled; /* unsubscribed: publishers that still find it drop messages */
    /* immutable after nd_sub_new's caller set it, before the sub is sent to its account */
    uint8_t origin; /* ND_SUB_LOCAL, ND_SUB_ROUTE or ND_SUB_LEAF* for a remote server's */
    /* a route's queue subscription: the members it stands for (nats-server's queue weight);
     * written by the route connection, read by publishers (relaxed) */
    _Atomic uint16_t qweight;

    union {
        /* Holders of a reference only, while one exists (the sublist writer works under the
         * reference that the account holds for the sublist). */
        struct {
            void *conn_data;      /* owner connection only */
            const void *sl_owner; /* the sublist writer only: the sublist holding it, or NULL */
            void *sl_set;         /* the sublist writer only: the node or queue group holding it */
            uint32_t sl_index;    /* the sublist writer only: its slot in that vector */
        };
        /* Retirement, written once by the last nd_sub_unref. */
        struct {
            nd_epoch_entry_t retire;
            nd_ctx_t *retire_ctx;
        };
    };

    char subject[]; /* NUL-terminated; the sid and the queue name follow */
} nd_sub_t;

/* Allocates a subscription with copies of the strings (queue may be NULL or empty for a plain
 * subscription) and one reference for the caller. Takes a reference on conn (may be NULL for
 * internal subscriptions). Does not validate: callers check the subject and queue first.
 * Ctx: any thread with a ctx. Returns: the sub, never NULL. */
nd_sub_t *nd_sub_new(nd_ctx_t *ctx, nd_actor_t *conn, const char *subject, size_t subject_len,
                     const char *queue, size_t queue_len, const char *sid, size_t sid_len);

/* Takes one more reference. Ctx: any thread that already holds one. */
void nd_sub_ref(nd_sub_t *sub);

/* Drops one reference; the last one retires the sub through ctx's epoch record. After the grace
 * period the memory is freed and the reference on sub->conn dropped.
 * Ctx: any thread with a ctx (outside or inside an epoch section). */
void nd_sub_unref(nd_ctx_t *ctx, nd_sub_t *sub);

/* Counts one delivery. Ctx: any worker, inside the section that found the sub.
 * Returns: the number of deliveries including this one. With max_msgs = m, deliveries numbered
 * above m must be dropped, and the one numbered exactly m should trigger the unsubscribe. */
static inline uint64_t
nd_sub_count_delivery(nd_sub_t *sub)
{
    return atomic_fetch_add_explicit(&sub->delivered, 1, memory_order_relaxed) + 1;
}

/* Stops deliveries at once, before the account has unlinked the sub (UNSUB is asynchronous, but
 * a PUB that follows it on the same connection must not reach it). Ctx: any thread. */
static inline void
nd_sub_cancel(nd_sub_t *sub)
{
    atomic_store_explicit(&sub->cancelled, true, memory_order_relaxed);
}

static inline bool
nd_sub_cancelled(const nd_sub_t *sub)
{
    return atomic_load_explicit(&sub->cancelled, memory_order_relaxed);
}

/* Returns: true when a delivery numbered n (from nd_sub_count_delivery) may be sent. */
static inline bool
nd_sub_delivery_allowed(const nd_sub_t *sub, uint64_t n)
{
    uint64_t max = atomic_load_explicit(&sub->max_msgs, memory_order_relaxed);
    return max == 0 || n <= max;
}

static inline bool
nd_sub_is_queue(const nd_sub_t *sub)
{
    return sub->queue != NULL;
}

#endif
