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

/* Returns: the number of registered leaf connections, their figures in *out (nd_free it).
 * Ctx: any thread. */
size_t nd_leafs_stats(nd_leafs_t *l, nd_leaf_stat_t **out);
/* Returns: the number of registered leaf connections. */
size_t nd_leafs_count(nd_leafs_t *l);

#endif
