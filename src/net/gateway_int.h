/* Gateways: what gateway.c, conn.c, deliver.c and route.c share. Private to src/net.
 *
 * A gateway connection is a connection actor of kind ND_CONN_GATEWAY (conn.c does its I/O,
 * buffers, pings and close) whose parsed commands go to nd_gw_handle, and whose `gw` field holds
 * the state below. An outbound connection (we dialed it) carries our messages to the remote
 * cluster and brings back its interest (RS+/RS-), which becomes subscriptions of origin
 * ND_SUB_GATEWAY in the accounts' sublists; an inbound one brings the remote's messages and
 * carries our cluster's interest back.
 */
#ifndef ND_GATEWAY_INT_H
#define ND_GATEWAY_INT_H

#include <stdbool.h>

#include "net/conn_int.h"
#include "net/gateway.h"

struct gw_remote;

/* One gateway connection's own state (owner: its connection actor). */
typedef struct nd_gw {
    /* immutable after spawn */
    struct gw_remote *remote; /* outbound: the remote cluster we dialed (the table's), else NULL */
    char url[512];            /* outbound: the URL dialed */
    char host[256];           /* outbound: its host (what a TLS certificate must name) */
    /* owner only */
    bool info_received; /* the peer's first INFO has been handled */
    bool connect_seen;  /* inbound: the CONNECT has been handled */
    bool registered;    /* in the gateway table */
    char name[128];     /* the remote gateway (cluster) name */
    char remote_id[64];
    char remote_name[128];
    /* outbound: the accounts the remote's subscriptions are in, each with a reference */
    nd_acct_t **accts;
    size_t naccts, acap;
} nd_gw_t;

/* gateway.c: the connection side. */
void nd_gw_conn_start(nd_ctx_t *ctx, nd_conn_t *c);
bool nd_gw_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd);
void nd_gw_teardown(nd_ctx_t *ctx, nd_conn_t *c);
/* A parse error: an inbound connection that has not sent CONNECT yet is refused as nats-server
 * does (an authorization violation). Returns: whether it handled (and closed) c. */
bool nd_gw_parse_error(nd_ctx_t *ctx, nd_conn_t *c);
/* The TLS context c starts with (its handshake comes first, both ways), or NULL for none. */
struct nd_tls_ctx *nd_gw_tls(const nd_conn_t *c);
/* conn_tls.c: a gateway's TLS handshake; nd_gw_conn_start runs once it is done. */
void nd_conn_tls_begin_gateway(nd_ctx_t *ctx, nd_conn_t *c);
void nd_gw_fini(nd_ctx_t *ctx, nd_conn_t *c);

/* Replies across gateways: "_GR_.<cluster hash>.<server hash>.<reply>" (6 characters each). */
#define ND_GW_REPLY_PREFIX     "_GR_."
#define ND_GW_REPLY_PREFIX_LEN 5
#define ND_GW_HASH_LEN         6
#define ND_GW_REPLY_PFX_MAX    (ND_GW_REPLY_PREFIX_LEN + 2 * (ND_GW_HASH_LEN + 1))

/* The gateway hash of name (nats-server's getHashSize: base 62 digits of its SHA-256) into out
 * (ND_GW_HASH_LEN characters and a NUL). */
void nd_gw_hash(const char *name, char out[ND_GW_HASH_LEN + 1]);
/* Returns: whether subj is a gateway reply ("_GR_.c.s.<something>"). */
bool nd_gw_is_reply(const char *subj, size_t len);
/* The prefix for reply (of a message going out on a gateway): ours, or "" when the reply is a
 * gateway reply already. Returns: it, its length in *len. Ctx: any thread. */
const char *nd_gw_reply_prefix(const nd_server_t *s, const char *reply, size_t rlen, size_t *len);
/* The outbound connection to the cluster a gateway reply subject names. Returns: it with a
 * reference, or NULL. Ctx: any thread. */
nd_conn_t *nd_gw_direct_target(nd_ctx_t *ctx, nd_server_t *s, const char *subj, size_t len);
/* A message with gateway reply routed (length len) is delivered in acct to a client, which sees
 * the reply without its prefix: an answer published in acct to that plain reply within 2 s goes
 * back as routed (nd_gw_mapped_reply). Ctx: any thread. */
void nd_gw_track_reply(nd_server_t *s, const nd_acct_t *acct, const char *routed, size_t len);
/* Returns: the gateway reply that subj (published in acct) stands for, NUL-terminated (nd_free
 * it; its length in *out_len), or NULL. Ctx: any thread. */
char *nd_gw_mapped_reply(nd_server_t *s, const nd_acct_t *acct, const char *subj, size_t len,
                         size_t *out_len);
/* route.c: a routed message whose subject is a gateway reply (a server of another cluster
 * answered a request of this one through a gateway that reached a peer of ours). Returns:
 * whether it was one (then it was handled). Ctx: the route's turn. */
bool nd_gw_route_reply(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd);

/* deliver.c: a gateway's inbound RMSG/HMSG (cmd as a PUB/HPUB; cmd->queues the queue groups it
 * names), delivered in acct to local subscribers and routes (never to a gateway). */
void nd_deliver_gateway_publish(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct,
                                const nd_proto_cmd_t *cmd);

#endif
