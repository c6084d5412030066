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

static int
leaf_users(nd_cfg_apply_t *a, const nd_cfg_entry_t *ue, nd_leaf_opts_t *l)
{
    const nd_cfg_node_t *v = ue->val;
    if (v->type != ND_CFG_ARRAY) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, nd_cfg_at_entry(ue), "Expected users field to be an array, got %s",
                           val);
    }
    nd_users_free(l->users, l->nusers);
    l->users = v->u.arr.n ? nd_xcalloc(v->u.arr.n, sizeof(*l->users)) : NULL;
    l->nusers = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *um = v->u.arr.v[i];
        if (um->type != ND_CFG_MAP) {
            char val[256];
            nd_cfg_go_value(um, val, sizeof val);
            return nd_cfg_fail(a, nd_cfg_at_node(um),
                               "Expected user entry to be a map/struct, got %s", val);
        }
        nd_user_t *u = &l->users[l->nusers++];
        for (size_t k = 0; k < um->u.map.n; k++) {
            const nd_cfg_entry_t *e = &um->u.map.e[k];
            nd_cfg_at_t at = nd_cfg_at_entry(e);
            int rc;
            if (nd_cfg_key_is(e->key, "user username"))
                rc = nd_cfg_str(a, at, e->val, &u->name);
            else if (nd_cfg_key_is(e->key, "pass password"))
                rc = nd_cfg_str(a, at, e->val, &u->pass);
            else if (nd_cfg_key_is(e->key, "account"))
                rc = nd_cfg_str(a, at, e->val, &u->account);
            else
                rc = nd_cfg_unknown(a, e);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

static int
leaf_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae, nd_leaf_opts_t *l)
{
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
            rc = leaf_users(a, e, l);
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
    nd_cfg_strset_t seen = {0};
    int rc = 0;
    for (size_t i = 0; i < l->nusers && rc == 0; i++) {
        const char *x = l->users[i].name ? l->users[i].name : "";
        if (!nd_cfg_strset_add(&seen, x, i, NULL))
            rc = nd_cfg_fail(a, at, "duplicate user \"%s\" detected in leafnode authorization", x);
    }
    nd_cfg_strset_free(&seen);
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
remote(nd_cfg_apply_t *a, const nd_cfg_node_t *v, nd_leaf_remote_t *r)
{
    if (v->type != ND_CFG_MAP) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, nd_cfg_at_node(v),
                           "Expected remote leafnode entry to be a map/struct, got %s", val);
    }
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        const char *k = e->key;
        int rc = 0;
        if (nd_cfg_key_is(k, "no_randomize dont_randomize")) {
            rc = nd_cfg_bool(a, at, m, &r->no_randomize);
        } else if (nd_cfg_key_is(k, "url urls")) {
            if (m->type == ND_CFG_ARRAY) {
                rc = nd_cfg_urls(a, at, "leafnode", m, &r->urls);
            } else if (m->type == ND_CFG_STRING) {
                char *u = NULL;
                rc = nd_cfg_url(a, at, "leafnode", m->u.str.s, &u);
                if (rc == 0)
                    nd_strlist_add(&r->urls, u);
                nd_free(u);
            } else {
                char val[256];
                nd_cfg_go_value(m, val, sizeof val);
                rc = nd_cfg_fail(
                    a, at, "Expected remote leafnode url to be an array or string, got %s", val);
            }
        } else if (nd_cfg_key_is(k, "account local")) {
            rc = nd_cfg_str(a, at, m, &r->account);
        } else if (nd_cfg_key_is(k, "creds credentials")) {
            if (m->type != ND_CFG_STRING) {
                rc = nd_cfg_type_err(a, at, m, ND_CFG_STRING);
            } else {
                nd_free(r->credentials);
                r->credentials = expand_path(m->u.str.s);
            }
        } else if (nd_cfg_key_is(k, "tls")) {
            rc = nd_cfg_tls(a, e, true, &r->tls);
        } else if (nd_cfg_key_is(k, "hub")) {
            rc = nd_cfg_bool(a, at, m, &r->hub);
        } else if (nd_cfg_key_is(k, "deny_imports deny_import")) {
            rc = nd_cfg_perm_subjects(a, at, m, &r->deny_imports);
        } else if (nd_cfg_key_is(k, "deny_exports deny_export")) {
            rc = nd_cfg_perm_subjects(a, at, m, &r->deny_exports);
        } else if (nd_cfg_key_is(k, "ws_compress ws_compression websocket_compress "
                                    "websocket_compression")) {
            rc = nd_cfg_bool(a, at, m, &r->ws_compression);
        } else if (nd_cfg_key_is(k, "ws_no_masking websocket_no_masking")) {
            rc = nd_cfg_bool(a, at, m, &r->ws_no_masking);
        } else if (nd_cfg_key_is(k, "jetstream_cluster_migrate js_cluster_migrate")) {
            /* nats-server sets it whatever the value says. */
            r->js_cluster_migrate = true;
        } else if (nd_cfg_key_is(k, "compression")) {
            rc = nd_cfg_compression(a, e, &r->compression);
        } else if (nd_cfg_key_is(k, "first_info_timeout")) {
            rc = nd_cfg_duration(a, at, k, m, &r->first_info_timeout_ms);
        } else {
            rc = nd_cfg_unknown(a, e);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
remotes(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_leaf_opts_t *l)
{
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_fail(a, nd_cfg_at_entry(e), "Expected remotes field to be an array, got %s",
                           nd_cfg_go_type(v));
    for (size_t i = 0; i < l->nremotes; i++)
        nd_leaf_remote_clear(&l->remotes[i]);
    nd_free(l->remotes);
    l->remotes = v->u.arr.n ? nd_xcalloc(v->u.arr.n, sizeof(*l->remotes)) : NULL;
    l->nremotes = 0;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (remote(a, v->u.arr.v[i], &l->remotes[l->nremotes++]) < 0)
            return -1;
    return 0;
}

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

int
nd_cfg_apply_leaf(nd_cfg_apply_t *a, const nd_cfg_entry_t *le)
{
    const nd_cfg_node_t *v = le->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(le), "Expected map to define a leafnode, got %s",
                           nd_cfg_go_type(v));
    nd_opts_t *o = a->o;
    if (o->leaf == NULL)
        o->leaf = nd_xcalloc(1, sizeof(*o->leaf));
    nd_leaf_opts_t *l = o->leaf;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        const char *k = e->key;
        int rc = 0;
        if (nd_cfg_key_is(k, ND_CFG_LISTENER_KEYS)) {
            rc = nd_cfg_listener(a, e, &l->host, &l->port);
        } else if (nd_cfg_key_is(k, "authorization")) {
            rc = leaf_auth(a, e, l);
        } else if (nd_cfg_key_is(k, "remotes")) {
            rc = remotes(a, e, l);
        } else if (nd_cfg_key_is(k, "reconnect reconnect_delay reconnect_interval")) {
            /* 2.9.10 takes seconds; 2.10 also duration strings. */
            if (m->type == ND_CFG_STRING)
                rc = nd_cfg_duration_str(a, at, "error parsing reconnect", m, &l->reconnect_ms);
            else if (m->type != ND_CFG_INT)
                rc = nd_cfg_type_err(a, at, m, ND_CFG_INT);
            else
                l->reconnect_ms = m->u.i * 1000;
        } else if (nd_cfg_key_is(k, "tls")) {
            rc = nd_cfg_tls(a, e, true, &l->tls);
        } else if (nd_cfg_key_is(k, "leafnode_advertise advertise")) {
            rc = nd_cfg_str(a, at, m, &l->advertise);
        } else if (nd_cfg_key_is(k, "no_advertise")) {
            rc = nd_cfg_bool(a, at, m, &l->no_advertise);
        } else if (nd_cfg_key_is(k, "min_version minimum_version")) {
            if (m->type != ND_CFG_STRING)
                rc = nd_cfg_type_err(a, at, m, ND_CFG_STRING);
            else if ((rc = min_version(a, at, m->u.str.s)) == 0)
                nd_set_str(&l->min_version, m->u.str.s);
        } else if (nd_cfg_key_is(k, "compression")) {
            rc = nd_cfg_compression(a, e, &l->compression);
        } else {
            rc = nd_cfg_unknown(a, e);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}
