/* The account actor: owns one account's sublist (as its only writer), its stats, and later its
 * limits, imports and exports.
 *
 * Connections subscribe and unsubscribe by messages (the typed nd_acct_send_* functions below);
 * publishers match against nd_acct_sublist() directly, on their own worker inside an epoch
 * section, so publishing never queues behind the account. A subscription becomes visible to
 * publishers before the account sends the notify message of nd_acct_send_sub(), which lets a
 * connection answer the client's next PING only once its subscriptions are in place.
 *
 * Lifetime: the account is an actor; whoever keeps its pointer holds an actor reference (see
 * natsd/actor.h). Its memory, including the embedded sublist, lives as long as the last
 * reference, so a late reader sees an empty sublist rather than freed memory. On close, final()
 * removes every subscription and drops the references the sublist held.
 */
#ifndef NATSD_ACCOUNT_H
#define NATSD_ACCOUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/actor.h"
#include "actors/alloc.h"
#include "subj/sub.h"
#include "subj/sublist.h"

#define ND_ACCT_NAME_MAX 255

/* Message ids (receiver: the account actor). */
#define ND_ACCT_MSG_SUB       (ND_MSG_USER_BASE + 0)
#define ND_ACCT_MSG_UNSUB     (ND_MSG_USER_BASE + 1)
#define ND_ACCT_MSG_UNSUB_ALL (ND_MSG_USER_BASE + 2)
#define ND_ACCT_MSG_INTEREST_DUMP (ND_MSG_USER_BASE + 3) /* subj/interest.h */
#define ND_ACCT_MSG_INTEREST_WATCH   (ND_MSG_USER_BASE + 4) /* subj/interest.h */
#define ND_ACCT_MSG_INTEREST_UNWATCH (ND_MSG_USER_BASE + 5) /* subj/interest.h */
#define ND_ACCT_MSG_INTEREST_SHADOW  (ND_MSG_USER_BASE + 6) /* subj/interest.h */

typedef struct nd_acct_msg_sub {
    nd_msg_t hdr;
    nd_sub_t *sub;      /* owns: the sublist's reference, taken by nd_acct_send_sub */
    nd_actor_t *notify; /* owns: a reference, or NULL */
    uint32_t notify_id;
} nd_acct_msg_sub_t;

typedef struct nd_acct_msg_unsub {
    nd_msg_t hdr;
    nd_sub_t *sub; /* owns: the sender's reference */
} nd_acct_msg_unsub_t;

typedef struct nd_acct_msg_unsub_all {
    nd_msg_t hdr;
    nd_sub_t **subs; /* owns: the array (nd_xmalloc'ed) and the sender's reference to each */
    size_t n;
} nd_acct_msg_unsub_all_t;

/* Traffic counters, updated by publishers and deliverers on any worker. */
typedef struct nd_acct_stats {
    _Atomic uint64_t msgs_in, bytes_in;   /* published into the account */
    _Atomic uint64_t msgs_out, bytes_out; /* delivered to its subscribers */
} nd_acct_stats_t;

typedef struct nd_acct {
    nd_actor_t actor;
    /* immutable after nd_acct_new */
    char name[ND_ACCT_NAME_MAX + 1];
    uint32_t name_len;
    /* readers: any worker inside an epoch section; writer: this actor only */
    nd_sl_t sl;
    /* owner actor only: reserved for limits, service/stream imports and exports */
    void *limits;
    void *imports;
    void *exports;
    /* owner actor only: local interest counts for routes (subj/interest.c), NULL until used */
    void *rinterest;
    /* immutable before the account has subscriptions: where route interest changes go
     * (subj/interest.h), NULL without routes */
    const struct nd_interest_hook *ihook;
    /* The same for gateways: cluster-wide interest (local and routed subscriptions), counted
     * in ginterest and reported to ghook, NULL without gateways */
    void *ginterest;
    const struct nd_interest_hook *ghook;
    /* owner actor only: every subscription change goes to these (subj/interest.h, leaf
     * connections), NULL when none */
    struct nd_interest_watcher *watchers;
    /* Cross-account routing (src/auth/acct_route.h): mappings and stream importers, or NULL.
     * Writer: the auth slot (release store); readers: publishers inside an epoch section
     * (acquire load). The route belongs to the authorization snapshot that built it. */
    _Atomic(struct nd_acct_route *) route;
    /* any thread, atomic: client connections bound by operator-mode logins, for the account
     * JWT's conn limit (src/net/conn_auth.c) */
    _Atomic int64_t jwt_conns;
    /* any thread, atomic: client connections of the account past their CONNECT, for the
     * system account's connection-count events (src/mon/sysevents.c counts them) */
    _Atomic int64_t conns;
    /* any thread, atomic (its own cache line: every publisher writes it) */
    nd_acct_stats_t stats ND_CACHE_ALIGNED;
} nd_acct_t;

/* Spawns an account actor named name (1..ND_ACCT_NAME_MAX bytes).
 * Ctx: any thread with a ctx. Returns: the account with one reference for the caller, or NULL
 * when the name is empty or too long. */
nd_acct_t *nd_acct_new(nd_ctx_t *ctx, const char *name, size_t len);

/* Inserts sub into the account's sublist, then sends an empty message with id notify_id to
 * notify (when not NULL). Takes a reference on sub (the sublist's) and one on notify for the
 * message; the caller keeps its own. A sub whose subject or queue is invalid, or that is already
 * subscribed, is not inserted (the notify is still sent).
 * Ctx: any thread with a ctx. */
void nd_acct_send_sub(nd_ctx_t *ctx, nd_acct_t *acct, nd_sub_t *sub, nd_actor_t *notify,
                      uint32_t notify_id);

/* Removes sub from the sublist (if there) and drops the sublist's reference and the caller's,
 * which this call takes over: the caller must not touch sub afterwards. Ctx: any thread. */
void nd_acct_send_unsub(nd_ctx_t *ctx, nd_acct_t *acct, nd_sub_t *sub);

/* Same for n subs at once (a closing connection): takes ownership of the array, which must come
 * from nd_xmalloc, and of the caller's reference to each sub. Ctx: any thread. */
void nd_acct_send_unsub_all(nd_ctx_t *ctx, nd_acct_t *acct, nd_sub_t **subs, size_t n);

/* Returns: the sublist publishers match against. Ctx: any thread; use it inside an epoch section
 * while holding a reference on the account. */
static inline nd_sl_t *
nd_acct_sublist(nd_acct_t *acct)
{
    return &acct->sl;
}

static inline const char *
nd_acct_name(const nd_acct_t *acct)
{
    return acct->name;
}

/* Counts traffic. Ctx: any thread. */
static inline void
nd_acct_count_in(nd_acct_t *acct, uint64_t msgs, uint64_t bytes)
{
    atomic_fetch_add_explicit(&acct->stats.msgs_in, msgs, memory_order_relaxed);
    atomic_fetch_add_explicit(&acct->stats.bytes_in, bytes, memory_order_relaxed);
}

static inline void
nd_acct_count_out(nd_acct_t *acct, uint64_t msgs, uint64_t bytes)
{
    atomic_fetch_add_explicit(&acct->stats.msgs_out, msgs, memory_order_relaxed);
    atomic_fetch_add_explicit(&acct->stats.bytes_out, bytes, memory_order_relaxed);
}

#endif
