/* Gateways: what gateway.c (protocol, table, monitoring), gateway_dial.c (the dialer),
 * gateway_reply.c (reply subjects and the reply map), conn.c, conn_tls.c, deliver.c and route.c
 * share. Private to src/net.
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

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/conn_int.h"
#include "net/gateway.h"
#include "net/peer_int.h"
#include "net/tls.h"
#include "subj/interest.h"

/* Replies across gateways: "_GR_.<cluster hash>.<server hash>.<reply>" (6 characters each). */
#define ND_GW_REPLY_PREFIX     "_GR_."
#define ND_GW_REPLY_PREFIX_LEN 5
#define ND_GW_HASH_LEN         6
#define ND_GW_REPLY_PFX_MAX    (ND_GW_REPLY_PREFIX_LEN + 2 * (ND_GW_HASH_LEN + 1))

struct nd_gw_remote;

/* One gateway connection's own state (owner: its connection actor). */
typedef struct nd_gw {
    /* immutable after spawn */
    /* outbound: the remote cluster we dialed (the table's), else NULL */
    struct nd_gw_remote *remote;
    char url[512];  /* outbound: the URL dialed */
    char host[256]; /* outbound: its host (what a TLS certificate must name) */
    /* owner only */
    bool info_received; /* the peer's first INFO has been handled */
    bool connect_seen;  /* inbound: the CONNECT has been handled */
    bool registered;    /* in the gateway table */
    char name[128];     /* the remote gateway (cluster) name */
    char remote_id[64];
    char remote_name[128];
    /* outbound: the remote is not in interest-only mode (a pre-2.9 server): every account
     * holds a catch-all subscription of ours (sid "<account>\t>") until the remote says A- or
     * switches the account to interest-only ("gateway_cmd" 3) */
    bool optimistic;
    /* inbound: the unknown accounts we said A- for */
    nd_strlist_t nosent;
    /* outbound: the accounts the remote's subscriptions are in, each with a reference */
    nd_peer_accts_t accts;
} nd_gw_t;

/* ---- the gateway table (gateway.c; the dialer and the reply map use it too) ---- */

#define ND_GW_RMAP_BUCKETS 4096

/* A remote gateway (cluster) we solicit. Fields under the table's mutex. */
typedef struct nd_gw_remote {
    char *name;
    char hash[ND_GW_HASH_LEN + 1];
    nd_strlist_t urls; /* the configured URLs first (ncfg), then learned "host:port" */
    size_t ncfg;
    bool implicit;
    /* the dialer */
    bool active; /* dialing, or its connection is up */
    bool done;   /* never again (an implicit remote out of retries) */
    int attempts;
    int64_t due_ns;
    size_t next;
    /* TLS toward it (its own tls {}, else the gateway's), NULL: plain; immutable */
    nd_tls_ctx_t *tls;
    /* the registered outbound connection (a reference), or NULL */
    nd_conn_t *out;
    /* /gatewayz?accs=1: the remote's subscriptions on it, per account */
    struct nd_gw_acount {
        char name[260];
        int nsubs, nqsubs;
    } * ac;
    size_t nac, accap;
} nd_gw_remote_t;

/* A registered inbound connection. */
typedef struct nd_gw_in {
    nd_conn_t *c; /* a reference */
    char name[128];
    bool configured;
    /* accounts switched to interest-only on this connection (the start/complete commands
     * went out before their first RS+) */
    char **sw;
    size_t nsw, swcap;
} nd_gw_in_t;

/* A gateway reply shown to a client without its prefix: the client's answer to the plain reply
 * goes back as the prefixed one for a while (nats-server's gwReplyMapping). */
typedef struct nd_gw_rmap {
    struct nd_gw_rmap *bnext; /* its hash bucket */
    struct nd_gw_rmap *fnext; /* the expiry queue (oldest first: every entry has the same TTL) */
    uint64_t hash;
    int64_t exp_ns;
    uint32_t klen, rlen; /* key: "<account> <reply>"; then the prefixed reply */
    char data[];
} nd_gw_rmap_t;

struct nd_gateways {
    nd_server_t *srv;
    const nd_gateway_opts_t *o;
    char name[128];
    char reply_pfx[ND_GW_REPLY_PFX_MAX + 1]; /* "_GR_.<cluster hash>.<server hash>." */
    size_t reply_pfx_len;
    struct nd_listener *listener;
    int port;
    char url[300]; /* our gateway URL, "host:port" */
    nd_interest_hook_t hook;
    /* gateway TLS (gateway { tls {} }), NULL when off: the accepting side, and the dialing side
     * of remotes without their own tls {}; immutable */
    nd_tls_ctx_t *tls_server, *tls_client;
    _Atomic bool stopping;
    /* under mu (never taken before a route table's mutex is released... see below) */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the dialer waits on it */
    nd_gw_remote_t **remotes;
    size_t nremotes, rcap;
    nd_gw_in_t **ins;
    size_t nins, icap;
    nd_strlist_t urls; /* the cluster's gateway URLs (ours first) */
    char *info;        /* our gateway INFO line, with its CRLF */
    pthread_t th;
    bool started, stop, stopped;
    /* the reply map, under rm_mu; rm_count and the bucket's rm_used are read without it first,
     * so a publish takes the lock only when its bucket holds a mapping (relaxed: a stale zero
     * only misses a mapping made at the same instant on another thread, as a late answer
     * would) */
    pthread_mutex_t rm_mu;
    _Atomic uint32_t rm_count;
    _Atomic uint32_t rm_used[ND_GW_RMAP_BUCKETS];
    nd_gw_rmap_t *rm_buckets[ND_GW_RMAP_BUCKETS];
    nd_gw_rmap_t *rm_head, *rm_tail;
};

/* Lock order: the gateway table's mutex may be held while a route table's is taken
 * (nd_routes_broadcast), never the other way round. */

/* Returns: CLOCK_MONOTONIC in nanoseconds. */
int64_t nd_gw_now_ns(void);

/* gateway_dial.c: the dialer thread (started and joined by gateway.c under the table's stop
 * flags): solicits every remote that is not active, not done and due, one at a time. */
void *nd_gw_dialer_main(void *arg);
/* A remote's connection closed: dial again in a second. */
void nd_gw_dial_closed(nd_gateways_t *g, nd_gw_remote_t *r);
/* Spawns the gateway connection for a connected socket (accepted: r NULL). Owns: fd. */
void nd_gw_spawn(nd_ctx_t *ctx, nd_server_t *s, int fd, nd_gw_remote_t *r, const char *url);

/* gateway_reply.c: a gateway reply that reached this cluster on gateway or route connection
 * c: delivered under its original subject, or sent over the route to the server it names. */
void nd_gw_handle_reply(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd);
/* Frees every entry of the reply map. Ctx: nd_gateways_free. */
void nd_gw_rmap_clear(nd_gateways_t *g);

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
