/* Routes: what route.c (the route connection's protocol and the route table), route_dial.c (the
 * dialer that solicits routes) and conn.c share. Private to src/net.
 *
 * A route is a connection actor of kind ND_CONN_ROUTER (conn.c does its I/O, buffers, pings and
 * close) whose parsed commands go to nd_route_handle instead of the client protocol, and whose
 * `route` field holds the state below. The route table (nd_routes_t, one per server) lists the
 * registered routes, one per remote server id; the account actors' interest hook, gossip,
 * connect_urls and /routez read it under its mutex.
 */
#ifndef ND_ROUTE_INT_H
#define ND_ROUTE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cfg/opts.h"
#include "net/conn_int.h"
#include "net/peer_int.h"
#include "net/route.h"
#include "subj/interest.h"

typedef struct nd_route_job nd_route_job_t;

/* One route connection's own state (owner: its connection actor). */
typedef struct nd_route {
    nd_route_job_t *job; /* solicited: the dial job that made us (route_dial.c), else NULL */
    char *url;           /* solicited: the URL we dialed, for /routez and logs */
    bool info_received;  /* the peer's first INFO has been handled */
    bool registered;     /* in the route table */
    bool connect_seen;   /* accepted: the peer's CONNECT has been handled */
    bool unknown_logged; /* an RS+ for an unknown account was logged at error level */
    char host[256];      /* solicited: the host dialed (what its TLS certificate must name) */
    char remote_id[64];
    char *remote_name;
    /* accounts our remote subscriptions are in, each with a reference (few per route) */
    nd_peer_accts_t accts;
} nd_route_t;

/* A registered route (the table's copy of what others need from it). */
typedef struct nd_route_ent {
    nd_conn_t *c;          /* a reference on its actor */
    uint64_t rid;
    char remote_id[64];
    char *remote_name;
    char *ip;              /* the peer's address as seen by us */
    int port;
    bool solicited;
    bool ldm;              /* the peer went into lame duck mode */
    char *url;             /* solicited: the URL dialed */
    char *remote_host;     /* the peer's INFO host and (cluster) port */
    int remote_port;
    char *gossip;          /* the peer's INFO line, "ip" filled in, to forward to others */
    nd_strlist_t connect_urls; /* the peer's client URLs */
    nd_strlist_t leaf_urls;    /* the peer's leafnode URLs (its INFO's leafnode_urls) */
    nd_strlist_t ws_connect_urls; /* the peer's WebSocket URLs (its INFO's ws_connect_urls) */
    int64_t start_wall_ns;
} nd_route_ent_t;

/* The effective cluster settings: the cluster {} block with the command-line flags over it. */
typedef struct nd_route_cfg {
    char *host;
    int port;
    char *user, *pass;
    double auth_timeout_s;
    char *advertise;
    bool no_advertise;
    int connect_retries;
    nd_strlist_t routes;
} nd_route_cfg_t;

struct nd_routes {
    nd_server_t *srv;
    nd_route_cfg_t cfg;
    struct nd_listener *listener;
    struct nd_route_dialer *dialer;
    int port; /* the bound route port */
    /* under mu (taken after the dialer's mutex, never before it) */
    pthread_mutex_t mu;
    char name[128]; /* the cluster name (a dynamic one may change to a peer's) */
    bool dynamic;
    nd_route_ent_t **ents;
    size_t nents, cap;
    char *info_json; /* our route INFO ("INFO {...}" without the closing brace) */
    /* cluster permissions (immutable after start, NULL: none): import = publish (the interest
     * we send, hence what we receive), export = subscribe (the interest we accept) */
    struct nd_permset *perms;
    /* route TLS (cluster tls {}), NULL when off: both sides of the handshake, immutable */
    struct nd_tls_ctx *tls_server, *tls_client;
    _Atomic bool stopping; /* nd_routes_stop ran: the accounts are going away, quietly */
    /* the accounts' interest hook (subj/interest.h), attached to the global account */
    nd_interest_hook_t hook;
};

/* conn_tls.c: a route's TLS handshake (TLS before anything else, as nats-server's routes);
 * nd_route_conn_start runs once it is done. */
void nd_conn_tls_begin_route(nd_ctx_t *ctx, nd_conn_t *c);

/* route.c: the connection side. */
void nd_route_conn_start(nd_ctx_t *ctx, nd_conn_t *c);
bool nd_route_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd);
void nd_route_teardown(nd_ctx_t *ctx, nd_conn_t *c);
void nd_route_fini(nd_ctx_t *ctx, nd_conn_t *c);
/* Spawns the route connection for a connected socket (accepted: job NULL). Owns: fd. */
void nd_route_spawn(nd_ctx_t *ctx, nd_server_t *srv, int fd, nd_route_job_t *job,
                    const char *url);

/* route_dial.c: the dialer thread. */
typedef struct nd_route_dialer nd_route_dialer_t;
nd_route_dialer_t *nd_route_dialer_new(nd_server_t *srv);
/* Adds a URL to solicit: explicit ones are retried forever, implicit ones connect_retries
 * times. Does nothing for a URL already being solicited. */
void nd_route_dial(nd_route_dialer_t *d, const char *url, bool explicit_route);
/* A URL removed from the configuration: its job never dials again. */
void nd_route_dial_remove(nd_route_dialer_t *d, const char *url);
/* The connection a job made has closed: reconnect unless remote_id ("" if never known) is
 * connected another way, is ourselves, or the job was implicit. */
void nd_route_dial_closed(nd_route_dialer_t *d, nd_route_job_t *job, const char *remote_id,
                          bool self);
/* Stops the thread (no dial after it returns); jobs stay until free, since route connections
 * still point at theirs until the pool's shutdown. */
void nd_route_dialer_stop(nd_route_dialer_t *d);
void nd_route_dialer_free(nd_route_dialer_t *d);

/* The credentials of a job's URL, for the CONNECT. */
typedef struct nd_route_job_cred {
    char user[128], pass[128];
} nd_route_job_cred_t;
void nd_route_job_creds(const nd_route_job_t *job, nd_route_job_cred_t *out);
/* The server id at the other end of a job's connection, once its INFO came. */
void nd_route_job_learned(nd_route_dialer_t *d, nd_route_job_t *job, const char *remote_id);
/* Parses a route URL ("nats-route://user:pass@host:port", any scheme, port 6222 when absent).
 * Returns: 0, or -1 when it is not one. */
int nd_route_url_parse(const char *url, char *host, size_t hcap, int *port, char *user,
                       size_t ucap, char *pass, size_t pcap);
int nd_route_url_hostport(const char *url, char *host, size_t hcap, int *port);

/* route.c: an RPROTO message: bytes for the route to write. */
void nd_route_on_proto(nd_conn_t *c, nd_msg_t *msg);

/* route.c: queues protocol bytes for connection c (a route's, or any connection's that writes
 * RPROTO messages as they are: gateways). Ctx: any thread with a ctx. */
void nd_route_send_proto(nd_ctx_t *ctx, nd_conn_t *c, const char *data, size_t len);
/* route.c: queues protocol bytes for every registered route. */
void nd_routes_broadcast(nd_ctx_t *ctx, nd_routes_t *r, const char *data, size_t len);
/* route.c: the route to the server whose id has this gateway hash (gateway replies). Returns:
 * it with a reference, or NULL. Ctx: any thread. */
nd_conn_t *nd_routes_by_gw_hash(nd_routes_t *r, const char *hash, size_t len);

/* route.c: whether a route to server id is registered. Ctx: any thread. */
bool nd_routes_connected(nd_routes_t *r, const char *id);

/* ---- account imports across routes (route_imp.c) ---- */

/* The route hook's `imports` callback (subj/interest.h): counts the shadow interest of acct's
 * stream imports for sub in each exporter. Ctx: acct's turn. */
void nd_route_imp_on_sub(nd_ctx_t *ctx, nd_acct_t *acct, const nd_sub_t *sub, int delta,
                         void *arg);
/* Writes "_R_.<prefix>.>" for acct into out (ND_ACCT_RESP_WC_LEN bytes) when other accounts
 * import services from it. Returns: its length, 0 when none. Ctx: a worker, outside a section. */
size_t nd_route_imp_resp_wildcard(nd_ctx_t *ctx, const nd_acct_t *acct, char *out);

#endif
