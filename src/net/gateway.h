/* Gateways: the server's side of a super-cluster (nats-server 2.9's gateway protocol): each
 * server keeps one outbound connection to one server of every other cluster and accepts
 * inbound ones. See gateway.c for the protocol and docs/architecture.md "Gateways".
 *
 * Lifecycle as routes: nd_gateways_new binds the gateway port (before the pool starts);
 * nd_gateways_attach installs the accounts' gateway interest hook; nd_gateways_start accepts and
 * solicits (after the pool runs); nd_gateways_stop closes the listener and stops the dialer
 * (before the pool's shutdown); nd_gateways_free after the pool is gone.
 */
#ifndef ND_GATEWAY_H
#define ND_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/ctx.h"
#include "cfg/opts.h"

struct nd_server;
struct nd_acct;
struct json_t;
typedef struct nd_gateways nd_gateways_t;

/* Returns: whether o configures gateways (a name and a port). */
bool nd_gateways_configured(const nd_opts_t *o);
/* nats-server's start-time checks of the gateway block (validateGatewayOptions and the cluster
 * name rule): a port needs a name, every remote a URL, and a cluster name must be the gateway's.
 * Returns: 0, or -1 with nats-server's text in err. */
int nd_gateways_check(const nd_opts_t *o, char *err, size_t cap);
/* Binds the gateway port. Returns: NULL after logging why. Ctx: the starting thread. */
nd_gateways_t *nd_gateways_new(struct nd_server *s);
/* Makes the global account (and every account made after it) report the cluster's interest to
 * the gateways. Ctx: the starting thread, before the account has subscriptions. */
void nd_gateways_attach(nd_gateways_t *g, struct nd_acct *gacct);
void nd_gateways_start(nd_gateways_t *g);
void nd_gateways_stop(nd_gateways_t *g);
void nd_gateways_free(nd_gateways_t *g);

/* Returns: this server's gateway URL ("host:port"), for the route INFO's gateway_url. */
const char *nd_gateways_url(const nd_gateways_t *g);
/* A route's INFO that names a gateway ("gateway", "gateway_urls", "gateway_cmd":1): another
 * server of our cluster connected to that gateway, so we do too. Ctx: a route's turn. */
void nd_gateways_from_route(nd_gateways_t *g, struct json_t *info);
/* A route peer's gateway URL: it goes into our gateway_urls. Ctx: any thread. */
void nd_gateways_add_url(nd_gateways_t *g, const char *url);

/* Fills o with /varz's "gateway" object. Returns: the number of gateway connections. */
size_t nd_gateways_varz(nd_gateways_t *g, struct json_t *o);
/* One gateway connection (or an outbound one not connected: cid 0) as /gatewayz shows it. */
typedef struct nd_gw_stat {
    char name[128]; /* the remote gateway (cluster) */
    bool outbound, configured;
    uint64_t cid;
    char remote_id[64];
    char ip[48];
    int port;
    int64_t start_wall_ns;
    int64_t last_ns, rtt_ns;
    int64_t pending;
    uint64_t in_msgs, out_msgs, in_bytes, out_bytes;
    uint32_t subs;
    struct json_t *accounts; /* /gatewayz?accs=1's list (owned: json_decref it), or NULL */
} nd_gw_stat_t;

/* Returns: the number of entries, their figures in *out (nd_free it, after each accounts): one per
 * remote gateway we solicit (outbound), then one per inbound connection. Ctx: any thread. */
size_t nd_gateways_stats(nd_gateways_t *g, nd_gw_stat_t **out);
const char *nd_gateways_name(const nd_gateways_t *g);
const char *nd_gateways_host(const nd_gateways_t *g);
int nd_gateways_port(const nd_gateways_t *g);
/* Returns: the number of registered outbound and inbound connections. */
void nd_gateways_count(nd_gateways_t *g, size_t *out, size_t *in);

#endif
