/* Deep comparison of nested option blocks; see reload_cmp.h.
 *
 * The members compared are those of each block's option table (src/cfg/opts_table.h): a member
 * added to a block is declared once, in its table, and a reload that changes only it is seen.
 */
#include "server/reload_cmp.h"

#include "cfg/opts_table.h"

static const nd_opt_block_t *
table_of(nd_block_t k)
{
    switch (k) {
    case ND_BLOCK_TLS:
        return &nd_opt_tls_block;
    case ND_BLOCK_CLUSTER:
        return &nd_opt_cluster_block;
    case ND_BLOCK_GATEWAY:
        return &nd_opt_gateway_block;
    case ND_BLOCK_LEAF:
        return &nd_opt_leaf_block;
    case ND_BLOCK_WS:
        return &nd_opt_ws_block;
    case ND_BLOCK_MQTT:
        return &nd_opt_mqtt_block;
    case ND_BLOCK_JS:
        return &nd_opt_js_block;
    }
    return &nd_opt_js_block;
}

bool
nd_block_equal(nd_block_t k, const void *a, const void *b)
{
    return nd_opt_equal(table_of(k), a, b, 0);
}

bool
nd_cluster_equal_but_listen(const nd_cluster_opts_t *a, const nd_cluster_opts_t *b)
{
    return nd_opt_equal(&nd_opt_cluster_block, a, b, ND_OF_LISTEN);
}
