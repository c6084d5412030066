/* Deep comparison of the nested option blocks for config reload (reload.c): a reload decides
 * whether cluster {}, gateway {}, leafnodes {}, websocket {}, mqtt {}, jetstream {} or a tls {}
 * block changed by comparing every field of it, as nats-server's reflect.DeepEqual does, not
 * only whether the block is present.
 */
#ifndef ND_RELOAD_CMP_H
#define ND_RELOAD_CMP_H

#include <stdbool.h>

#include "cfg/opts.h"

/* The blocks that can be compared. */
typedef enum {
    ND_BLOCK_TLS,     /* nd_tls_opts_t */
    ND_BLOCK_CLUSTER, /* nd_cluster_opts_t */
    ND_BLOCK_GATEWAY, /* nd_gateway_opts_t */
    ND_BLOCK_LEAF,    /* nd_leaf_opts_t */
    ND_BLOCK_WS,      /* nd_ws_opts_t */
    ND_BLOCK_MQTT,    /* nd_mqtt_opts_t */
    ND_BLOCK_JS,      /* nd_js_opts_t */
} nd_block_t;

/* True when the blocks a and b (of kind k; either may be NULL, meaning absent) hold the same
 * values in every field. NULL and "" strings are equal, as reload.c's top-level strings are. */
bool nd_block_equal(nd_block_t k, const void *a, const void *b);

/* As nd_block_equal for the cluster block, ignoring its listen host and port (reload.c decides
 * those itself, with nats-server's refusal texts). */
bool nd_cluster_equal_but_listen(const nd_cluster_opts_t *a, const nd_cluster_opts_t *b);

#endif
