/* Internal clients (DESIGN.md §6): how the server's own services ($SYS requests now; $JS.API,
 * Raft and the MQTT bridge later) take part in messaging. An internal client is a connection
 * actor of kind SYSTEM (or JETSTREAM) without a socket. It subscribes through its account actor
 * exactly as a socket client does, so a request reaches a service only because the service
 * subscribed: the publish path has no subject special cases, and imports, exports,
 * no-responders and permissions apply to services as to any client.
 *
 * Receiving: a publish that matches one of its subscriptions arrives in its mailbox as one
 * message (no MSG text formatting), holding a reference on the shared payload buffer, and the
 * service's handler runs on the internal client's own turn with an nd_imsg_t: subject, reply,
 * headers, payload and who sent it (account, user, client id, name, and whether and through
 * which service import it came). Replies go out with nd_iclient_publish, through the same delivery
 * path as a client's PUB (mappings, imports, `_R_` response routing).
 *
 * Back-pressure: at most `queue_limit` messages wait in the mailbox; a message that finds it
 * full is refused (counted in nd_iclient_overloaded) and does not count as a responder, so a
 * request that nobody else took gets the `NATS/1.0 503` status at once, as for no responders,
 * instead of waiting behind a queue (nats-server's JetStream drops past `request_queue_limit`).
 *
 * Ready: nd_iclient_start returns after every subscription is in its account's sublist, so no
 * requester sees no-responders right after the server reports that it started.
 */
#ifndef ND_ICLIENT_H
#define ND_ICLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/ctx.h"
#include "net/conn.h"
#include "subj/account.h"

typedef struct nd_iclient nd_iclient_t;

/* Who published a message an internal client receives. Borrowed for the handler's call. */
typedef struct nd_sender {
    nd_acct_t *acct;     /* the publisher's account */
    uint64_t cid;        /* its connection id (0 for the server's own publisher) */
    nd_conn_kind_t kind; /* CLIENT, or SYSTEM for another internal client */
    const char *user;    /* the authenticated user, or "" */
    const char *name;    /* the CONNECT name, or "" */
    const char *lang, *version;
    const char *ip;
    bool imported;       /* it came through a service import of the publisher's account */
    const char *import;  /* that import's subject in the publisher's account, or "" */
} nd_sender_t;

/* One message for a service. Borrowed for the handler's call. */
typedef struct nd_imsg {
    const char *subject, *reply; /* reply: "" when none */
    size_t subject_len, reply_len;
    const char *hdr; /* the "NATS/1.0\r\n..." block, NULL when none */
    size_t hdr_len;
    const char *data;
    size_t data_len;
    const nd_sender_t *from;
    uint32_t tag; /* 0 from the publish path; what nd_iclient_forward said otherwise */
} nd_imsg_t;

/* A service's handler. Ctx: the internal client's turn (a worker, outside epoch sections). */
typedef void (*nd_iclient_fn)(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg);

#define ND_ICLIENT_QUEUE_LIMIT 10000 /* nats-server's JetStream request_queue_limit default */

/* Starts an internal client of kind in acct subscribed to subjects[0..n) (no queue group) and
 * waits until every subscription is in place. name shows in logs; arg goes to fn.
 * Ctx: a thread outside the pool (the server's start; it blocks). Returns: the client, alive
 * until the pool's shutdown closes it (its state lives in its connection's memory). */
nd_iclient_t *nd_iclient_start(nd_server_t *srv, nd_acct_t *acct, nd_conn_kind_t kind,
                               const char *name, const char *const *subjects, size_t n,
                               uint32_t queue_limit, nd_iclient_fn fn, void *arg);

/* What a long-lived service (a JetStream stream, an account's API) hears besides its messages.
 * Every hook runs on the internal client's own turn; arg is the one given to nd_iclient_spawn.
 * on_msg is required, the others optional. */
typedef struct nd_iclient_hooks {
    nd_iclient_fn on_msg;
    /* Every subscription asked for so far (at spawn or by nd_iclient_subscribe) is in place. */
    void (*on_ready)(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg);
    /* After each turn (a batch of up to ND_ACTOR_BATCH messages): e.g. one fsync for the batch
     * before the acknowledgements go out (group commit). What it publishes is flushed. */
    void (*on_turn_end)(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg);
    /* The timer armed with nd_iclient_timer fired. */
    void (*on_timer)(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg);
    /* The last call: the client closed (nd_iclient_stop, or the pool's shutdown). Free arg. */
    void (*on_close)(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg);
} nd_iclient_hooks_t;

/* Spawns an internal client without waiting: its subscriptions go in on its first turn and
 * hooks->on_ready runs once they are all in place. hooks must outlive the client (static).
 * out (may be NULL) receives the client before it can run, so its hooks may read it there.
 * Ctx: any thread with a ctx (a worker: e.g. the JetStream API creating a stream). Returns: the
 * client, alive until nd_iclient_stop or the pool's shutdown; hold a reference
 * (nd_iclient_ref) to send to it past the moment it could stop. */
nd_iclient_t *nd_iclient_spawn(nd_ctx_t *ctx, nd_server_t *srv, nd_acct_t *acct,
                               nd_conn_kind_t kind, const char *name,
                               const char *const *subjects, size_t n, uint32_t queue_limit,
                               const nd_iclient_hooks_t *hooks, void *arg, nd_iclient_t **out);

/* Adds or removes one subscription (the subject is its id: adding one twice is a no-op).
 * on_ready runs again once the added ones are in place. Ctx: the client's own turn. */
void nd_iclient_subscribe(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject);
void nd_iclient_unsubscribe(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject);

/* Closes the client: its subscriptions go, queued messages are dropped, then on_close runs.
 * Ctx: the client's own turn. */
void nd_iclient_stop(nd_ctx_t *ctx, nd_iclient_t *ic);

/* Arms (re-arms) the client's one timer: hooks->on_timer after delay_ns. Ctx: own turn. */
void nd_iclient_timer(nd_ctx_t *ctx, nd_iclient_t *ic, uint64_t delay_ns);

/* Hands a copy of m to another internal client, whose on_msg sees it with m->tag = tag.
 * Ctx: any thread with a ctx. Returns: false when the target's mailbox is at its bound or the
 * target has closed (the message is not sent). */
bool nd_iclient_forward(nd_ctx_t *ctx, nd_iclient_t *to, const nd_imsg_t *m, uint32_t tag);

/* Runs fn(ctx, ic, arg, data) on the client's turn (arg: its spawn arg); data passes to fn,
 * which owns it. When the client has closed, fn runs nowhere and drop(data) frees it instead
 * (drop may be NULL). Ctx: any thread with a ctx. */
typedef void (*nd_iclient_call_fn)(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data);
void nd_iclient_call(nd_ctx_t *ctx, nd_iclient_t *ic, nd_iclient_call_fn fn, void *data,
                     void (*drop)(void *data));

/* References on the client's connection actor. Ctx: any thread (unref: with a ctx). */
void nd_iclient_ref(nd_iclient_t *ic);
void nd_iclient_unref(nd_ctx_t *ctx, nd_iclient_t *ic);

/* The server the client belongs to. */
nd_server_t *nd_iclient_server(const nd_iclient_t *ic);

/* Publishes from the internal client, as a client's PUB/HPUB (hdr NULL: no headers).
 * Ctx: the internal client's turn (inside its handler). */
void nd_iclient_publish(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject, const char *reply,
                        const char *hdr, size_t hdr_len, const char *data, size_t data_len);

/* As nd_iclient_publish, the recipients' MSG lines showing `shown` (shown_len bytes) as the
 * subject: a JetStream consumer delivers to a deliver subject or request inbox under the
 * message's own subject. Returns: how many recipients matched (0: nobody has interest).
 * Ctx: the internal client's turn. */
uint32_t nd_iclient_deliver(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject,
                            const char *shown, size_t shown_len, const char *reply,
                            const char *hdr, size_t hdr_len, const char *data, size_t data_len);

/* Whether any subscription in the client's account matches subject (a literal): e.g. a push
 * consumer's deliver subject or a pull request's inbox. Ctx: a worker, outside epoch sections. */
bool nd_iclient_has_interest(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject);

/* The account the internal client lives in. Ctx: any thread. */
nd_acct_t *nd_iclient_account(const nd_iclient_t *ic);

/* Messages refused because the mailbox was full. Ctx: any thread. */
uint64_t nd_iclient_overloaded(const nd_iclient_t *ic);

#endif
