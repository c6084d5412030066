/* cluster {} -> nd_cluster_opts_t, with nats-server's checks and texts.
 *
 * The cluster's authorization block is nats-server's full parser restricted to one user (no
 * users array, no token); permissions inside it are deprecated (a warning) and only used when
 * the block has no top-level permissions; cluster permissions cannot allow responses. Route URLs
 * are checked as Go's url.Parse would; duplicates are warned and dropped.
 * References: nats-server 2.9.10 server/opts.go parseCluster, parseURLs; 2.10.29 (pool_size,
 * accounts, compression, ping_interval, ping_max).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"

static const char *const compression_modes[] = {
    "off",     "disabled", "accept",  "s2_fast", "fast", "s2_better", "better",
    "s2_best", "best",     "s2_auto", "auto",    "on",   "enabled",
};

static int
compression_mode(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *s, char **mode)
{
    for (size_t i = 0; i < sizeof compression_modes / sizeof compression_modes[0]; i++)
        if (strcasecmp(s, compression_modes[i]) == 0) {
            nd_set_str(mode, compression_modes[i]);
            return 0;
        }
    return nd_cfg_fail(a, at, "unsupported compression mode \"%s\"", s);
}

int
nd_cfg_compression(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, char **mode)
{
    const nd_cfg_node_t *v = e->val;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    if (v->type == ND_CFG_BOOL) {
        nd_set_str(mode, v->u.b ? "accept" : "off");
        return 0;
    }
    if (v->type == ND_CFG_STRING)
        return compression_mode(a, at, v->u.str.s, mode);
    if (v->type == ND_CFG_MAP) {
        for (size_t i = 0; i < v->u.map.n; i++) {
            const nd_cfg_entry_t *m = &v->u.map.e[i];
            nd_cfg_at_t mat = nd_cfg_at_entry(m);
            if (nd_cfg_key_is(m->key, "mode")) {
                if (m->val->type != ND_CFG_STRING)
                    return nd_cfg_type_err(a, mat, m->val, ND_CFG_STRING);
                if (compression_mode(a, mat, m->val->u.str.s, mode) < 0)
                    return -1;
            } else if (nd_cfg_key_is(m->key, "rtt_thresholds thresholds rtts rtt")) {
                if (m->val->type != ND_CFG_ARRAY)
                    return nd_cfg_type_err(a, mat, m->val, ND_CFG_ARRAY);
            } else if (nd_cfg_unknown(a, m) < 0) {
                return -1;
            }
        }
        return 0;
    }
    return nd_cfg_fail(a, at, "field \"%s\" should be a boolean or a structure, got %s", e->key,
                       nd_cfg_go_type(v));
}

static int
cluster_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_cluster_opts_t *c, bool perms_set)
{
    nd_cfg_auth_t au;
    int rc = nd_cfg_single_user_auth(a, e, "Cluster", &au, &c->user, &c->pass, &c->auth_timeout_s);
    if (rc == 0 && au.has_default_perms) {
        nd_cfg_warn(a, true, nd_cfg_at_entry(e),
                    "invalid use of field \"%s\": setting \"permissions\" within cluster "
                    "authorization block is deprecated",
                    e->key);
        if (!perms_set) {
            nd_perms_clear(&c->perms);
            c->perms = nd_perms_dup(&au.default_perms);
            c->has_perms = true;
        }
    }
    nd_cfg_auth_clear(&au);
    return rc;
}

int
nd_cfg_apply_cluster(nd_cfg_apply_t *a, const nd_cfg_entry_t *ce)
{
    const nd_cfg_node_t *v = ce->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(ce), "Expected map to define cluster, got %s",
                           nd_cfg_go_type(v));
    nd_opts_t *o = a->o;
    if (o->cluster == NULL)
        o->cluster = nd_xcalloc(1, sizeof(*o->cluster));
    nd_cluster_opts_t *c = o->cluster;
    bool perms_set = false;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        const char *k = e->key;
        int rc = 0;
        if (nd_cfg_key_is(k, "name"))
            rc = nd_cfg_str(a, at, m, &c->name);
        else if (nd_cfg_key_is(k, ND_CFG_LISTENER_KEYS))
            rc = nd_cfg_listener(a, e, &c->host, &c->port);
        else if (nd_cfg_key_is(k, "authorization"))
            rc = cluster_auth(a, e, c, perms_set);
        else if (nd_cfg_key_is(k, "routes"))
            rc = nd_cfg_urls(a, at, "route", m, &c->routes);
        else if (nd_cfg_key_is(k, "tls"))
            rc = nd_cfg_tls(a, e, false, &c->tls);
        else if (nd_cfg_key_is(k, "cluster_advertise advertise"))
            rc = nd_cfg_str(a, at, m, &c->advertise);
        else if (nd_cfg_key_is(k, "no_advertise"))
            rc = nd_cfg_bool(a, at, m, &c->no_advertise);
        else if (nd_cfg_key_is(k, "connect_retries"))
            rc = nd_cfg_int(a, at, m, &c->connect_retries);
        else if (nd_cfg_key_is(k, "permissions")) {
            nd_perms_t p = {0};
            rc = nd_cfg_perms(a, e, true, &p);
            if (rc == 0 && p.resp_set)
                rc = nd_cfg_fail(a, at, "Cluster permissions do not support dynamic responses");
            if (rc == 0) {
                nd_perms_clear(&c->perms);
                c->perms = p;
                c->has_perms = perms_set = true;
            } else {
                nd_perms_clear(&p);
            }
        } else if (nd_cfg_key_is(k, "pool_size"))
            rc = nd_cfg_int(a, at, m, &c->pool_size);
        else if (nd_cfg_key_is(k, "accounts"))
            rc = nd_cfg_strarray(a, at, "accounts", m, &c->pinned_accounts);
        else if (nd_cfg_key_is(k, "compression"))
            rc = nd_cfg_compression(a, e, &c->compression);
        else if (nd_cfg_key_is(k, "ping_interval"))
            rc = nd_cfg_duration(a, at, "ping_interval", m, &c->ping_interval_ms);
        else if (nd_cfg_key_is(k, "ping_max"))
            rc = nd_cfg_int(a, at, m, &c->ping_max);
        else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0)
            return -1;
    }
    return 0;
}
