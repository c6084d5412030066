/* gateway {} -> nd_gateway_opts_t, with nats-server's checks and texts: one user at most (no
 * users array, no token), and remote gateways [{name, url | urls, tls}].
 * References: nats-server 2.9.10 server/opts.go parseGateway, parseGateways, getTLSConfig.
 */
#include <stdio.h>
#include <string.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"

static int
gateway_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_gateway_opts_t *g)
{
    nd_cfg_auth_t au;
    int rc = nd_cfg_single_user_auth(a, e, "Gateway", &au, &g->user, &g->pass, &g->auth_timeout_s);
    nd_cfg_auth_clear(&au);
    return rc;
}

static int
remote(nd_cfg_apply_t *a, const nd_cfg_node_t *v, nd_gateway_remote_t *r)
{
    if (v->type != ND_CFG_MAP) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, nd_cfg_at_node(v),
                           "Expected gateway entry to be a map/struct, got %s", val);
    }
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        int rc = 0;
        if (nd_cfg_key_is(e->key, "name")) {
            rc = nd_cfg_str(a, at, e->val, &r->name);
        } else if (nd_cfg_key_is(e->key, "tls")) {
            rc = nd_cfg_tls(a, e, false, &r->tls);
        } else if (nd_cfg_key_is(e->key, "url")) {
            char *u = NULL;
            if (e->val->type != ND_CFG_STRING)
                rc = nd_cfg_type_err(a, at, e->val, ND_CFG_STRING);
            else
                rc = nd_cfg_url(a, at, "gateway", e->val->u.str.s, &u);
            if (rc == 0)
                nd_strlist_add(&r->urls, u);
            nd_free(u);
        } else if (nd_cfg_key_is(e->key, "urls")) {
            rc = nd_cfg_urls(a, at, "gateway", e->val, &r->urls);
        } else {
            rc = nd_cfg_unknown(a, e);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
remotes(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_gateway_opts_t *g)
{
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_ARRAY)
        /* nats-server passes the unwrapped value here: no position. */
        return nd_cfg_fail(a, (nd_cfg_at_t){0}, "Expected gateways field to be an array, got %s",
                           nd_cfg_go_type(v));
    for (size_t i = 0; i < g->ngateways; i++)
        nd_gateway_remote_clear(&g->gateways[i]);
    nd_free(g->gateways);
    g->gateways = v->u.arr.n ? nd_xcalloc(v->u.arr.n, sizeof(*g->gateways)) : NULL;
    g->ngateways = 0;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (remote(a, v->u.arr.v[i], &g->gateways[g->ngateways++]) < 0)
            return -1;
    return 0;
}

int
nd_cfg_apply_gateway(nd_cfg_apply_t *a, const nd_cfg_entry_t *ge)
{
    const nd_cfg_node_t *v = ge->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(ge), "Expected gateway to be a map, got %s",
                           nd_cfg_go_type(v));
    nd_opts_t *o = a->o;
    if (o->gateway == NULL)
        o->gateway = nd_xcalloc(1, sizeof(*o->gateway));
    nd_gateway_opts_t *g = o->gateway;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        const char *k = e->key;
        int rc = 0;
        if (nd_cfg_key_is(k, "name"))
            rc = nd_cfg_str(a, at, m, &g->name);
        else if (nd_cfg_key_is(k, ND_CFG_LISTENER_KEYS))
            rc = nd_cfg_listener(a, e, &g->host, &g->port);
        else if (nd_cfg_key_is(k, "authorization"))
            rc = gateway_auth(a, e, g);
        else if (nd_cfg_key_is(k, "tls"))
            rc = nd_cfg_tls(a, e, false, &g->tls);
        else if (nd_cfg_key_is(k, "advertise"))
            rc = nd_cfg_str(a, at, m, &g->advertise);
        else if (nd_cfg_key_is(k, "connect_retries"))
            rc = nd_cfg_int(a, at, m, &g->connect_retries);
        else if (nd_cfg_key_is(k, "gateways"))
            rc = remotes(a, e, g);
        else if (nd_cfg_key_is(k, "reject_unknown reject_unknown_cluster"))
            rc = nd_cfg_bool(a, at, m, &g->reject_unknown);
        else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0)
            return -1;
    }
    return 0;
}
