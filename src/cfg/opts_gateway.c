/* gateway {} -> nd_gateway_opts_t, with nats-server's checks and texts: one user at most (no
 * users array, no token), and remote gateways [{name, url | urls, tls}].
 * References: nats-server 2.9.10 server/opts.go parseGateway, parseGateways, getTLSConfig.
 */
#include <stdio.h>
#include <string.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

static int
gateway_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
             unsigned *seen)
{
    (void)d, (void)seen;
    nd_gateway_opts_t *g = blk;
    nd_cfg_auth_t au;
    int rc = nd_cfg_single_user_auth(a, e, "Gateway", &au, &g->user, &g->pass, &g->auth_timeout_s);
    nd_cfg_auth_clear(&au);
    return rc;
}

static int
remote_url(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
           unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    if (e->val->type != ND_CFG_STRING)
        return nd_cfg_type_err(a, at, e->val, ND_CFG_STRING);
    char *u = NULL;
    int rc = nd_cfg_url(a, at, "gateway", e->val->u.str.s, &u);
    if (rc == 0)
        nd_strlist_add(&((nd_gateway_remote_t *)blk)->urls, u);
    nd_free(u);
    return rc;
}

static int
remote_urls(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
            unsigned *seen)
{
    (void)d, (void)seen;
    return nd_cfg_urls(a, nd_cfg_at_entry(e), "gateway", e->val,
                       &((nd_gateway_remote_t *)blk)->urls);
}

#define R(...) ND_OPT(nd_gateway_remote_t, __VA_ARGS__)
static const nd_opt_desc_t remote_d[] = {
    R("name", name, ND_OT_STR),
    R("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 0),
    R("urls", urls, ND_OT_STRLIST, .parse = remote_urls),
    R("url", urls, ND_OT_NONE, .parse = remote_url),
    ND_OPT_END,
};
#undef R

const nd_opt_block_t nd_opt_gw_remote_block = {"gateways",
                                               "Expected gateway entry to be a map/struct, got %s",
                                               sizeof(nd_gateway_remote_t),
                                               remote_d,
                                               ND_RL_INHERIT,
                                               NULL};

#define G(...) ND_OPT(nd_gateway_opts_t, __VA_ARGS__)
static const nd_opt_desc_t gateway_d[] = {
    G("name", name, ND_OT_STR),
    G(ND_CFG_LISTENER_KEYS, host, ND_OT_STR, .parse = nd_opt_listener,
      .aux = offsetof(nd_gateway_opts_t, port), .flags = ND_OF_LISTEN),
    G(NULL, port, ND_OT_INT, .flags = ND_OF_LISTEN),
    G("authorization", user, ND_OT_STR, .parse = gateway_auth),
    G(NULL, pass, ND_OT_STR),
    G(NULL, auth_timeout_s, ND_OT_DBL),
    G("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 0),
    G("advertise", advertise, ND_OT_STR),
    G("connect_retries", connect_retries, ND_OT_INT),
    G("gateways", gateways, ND_OT_ARRAY, .sub = &nd_opt_gw_remote_block,
      .count_off = offsetof(nd_gateway_opts_t, ngateways), .parse = nd_opt_array,
      /* nats-server passes the unwrapped value here: no position. */
      .flags = ND_OF_NOPOS, .errfmt = "Expected gateways field to be an array, got %s"),
    G("reject_unknown reject_unknown_cluster", reject_unknown, ND_OT_BOOL),
    ND_OPT_END,
};
#undef G

const nd_opt_block_t nd_opt_gateway_block = {"gateway",
                                             "Expected gateway to be a map, got %s",
                                             sizeof(nd_gateway_opts_t),
                                             gateway_d,
                                             ND_RL_REFUSE,
                                             NULL};

int
nd_cfg_apply_gateway(nd_cfg_apply_t *a, const nd_cfg_entry_t *ge)
{
    return nd_opt_parse_block(a, &nd_opt_gateway_block, ge, (void **)&a->o->gateway);
}
