/* Leaf nodes: what leaf.c and conn.c share. Private to src/net.
 *
 * A leaf connection is a connection actor of kind ND_CONN_LEAF (conn.c does its I/O, buffers,
 * pings and close) whose parsed commands go to nd_leaf_handle, and whose `leaf` field holds the
 * state below. Its account (c->acct) is the one it is bound to: the remote's `account` when we
 * solicited it, the authorized user's when we accepted it.
 */
#ifndef ND_LEAF_INT_H
#define ND_LEAF_INT_H

#include <stdbool.h>

#include "net/conn_int.h"
#include "net/leaf.h"
#include "net/ws.h"

typedef struct leaf_job leaf_job_t;
struct leaf_watch;

/* One leaf connection's own state (owner: its connection actor). */
typedef struct nd_leaf {
    /* immutable after spawn */
    leaf_job_t *job; /* solicited: the remote's dial job, else NULL */
    /* owner only */
    bool spoke;         /* we are the leaf on this connection (solicited a non-hub remote, or
                         * the peer said is_hub) */
    bool info_received; /* solicited: the hub's first INFO handled */
    bool connect_seen;  /* accepted: the CONNECT handled */
    bool registered;    /* in the leaf table, watching its account */
    bool tls_connect_due;     /* solicited: CONNECT waits for the TLS handshake */
    bool hub_info_on_connect; /* solicited: the hub answers CONNECT with an INFO */
    bool ws;                  /* solicited over ws:// (the upgrade done by the dialer) */
    nd_ws_dial_t wsd;         /* ... and what it negotiated */
    /* Handshake only, owned, freed at registration (an idle hub keeps thousands of leafs, so
     * nothing the handshake alone needs stays with the connection): */
    char *nonce;              /* accepted: the nonce our INFO sent; solicited: the hub's, or NULL */
    char *remote_name;        /* the peer's server name, for the log line at registration */
    nd_permset_t *perms;      /* borrowed (the leaf table keeps it), or NULL: no restriction */
    nd_permset_t *user_perms; /* accepted: the user's own (a reference), or NULL */
    struct leaf_watch *watch; /* while registered */
} nd_leaf_t;

/* leaf.c: the connection side. */
void nd_leaf_conn_start(nd_ctx_t *ctx, nd_conn_t *c);
bool nd_leaf_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd);
void nd_leaf_teardown(nd_ctx_t *ctx, nd_conn_t *c);
void nd_leaf_fini(nd_ctx_t *ctx, nd_conn_t *c);
/* conn_tls.c: the leaf connection's TLS handshake completed. */
void nd_leaf_tls_up(nd_ctx_t *ctx, nd_conn_t *c);

/* Parses a leaf URL ("nats-leaf://user:pass@host:port", any scheme, port 7422 when absent).
 * Returns: 0, or -1 when it is not one. */
int nd_leaf_url_parse(const char *url, char *host, size_t hcap, int *port, char *user,
                      size_t ucap, char *pass, size_t pcap);

/* conn.c: a leaf connection for a connected socket, bound to acct. Owns: fd, lf. */
void nd_conn_spawn_leaf(nd_ctx_t *ctx, nd_server_t *srv, int fd, nd_leaf_t *lf, nd_acct_t *acct);

/* deliver.c: a leaf connection's inbound LMSG/HMSG (cmd as a PUB/HPUB; cmd->queues the queue
 * groups it names), delivered in c's account. */
void nd_deliver_leaf_publish(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd);

#endif
