/* Server peers: what route, gateway and leaf connections share in turning a remote server's
 * interest (RS+/RS-, LS+/LS-) into subscriptions of their connection. Private to src/net.
 *
 * A peer connection (route.c, gateway.c, leaf.c) keeps each interest line of its peer as one
 * subscription of its own connection actor, keyed in c->subs by a sid built from the line:
 * "<account> <subject>[ <queue>]" on routes and gateways (as nats-server keys them), "<subject>[
 * <queue>]" on leaf connections (one account each). A new subscription is acknowledged by its
 * account (c->sub_acks_due), so a message that follows the interest waits until it is in place.
 *
 * Routes and gateways carry many accounts: the accounts their subscriptions are in are cached
 * per connection (nd_peer_accts_t), each with a reference, so a message or an interest line
 * finds its account without the auth snapshot, and teardown unsubscribes account by account.
 *
 * The other way, routes and gateways write our accounts' interest as RS+/RS- lines: one line a
 * change (the accounts' interest hooks) and, for a new connection, every account's dump, each
 * gathered in an nd_peer_dump_t on the account's turn and written when the account says it is
 * complete.
 *
 * Ctx: the connection's own turn (its owner actor), except the interest lines and dumps (an
 * account's turn) and nd_peer_dump_all (any worker: it only sends).
 */
#ifndef ND_PEER_INT_H
#define ND_PEER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "actors/ctx.h"
#include "net/conn_int.h"
#include "net/parser.h"
#include "subj/interest.h"

/* The accounts a peer connection's subscriptions are in (owner actor only; few per peer). */
typedef struct nd_peer_accts {
    nd_acct_t **v; /* each with a reference */
    size_t n, cap;
} nd_peer_accts_t;

/* The account named by a peer's command: the connection's list first, then srv's auth snapshot
 * (then the list keeps a reference). Returns: borrowed (as long as the list), NULL when no such
 * account exists. */
nd_acct_t *nd_peer_acct(nd_ctx_t *ctx, nd_server_t *srv, nd_peer_accts_t *pa,
                        const nd_proto_slice_t *name);
/* Drops the list's references and frees it (the list is left empty). */
void nd_peer_accts_free(nd_ctx_t *ctx, nd_peer_accts_t *pa);
/* Teardown of a multi-account peer: cancels every subscription of c (which must have been made
 * with conn_data = an account of pa) and unsubscribes them account by account. */
void nd_peer_unsub_all(nd_ctx_t *ctx, nd_conn_t *c, const nd_peer_accts_t *pa);

/* The sid of an interest line (see above): in small when it fits, else allocated. */
#define ND_PEER_SID_SMALL 256
typedef struct nd_peer_sid {
    char *p;
    size_t n;
    char small[ND_PEER_SID_SMALL];
} nd_peer_sid_t;
/* Builds cmd's sid; with_account: the route and gateway form. Finish with nd_peer_sid_fini. */
void nd_peer_sid_init(nd_peer_sid_t *sid, const nd_proto_cmd_t *cmd, bool with_account);
void nd_peer_sid_fini(nd_peer_sid_t *sid);

/* The queue weight an RS+/LS+ carries, clamped to 1..65535. */
uint16_t nd_peer_qweight(const nd_proto_cmd_t *cmd);

/* Makes cmd's subject and queue a new subscription of c under sid in acct (origin, weight,
 * conn_data as given), sent to the account to be acknowledged. Returns: the subscription
 * (borrowed: c->subs holds it). */
nd_sub_t *nd_peer_sub_add(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd,
                          const nd_peer_sid_t *sid, uint8_t origin, uint16_t weight,
                          void *conn_data);
/* Removes c's subscription under sid, if any, from acct (NULL: the account in its conn_data).
 * Returns: whether there was one. */
bool nd_peer_sub_del(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const char *sid, size_t n);

/* The interest line routes and gateways send: "RS+ <account> <subject>[ <queue> <weight>]\r\n",
 * or with weight 0 "RS- <account> <subject>[ <queue>]\r\n". nd_peer_interest_room: the most
 * bytes it takes. nd_peer_format_interest: writes it to out. Returns: its length. */
size_t nd_peer_interest_room(const nd_acct_t *acct, size_t slen, size_t qlen);
size_t nd_peer_format_interest(char *out, const nd_acct_t *acct, const char *subj, size_t slen,
                               const char *queue, size_t qlen, uint32_t weight);

/* One account's interest dump for one new route or gateway connection: its lines gathered until
 * the account says the dump is over. Owns: a reference on c, buf. */
typedef struct nd_peer_dump {
    nd_conn_t *c;
    char *buf;
    size_t len, cap;
} nd_peer_dump_t;
/* Asks every account of the server for its dump with send_dump (nd_interest_send_dump or its
 * gateway twin): fn runs on each account's turn with a new nd_peer_dump_t as its arg. */
void nd_peer_dump_all(nd_ctx_t *ctx, nd_conn_t *c,
                      void (*send_dump)(nd_ctx_t *, nd_acct_t *, nd_interest_fn, void *),
                      nd_interest_fn fn);
/* Appends one interest line (nd_peer_format_interest) to d. */
void nd_peer_dump_add(nd_peer_dump_t *d, const nd_acct_t *acct, const char *subj, size_t slen,
                      const char *queue, size_t qlen, uint32_t weight);
/* Drops d's reference and frees it. */
void nd_peer_dump_free(nd_ctx_t *ctx, nd_peer_dump_t *d);

/* The line "INFO <o as compact JSON>\r\n" (NUL-terminated) that route, gateway and leaf tables
 * send their peers. Owns: o (released). Returns: the line, allocated; *len: its length. */
char *nd_peer_info_line(json_t *o, size_t *len);

/* Traces a command a route or gateway peer sent: "<ip>:<port> - <tag>:<cid> - <<- [...]", tag
 * "rid" or "gid" (A+/A- are a gateway's only). Call when nd_log_enabled(ND_LOG_TRACE). */
void nd_peer_trace(const nd_conn_t *c, const char *tag, const nd_proto_cmd_t *cmd);

#endif
