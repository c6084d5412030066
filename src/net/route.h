/* Routes: the server's side of a cluster (nats-server's route protocol, single route per remote
 * server as 2.9 does, which 2.10+ servers also accept). See route.c for the protocol and
 * docs/architecture.md "Routes" for the picture.
 *
 * Lifecycle: nd_routes_new binds the route port (before the pool starts, so a port in use fails
 * the start); nd_routes_start starts accepting and soliciting (after the pool runs);
 * nd_routes_stop closes the listener and stops the dialer (before the pool's shutdown, which
 * closes the route connections); nd_routes_free after the pool is gone.
 */
#ifndef ND_ROUTE_H
#define ND_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/ctx.h"
#include "cfg/opts.h"

struct nd_server;
typedef struct nd_routes nd_routes_t;

/* Returns: whether o configures clustering (a cluster port by the block or --cluster). */
bool nd_routes_configured(const nd_opts_t *o);

/* Binds the route port and sets up the route table, and installs the accounts' interest hook.
 * Returns: NULL after logging why. Ctx: the starting thread. */
nd_routes_t *nd_routes_new(struct nd_server *s);
/* Makes the server's global account (and so every account made after it) report its interest
 * to the routes. Ctx: the starting thread, before the account has subscriptions. */
struct nd_acct;
void nd_routes_attach(nd_routes_t *r, struct nd_acct *gacct);
/* Logs the cluster lines, starts accepting and solicits the configured routes. Ctx: main, after
 * nd_pool_start. */
void nd_routes_start(nd_routes_t *r);
/* Stops accepting and soliciting; returns once no new route can appear. Ctx: main. */
void nd_routes_stop(nd_routes_t *r);
void nd_routes_free(nd_routes_t *r);

/* Appends the client URLs of every registered route ("host:port" strings) to the jansson array
 * arr, unless no_advertise. Ctx: any thread. */
struct json_t;
void nd_routes_connect_urls(nd_routes_t *r, struct json_t *arr);
/* Appends the leafnode URLs of every route's server (not in lame duck mode) to arr, without
 * duplicates: the hub side's leafnode_urls. */
void nd_routes_leaf_urls(nd_routes_t *r, struct json_t *arr);
/* The WebSocket URLs of every route (ws_connect_urls of their INFO), for the INFO of
 * WebSocket clients; duplicates of what arr holds are left out. */
void nd_routes_ws_connect_urls(nd_routes_t *r, struct json_t *arr);
/* A reload: routes added to the list are solicited, routes removed are closed ("Route
 * Removed") and not solicited again; the other cluster options keep their start values.
 * Ctx: the reloading thread. */
void nd_routes_reload(nd_routes_t *r, const nd_opts_t *o);
/* Lame duck mode: tells every route (an INFO with "ldm":true), so the other members stop
 * offering our client URLs. Ctx: any thread with a ctx. */
void nd_routes_send_ldm(nd_ctx_t *ctx, nd_routes_t *r);
/* Returns: whether the cluster's no_advertise is set. */
bool nd_routes_no_advertise(const nd_routes_t *r);
/* Returns: the cluster name in force (copied into out). */
void nd_routes_name(nd_routes_t *r, char *out, size_t cap);

/* Fills o with /varz's "cluster" object (name, addr, cluster_port, auth_timeout, urls,
 * tls_timeout). Returns: the number of routes. */
size_t nd_routes_varz(nd_routes_t *r, struct json_t *o);

/* One route as /routez shows it. */
typedef struct nd_route_stat {
    uint64_t rid;
    char remote_id[64];
    char remote_name[128];
    bool did_solicit, is_configured;
    char ip[48];
    int port;
    int64_t start_wall_ns;
    int64_t last_ns, rtt_ns; /* as nd_mon_conn_t keeps them */
    int64_t pending;
    uint64_t in_msgs, out_msgs, in_bytes, out_bytes;
    uint32_t subs;
} nd_route_stat_t;

/* Returns: the number of registered routes, their figures in *out (nd_free it). With infos
 * non-NULL, also one connection info per route in *infos (net/connreg.h: an actor reference,
 * for asking the route its subscriptions as /connz asks a client; release with
 * nd_connreg_release_all). */
struct nd_conn_info;
size_t nd_routes_stats(nd_routes_t *r, nd_route_stat_t **out, struct nd_conn_info ***infos);

#endif
