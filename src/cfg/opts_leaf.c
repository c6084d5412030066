/* leafnodes {} -> nd_leaf_opts_t, with nats-server's checks and texts: the listener, its
 * authorization (one user, or users [{user, password, account}] without duplicates), remotes
 * [{url | urls, account, credentials, tls, hub, deny_imports, deny_exports, ...}], and
 * min_version (at least 2.8.0).
 * References: nats-server 2.9.10 server/opts.go parseLeafNodes, parseLeafAuthorization,
 * parseLeafUsers, parseRemoteLeafNodes, expandPath; server/leafnode.go
 * checkLeafMinVersionConfig, validateLeafNodeAuthOptions; 2.10.29 (compression,
 * first_info_timeout).
 */
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

/* authorization { users: [{user, password, account}] } */
static const nd_opt_desc_t leaf_users_row = {.keys = "users",
                                             .off = offsetof(nd_leaf_opts_t, users),
                                             .type = ND_OT_ARRAY,
                                             .sub = &nd_opt_user_block,
                                             .count_off = offsetof(nd_leaf_opts_t, nusers),
                                             .flags = ND_OF_GOVALUE,
                                             .errfmt =
                                                 "Expected users field to be an array, got %s"};

static int
leaf_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)d, (void)seen;
    nd_leaf_opts_t *l = blk;
    const nd_cfg_node_t *v = ae->val;
    nd_cfg_at_t at = nd_cfg_at_entry(ae);
    if (v->type != ND_CFG_MAP)
        return nd_cfg_type_err(a, at, v, ND_CFG_MAP);
    /* Each authorization block replaces the previous one's settings. */
    nd_users_free(l->users, l->nusers);
    l->users = NULL;
    l->nusers = 0;
    nd_set_str(&l->user, NULL);
    nd_set_str(&l->pass, NULL);
    nd_set_str(&l->account, NULL);
    l->auth_timeout_s = 0;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t eat = nd_cfg_at_entry(e);
        int rc = 0;
        if (nd_cfg_key_is(e->key, "user username"))
            rc = nd_cfg_str(a, eat, e->val, &l->user);
        else if (nd_cfg_key_is(e->key, "pass password"))
            rc = nd_cfg_str(a, eat, e->val, &l->pass);
        else if (nd_cfg_key_is(e->key, "timeout"))
            nd_cfg_seconds(e->val, 1, &l->auth_timeout_s);
        else if (nd_cfg_key_is(e->key, "users"))
            rc = nd_opt_array(a, e, &leaf_users_row, l, seen);
        else if (nd_cfg_key_is(e->key, "account"))
            rc = nd_cfg_str(a, eat, e->val, &l->account);
        else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0)
            return -1;
    }
    /* validateLeafNodeAuthOptions */
    if (l->nusers == 0)
        return 0;
    if (l->user && l->user[0])
        return nd_cfg_fail(a, at, "can not have a single user/pass and a users array");
    nd_cfg_strset_t names = {0};
    int rc = 0;
    for (size_t i = 0; i < l->nusers && rc == 0; i++) {
        const char *x = l->users[i].name ? l->users[i].name : "";
        if (!nd_cfg_strset_add(&names, x, i, NULL))
            rc = nd_cfg_fail(a, at, "duplicate user \"%s\" detected in leafnode authorization", x);
    }
    nd_cfg_strset_free(&names);
    return rc;
}

/* expandPath: a leading ~ is the home directory. */
static char *
expand_path(const char *p)
{
    if (p[0] != '~')
        return nd_xstrdup(p);
    const char *home = getenv("HOME");
    if (home == NULL)
        home = "";
    size_t n = strlen(home) + strlen(p) + 1;
    char *s = nd_xmalloc(n);
    snprintf(s, n, "%s%s", home, p + 1);
    return s;
}

static int
remote_urls(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
            unsigned *seen)
{
    (void)d, (void)seen;
    nd_leaf_remote_t *r = blk;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *m = e->val;
    if (m->type == ND_CFG_ARRAY)
        return nd_cfg_urls(a, at, "leafnode", m, &r->urls);
    if (m->type == ND_CFG_STRING) {
        char *u = NULL;
        int rc = nd_cfg_url(a, at, "leafnode", m->u.str.s, &u);
        if (rc == 0)
            nd_strlist_add(&r->urls, u);
        nd_free(u);
        return rc;
    }
    char val[256];
    nd_cfg_go_value(m, val, sizeof val);
    return nd_cfg_fail(a, at, "Expected remote leafnode url to be an array or string, got %s", val);
}

static int
remote_creds(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
             unsigned *seen)
{
    (void)d, (void)seen;
    nd_leaf_remote_t *r = blk;
    if (e->val->type != ND_CFG_STRING)
        return nd_cfg_type_err(a, nd_cfg_at_entry(e), e->val, ND_CFG_STRING);
    nd_free(r->credentials);
    r->credentials = expand_path(e->val->u.str.s);
    return 0;
}

static int
perm_subjects(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
              unsigned *seen)
{
    (void)seen;
    return nd_cfg_perm_subjects(a, nd_cfg_at_entry(e), e->val,
                                (nd_strlist_t *)((char *)blk + d->off));
}

/* nats-server sets it whatever the value says. */
static int
set_true(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
         unsigned *seen)
{
    (void)a, (void)e, (void)seen;
    *(bool *)((char *)blk + d->off) = true;
    return 0;
}

#define R(...) ND_OPT(nd_leaf_remote_t, __VA_ARGS__)
static const nd_opt_desc_t remote_d[] = {
    R("no_randomize dont_randomize", no_randomize, ND_OT_BOOL),
    R("url urls", urls, ND_OT_STRLIST, .parse = remote_urls),
    R("account local", account, ND_OT_STR),
    R("creds credentials", credentials, ND_OT_STR, .parse = remote_creds),
    R("nkey", nkey, ND_OT_STR),
    R("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 1),
    R("hub", hub, ND_OT_BOOL),
    R("deny_imports deny_import", deny_imports, ND_OT_STRLIST, .parse = perm_subjects),
    R("deny_exports deny_export", deny_exports, ND_OT_STRLIST, .parse = perm_subjects),
    R("ws_compress ws_compression websocket_compress websocket_compression", ws_compression,
      ND_OT_BOOL),
    R("ws_no_masking websocket_no_masking", ws_no_masking, ND_OT_BOOL),
    R("jetstream_cluster_migrate js_cluster_migrate", js_cluster_migrate, ND_OT_BOOL,
      .parse = set_true),
    R("compression", compression, ND_OT_STR, .parse = nd_opt_compression),
    R("first_info_timeout", first_info_timeout_ms, ND_OT_DUR, .flags = ND_OF_WRITTEN),
    ND_OPT_END,
};
#undef R

const nd_opt_block_t nd_opt_leaf_remote_block = {
    "remotes",
    "Expected remote leafnode entry to be a map/struct, got %s",
    sizeof(nd_leaf_remote_t),
    remote_d,
    ND_RL_INHERIT,
    NULL};

/* versionAtLeastCheckError(v, 2, 8, 0) with nats-server's semver expression
 * \Av?([0-9]+)\.?([0-9]+)?\.?([0-9]+)? (a missing part fails Atoi: "invalid syntax"). */
static int
min_version(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *s)
{
    const char *p = s;
    if (*p == 'v')
        p++;
    long part[3];
    int got = 0;
    for (int i = 0; i < 3; i++) {
        if (!isdigit((unsigned char)*p))
            break;
        part[i] = strtol(p, (char **)&p, 10);
        got++;
        if (*p == '.')
            p++;
    }
    if (got == 0)
        return nd_cfg_fail(a, at, "invalid leafnode's minimum version: invalid semver");
    if (got < 3)
        return nd_cfg_fail(a, at,
                           "invalid leafnode's minimum version: strconv.Atoi: parsing \"\": "
                           "invalid syntax");
    bool ok = part[0] > 2 || (part[0] == 2 && part[1] > 8) || (part[0] == 2 && part[1] == 8);
    if (!ok)
        return nd_cfg_fail(a, at, "the minimum version should be at least 2.8.0");
    return 0;
}

/* 2.9.10 takes seconds; 2.10 also duration strings. */
static int
reconnect(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)d, (void)seen;
    nd_leaf_opts_t *l = blk;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *m = e->val;
    if (m->type == ND_CFG_STRING)
        return nd_cfg_duration_str(a, at, "error parsing reconnect", m, &l->reconnect_ms);
    if (m->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, m, ND_CFG_INT);
    l->reconnect_ms = m->u.i * 1000;
    return 0;
}

static int
leaf_min_version(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                 unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *m = e->val;
    if (m->type != ND_CFG_STRING)
        return nd_cfg_type_err(a, at, m, ND_CFG_STRING);
    if (min_version(a, at, m->u.str.s) < 0)
        return -1;
    nd_set_str(&((nd_leaf_opts_t *)blk)->min_version, m->u.str.s);
    return 0;
}

#define L(...) ND_OPT(nd_leaf_opts_t, __VA_ARGS__)
static const nd_opt_desc_t leaf_d[] = {
    L(ND_CFG_LISTENER_KEYS, host, ND_OT_STR, .parse = nd_opt_listener,
      .aux = offsetof(nd_leaf_opts_t, port), .flags = ND_OF_LISTEN),
    L(NULL, port, ND_OT_INT, .flags = ND_OF_LISTEN),
    L("authorization", user, ND_OT_STR, .parse = leaf_auth),
    L(NULL, pass, ND_OT_STR),
    L(NULL, account, ND_OT_STR),
    L(NULL, auth_timeout_s, ND_OT_DBL),
    L(NULL, users, ND_OT_ARRAY, .sub = &nd_opt_user_block,
      .count_off = offsetof(nd_leaf_opts_t, nusers)),
    L("remotes", remotes, ND_OT_ARRAY, .sub = &nd_opt_leaf_remote_block,
      .count_off = offsetof(nd_leaf_opts_t, nremotes), .parse = nd_opt_array,
      .errfmt = "Expected remotes field to be an array, got %s"),
    L("reconnect reconnect_delay reconnect_interval", reconnect_ms, ND_OT_I64, .parse = reconnect),
    L("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 1),
    L("leafnode_advertise advertise", advertise, ND_OT_STR),
    L("no_advertise", no_advertise, ND_OT_BOOL),
    L("min_version minimum_version", min_version, ND_OT_STR, .parse = leaf_min_version),
    L("compression", compression, ND_OT_STR, .parse = nd_opt_compression),
    ND_OPT_END,
};
#undef L

const nd_opt_block_t nd_opt_leaf_block = {"leafnodes",
                                          "Expected map to define a leafnode, got %s",
                                          sizeof(nd_leaf_opts_t),
                                          leaf_d,
                                          ND_RL_REFUSE,
                                          NULL};

int
nd_cfg_apply_leaf(nd_cfg_apply_t *a, const nd_cfg_entry_t *le)
{
    return nd_opt_parse_block(a, &nd_opt_leaf_block, le, (void **)&a->o->leaf);
}
