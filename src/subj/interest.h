/* An account's interest as routes see it (nats-server's Account.rm, updateRouteSubscriptionMap):
 * how many local subscriptions the account has per subject, and per subject and queue group.
 *
 * The account actor, the only writer of its sublist, counts every local subscription it inserts
 * or removes (nd_sub_t.origin ND_SUB_LOCAL; a route's own interest is never counted, so nothing
 * travels more than one hop) and reports the changes a remote server must hear to the interest
 * hook: a plain subject when its count goes 0 -> 1 (weight 1) or 1 -> 0 (weight 0), a queue
 * group on every change (weight = its local members, 0 when none is left). The hook runs on the
 * account's turn, before the subscriber is notified, so an RS+ is queued to every route before
 * the client's next publish can be (client.c pauses until the notify).
 *
 * Nothing is counted in an account without a hook (a server without routes pays nothing).
 */
#ifndef ND_INTEREST_H
#define ND_INTEREST_H

#include <stddef.h>
#include <stdint.h>

#include "subj/account.h"

/* One interest change, or (dump) one entry. queue is NULL for a plain subject. */
typedef void (*nd_interest_fn)(nd_ctx_t *ctx, nd_acct_t *acct, const char *subject, size_t slen,
                               const char *queue, size_t qlen, uint32_t weight, void *arg);

/* A local subscription of acct counted in (delta 1) or out (-1), for the interest it stands for
 * in other accounts (a stream import's subscriber: net/route_imp.c). Runs on acct's turn. */
typedef void (*nd_interest_sub_fn)(nd_ctx_t *ctx, nd_acct_t *acct, const nd_sub_t *sub,
                                   int delta, void *arg);

/* Where an account reports its changes: one per server (the route table), so several servers
 * may run in one process. imports: also told of every counted subscription, or NULL. */
typedef struct nd_interest_hook {
    nd_interest_fn fn;
    void *arg;
    nd_interest_sub_fn imports;
} nd_interest_hook_t;

/* Makes acct report to hook (which must outlive it). Ctx: before acct has any subscription:
 * the server's global account at start; every other account inherits it at creation
 * (nd_interest_inherit). */
void nd_interest_attach(nd_acct_t *acct, const nd_interest_hook_t *hook);
/* A new account reports where the server's global account does. Ctx: before acct is shared. */
void nd_interest_inherit(nd_acct_t *acct, const nd_acct_t *from);

/* Gateways (net/gateway.c) need the cluster's interest: local and routed subscriptions alike
 * (nats-server's gateway pasi map), and a queue group only when its first member comes or its
 * last goes (weight 1 or 0). An account with a gateway hook counts those in a second map and
 * reports them there, the same way. Ctx: as nd_interest_attach. */
void nd_interest_attach_gw(nd_acct_t *acct, const nd_interest_hook_t *hook);
/* As nd_interest_send_dump, for the gateway map. */
void nd_interest_send_dump_gw(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_fn fn, void *arg);

/* Asks acct to call fn for every entry of its interest, then once more with subject NULL (the
 * end), on its turn: a new route learns the account's interest this way. Changes the account
 * made before the dump are in it; changes after it reach the hook. Ctx: any thread. */
void nd_interest_send_dump(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_fn fn, void *arg);

/* Counts, on acct's turn, interest another account holds in acct's subjects (an importer's
 * subscription seen through its stream import) as one local subscription on subject (and queue
 * group queue, qlen 0 for none) coming (delta 1) or going (-1): routes hear it as acct's own
 * (RS+/RS- when the count moves from or to zero, in the dump of a new route), as nats-server's
 * shadow subscriptions. Nothing is counted in an account without a route hook. Ctx: any
 * thread. */
void nd_interest_send_shadow(nd_ctx_t *ctx, nd_acct_t *acct, const char *subject, size_t slen,
                             const char *queue, size_t qlen, int delta);
/* Handles ND_ACCT_MSG_INTEREST_SHADOW (acct NULL: a closed account's discard). */
void nd_interest_on_shadow(nd_ctx_t *ctx, nd_acct_t *acct, nd_msg_t *msg);

/* ---- watchers: every subscription change of one account (leaf connections) ----
 *
 * The route hook above reports aggregate local interest for every account of the server. A leaf
 * connection needs more: each subscription of its bound account (local, routed, or another leaf
 * connection's), so that it can leave out its own and keep counts of its own (nats-server's
 * per-leaf smap). A watcher is attached on the account's turn, is handed every subscription in
 * the sublist at that moment (then on_dump_end), and from then on every insert and remove, all
 * on the account's turn and in order, so nothing is missed or counted twice. */
typedef struct nd_interest_watcher nd_interest_watcher_t;
struct nd_interest_watcher {
    /* a subscription inserted (delta 1; also each one of the initial dump) or removed (-1) */
    void (*on_sub)(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w,
                   const nd_sub_t *sub, int delta);
    /* the initial dump is complete */
    void (*on_dump_end)(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w);
    /* detached (nd_interest_unwatch, or the account closed): the account is done with w */
    void (*on_release)(nd_ctx_t *ctx, nd_interest_watcher_t *w);
    nd_interest_watcher_t *next; /* the account's list (owner: the account actor) */
};
/* Attaches w to acct on its turn (then dumps to it). Ctx: any thread. */
void nd_interest_watch(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w);
/* Detaches w on acct's turn, then calls w->on_release (also when the account closed first:
 * every watched w must be unwatched once). Ctx: any thread. */
void nd_interest_unwatch(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w);

/* ---- used by account.c (the account's own turn) ---- */

/* Counts sub (inserted: +1, removed: -1) when it is local (or a hub-side leaf's) and a hook is
 * installed, and tells the account's watchers. */
void nd_interest_count(nd_ctx_t *ctx, nd_acct_t *acct, const nd_sub_t *sub, int delta);
/* Handles ND_ACCT_MSG_INTEREST_DUMP; acct NULL (a closed account's discard): the end only. */
void nd_interest_on_dump(nd_ctx_t *ctx, nd_acct_t *acct, nd_msg_t *msg);
/* Handles ND_ACCT_MSG_INTEREST_WATCH / _UNWATCH; acct NULL (a closed account's discard): only
 * the release of an unwatch. */
void nd_interest_on_watch(nd_ctx_t *ctx, nd_acct_t *acct, nd_msg_t *msg);
/* Frees the account's interest map and forgets its watchers (each is released by its
 * unwatch). */
void nd_interest_free(nd_acct_t *acct);

#endif
