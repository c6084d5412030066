/* Leaf nodes: the server's side of leaf node connections (nats-server 2.9's leafnode protocol),
 * as a hub (leafnodes { port } accepts them) and as a leaf (leafnodes { remotes } solicits hubs).
 * See leaf.c for the protocol and docs/architecture.md "Leaf nodes".
 *
 * Lifecycle as routes: nd_leafs_new binds the leaf port (before the pool starts);
 * nd_leafs_start accepts and solicits (after the pool runs); nd_leafs_stop closes the listener
 * and stops the dialer (before the pool's shutdown); nd_leafs_free after the pool is gone.
 */
#ifndef ND_LEAF_H
#define ND_LEAF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/ctx.h"
#include "cfg/opts.h"

struct nd_server;
typedef struct nd_leafs nd_leafs_t;

/* Returns: whether o configures leaf nodes (a leaf port or remotes). */
bool nd_leafs_configured(const nd_opts_t *o);
/* Binds the leaf port when one is configured. Returns: NULL after logging why. Ctx: start. */
nd_leafs_t *nd_leafs_new(struct nd_server *s);
void nd_leafs_start(nd_leafs_t *l);
void nd_leafs_stop(nd_leafs_t *l);
void nd_leafs_free(nd_leafs_t *l);

/* One leaf connection as /leafz shows it. */
typedef struct nd_leaf_stat {
    char account[260];
    char name[128];
    bool is_spoke;
    char ip[48];
    int port;
    int64_t rtt_ns;
    uint64_t in_msgs, out_msgs, in_bytes, out_bytes;
    uint32_t subs;
} nd_leaf_stat_t;

struct nd_conn_info;
/* Returns: the number of registered leaf connections, their figures in *out (nd_free it), and
 * with infos, one connection snapshot each (a reference on its actor) for /leafz?subs=1 to ask
 * for its subscriptions, as /routez does. Ctx: any thread. */
size_t nd_leafs_stats(nd_leafs_t *l, nd_leaf_stat_t **out, struct nd_conn_info ***infos);
struct json_t;
/* Fills /varz's "leaf" block (nats-server's LeafNodeOptsVarz). */
void nd_leafs_varz(nd_leafs_t *l, struct json_t *o);
/* Our leafnode URL as advertised ("host:port": leafnodes { advertise }, else the listener's).
 * gossip: for our cluster's route INFO, where no_advertise leaves it out (our own leafs always
 * get it, as 2.9.10). Returns: false when there is none. Ctx: any thread. */
bool nd_leafs_own_url(const nd_leafs_t *l, bool gossip, char *out, size_t cap);
/* Our cluster's leafnode URLs changed (a route came or went): every leaf we are the hub of gets
 * an INFO with the new leafnode_urls. Ctx: a worker or external ctx. */
void nd_leafs_urls_changed(nd_ctx_t *ctx, nd_leafs_t *l);
/* Returns: the number of registered leaf connections. */
size_t nd_leafs_count(nd_leafs_t *l);

#endif
