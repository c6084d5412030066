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
#include "cfg/opts_table.h"

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

/* seen: permissions {} was written in this block before authorization {}. */
#define SEEN_PERMS 1u

static int
cluster_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
             unsigned *seen)
{
    (void)d;
    nd_cluster_opts_t *c = blk;
    nd_cfg_auth_t au;
    int rc = nd_cfg_single_user_auth(a, e, "Cluster", &au, &c->user, &c->pass, &c->auth_timeout_s);
    if (rc == 0 && au.has_default_perms) {
        nd_cfg_warn(a, true, nd_cfg_at_entry(e),
                    "invalid use of field \"%s\": setting \"permissions\" within cluster "
                    "authorization block is deprecated",
                    e->key);
        if (!(*seen & SEEN_PERMS)) {
            nd_perms_clear(&c->perms);
            c->perms = nd_perms_dup(&au.default_perms);
            c->has_perms = true;
        }
    }
    nd_cfg_auth_clear(&au);
    return rc;
}

static int
cluster_perms(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
              unsigned *seen)
{
    (void)d;
    nd_cluster_opts_t *c = blk;
    nd_perms_t p = {0};
    int rc = nd_cfg_perms(a, e, true, &p);
    if (rc == 0 && p.resp_set)
        rc = nd_cfg_fail(a, nd_cfg_at_entry(e),
                         "Cluster permissions do not support dynamic responses");
    if (rc < 0) {
        nd_perms_clear(&p);
        return -1;
    }
    nd_perms_clear(&c->perms);
    c->perms = p;
    c->has_perms = true;
    *seen |= SEEN_PERMS;
    return 0;
}

static int
routes(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
       unsigned *seen)
{
    (void)d, (void)seen;
    return nd_cfg_urls(a, nd_cfg_at_entry(e), "route", e->val, &((nd_cluster_opts_t *)blk)->routes);
}

int
nd_opt_compression(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                   unsigned *seen)
{
    (void)seen;
    return nd_cfg_compression(a, e, (char **)((char *)blk + d->off));
}

#define C(...) ND_OPT(nd_cluster_opts_t, __VA_ARGS__)
static const nd_opt_desc_t cluster_d[] = {
    C("name", name, ND_OT_STR),
    C(ND_CFG_LISTENER_KEYS, host, ND_OT_STR, .parse = nd_opt_listener,
      .aux = offsetof(nd_cluster_opts_t, port), .flags = ND_OF_LISTEN),
    C(NULL, port, ND_OT_INT, .flags = ND_OF_LISTEN),
    C("authorization", user, ND_OT_STR, .parse = cluster_auth),
    C(NULL, pass, ND_OT_STR),
    C(NULL, auth_timeout_s, ND_OT_DBL),
    C("routes", routes, ND_OT_STRLIST, .parse = routes),
    C("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 0),
    C("cluster_advertise advertise", advertise, ND_OT_STR),
    C("no_advertise", no_advertise, ND_OT_BOOL),
    C("connect_retries", connect_retries, ND_OT_INT),
    C("permissions", perms, ND_OT_STRUCT, .sub = &nd_opt_perms_block, .parse = cluster_perms),
    C(NULL, has_perms, ND_OT_BOOL),
    C("pool_size", pool_size, ND_OT_INT),
    C("accounts", pinned_accounts, ND_OT_STRLIST),
    C("compression", compression, ND_OT_STR, .parse = nd_opt_compression),
    C("ping_interval", ping_interval_ms, ND_OT_DUR),
    C("ping_max", ping_max, ND_OT_INT),
    ND_OPT_END,
};
#undef C

/* A reload applies the route list; the listen address is refused (src/server/reload.c). */
const nd_opt_block_t nd_opt_cluster_block = {"cluster",
                                             "Expected map to define cluster, got %s",
                                             sizeof(nd_cluster_opts_t),
                                             cluster_d,
                                             ND_RL_UNBUILT,
                                             NULL};

int
nd_cfg_apply_cluster(nd_cfg_apply_t *a, const nd_cfg_entry_t *ce)
{
    return nd_opt_parse_block(a, &nd_opt_cluster_block, ce, (void **)&a->o->cluster);
}
