/* Server peers' handshake: the protocol steps that route and gateway connections take alike.
 * Private to src/net.
 *
 * Both kinds of connection open with the same exchange (nats-server's createRoute and
 * createGateway): the accepting side sends its INFO and waits for CONNECT within the
 * authorization timeout, the soliciting side answers the peer's INFO with a CONNECT that
 * carries the credentials of its URL or block; a refusal is "-ERR '<text>'" and a close. After
 * the handshake both speak the same control commands (PING/PONG, +OK, -ERR), and both receive
 * RMSG/HRMSG lines that name their account. What differs (the INFO and CONNECT fields of each
 * kind, the checks on them, the tables they register in) stays in route.c and gateway.c.
 *
 * tag names the kind in log lines ("rid" or "gid"): every line here starts with
 * "<ip>:<port> - <tag>:<cid> - " as the callers' own lines do.
 *
 * Ctx: the connection's own turn (its owner actor), except nd_peer_info_new and
 * nd_peer_connect_new (any thread: they only build JSON).
 */
#ifndef ND_PEER_PROTO_INT_H
#define ND_PEER_PROTO_INT_H

#include <stdbool.h>

#include <jansson.h>

#include "actors/ctx.h"
#include "net/conn_int.h"
#include "net/parser.h"
#include "net/peer_int.h"

/* Refuses the peer: writes "-ERR '<text>'\r\n" and closes c with reason. */
void nd_peer_fail(nd_ctx_t *ctx, nd_conn_t *c, const char *text, nd_close_reason_t reason);

/* Whether a CONNECT's user and pass (either may be NULL) pass the block's authorization:
 * always when want_user is NULL, else user must match and pass must check against want_pass
 * (plain or bcrypt). */
bool nd_peer_auth_ok(const char *want_user, const char *want_pass, const char *user,
                     const char *pass);

/* Starts c's authorization timer: secs, or dflt when secs is not positive. */
void nd_peer_auth_timer(nd_ctx_t *ctx, nd_conn_t *c, double secs, double dflt);

/* The fields every INFO of ours starts with: server_id, server_name, version, proto, go.
 * Returns: a new object (owned by the caller). */
json_t *nd_peer_info_new(const nd_server_t *s, int proto);

/* A CONNECT's first fields: echo, verbose and pedantic (false), user and pass when not empty,
 * tls_required (user and pass are not NULL). Returns: a new object (owned by the caller), for
 * nd_peer_write_op. */
json_t *nd_peer_connect_new(bool echo, const char *user, const char *pass, bool tls_required);
/* Writes "<op> <o as compact JSON, keys in order>\r\n" to c (op: "CONNECT" or "INFO"). Owns: o
 * (released). */
void nd_peer_write_op(nd_conn_t *c, const char *op, json_t *o);

/* The object of the peer's INFO; when it is not one, logs "Error parsing <kind> INFO" and closes
 * c with a parse error. Returns: the object (owned by the caller), or NULL. */
json_t *nd_peer_info_parse(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd,
                           const char *tag, const char *kind);

/* The start of an RMSG/HRMSG: counts it in, makes *pub the PUB/HPUB it stands for and finds its
 * account (nd_peer_acct in pa). An unknown account is logged at debug level as "Unknown account
 * ... for <what> on subject: ...". Returns: the account (borrowed), or NULL. */
nd_acct_t *nd_peer_rmsg_start(nd_ctx_t *ctx, nd_conn_t *c, nd_peer_accts_t *pa,
                              const nd_proto_cmd_t *cmd, const char *tag, const char *what,
                              nd_proto_cmd_t *pub);

/* The control commands after the handshake, and what is left: PING (PONG), PONG, +OK, -ERR
 * (logged as "<err_what> <text>", then a close) and any other command (unknown: -ERR and a
 * close). Returns: whether c reads on. */
bool nd_peer_handle_ctl(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd, const char *tag,
                        const char *err_what);

#endif
