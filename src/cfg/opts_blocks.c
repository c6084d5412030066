/* Ownership of the config-file option blocks (src/cfg/opts.h): defaults, deep copies and
 * frees of the "config file" group of nd_opts_t and of every block struct it points to.
 *
 * Invariant: every pointer in those structs is owned by exactly one nd_opts_t; nd_opts_copy
 * therefore copies each block deeply, so a reload can swap a whole new copy while connections
 * still read the old one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "cfg/opts_table.h"

static char *
sdup(const char *s)
{
    return s ? nd_xstrdup(s) : NULL;
}

/* Replaces a string field of dst (which holds src's pointer after *dst = *src) by a copy. */
#define DUPS(dst, f) ((dst)->f = sdup((dst)->f))

/* ---- strings and lists ---------------------------------------------------------------------- */

void
nd_strlist_add(nd_strlist_t *l, const char *s)
{
    l->v = nd_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    l->v[l->n++] = nd_xstrdup(s);
}

void
nd_strlist_free(nd_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nd_free(l->v[i]);
    nd_free(l->v);
    l->v = NULL;
    l->n = 0;
}

nd_strlist_t
nd_strlist_dup(const nd_strlist_t *l)
{
    nd_strlist_t c = {0};
    for (size_t i = 0; i < l->n; i++)
        nd_strlist_add(&c, l->v[i]);
    return c;
}

/* ---- tables of the structs that no block parser reads by table ----------------------------- */

#define R(T, ...) ND_OPT(T, NULL, __VA_ARGS__)

static const nd_opt_desc_t cert_pair_d[] = {
    R(nd_tls_cert_pair_t, cert_file, ND_OT_STR),
    R(nd_tls_cert_pair_t, key_file, ND_OT_STR),
    ND_OPT_END,
};
static const nd_opt_block_t cert_pair_block = {"certs", NULL, sizeof(nd_tls_cert_pair_t),
                                               cert_pair_d, ND_RL_INHERIT};

/* tls {} is read by nd_cfg_tls (opts_tls.c): its checks span keys. */
static const nd_opt_desc_t tls_d[] = {
    R(nd_tls_opts_t, cert_file, ND_OT_STR),
    R(nd_tls_opts_t, key_file, ND_OT_STR),
    R(nd_tls_opts_t, ca_file, ND_OT_STR),
    R(nd_tls_opts_t, certs, ND_OT_ARRAY, .sub = &cert_pair_block,
      .count_off = offsetof(nd_tls_opts_t, ncerts)),
    R(nd_tls_opts_t, verify, ND_OT_BOOL),
    R(nd_tls_opts_t, verify_and_map, ND_OT_BOOL),
    R(nd_tls_opts_t, check_known_urls, ND_OT_BOOL),
    R(nd_tls_opts_t, insecure, ND_OT_BOOL),
    R(nd_tls_opts_t, cipher_suites, ND_OT_STRLIST),
    R(nd_tls_opts_t, curve_preferences, ND_OT_STRLIST),
    R(nd_tls_opts_t, pinned_certs, ND_OT_STRLIST),
    R(nd_tls_opts_t, timeout_s, ND_OT_DBL),
    R(nd_tls_opts_t, rate_limit, ND_OT_I64),
    R(nd_tls_opts_t, min_version, ND_OT_INT),
    R(nd_tls_opts_t, handshake_first, ND_OT_BOOL),
    R(nd_tls_opts_t, fallback_delay_ms, ND_OT_I64),
    R(nd_tls_opts_t, ocsp_peer, ND_OT_BOOL),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_tls_block = {"tls", NULL, sizeof(nd_tls_opts_t), tls_d,
                                         ND_RL_INHERIT};

static const nd_opt_desc_t subj_perm_d[] = {
    R(nd_subj_perm_t, allow_set, ND_OT_BOOL),
    R(nd_subj_perm_t, deny_set, ND_OT_BOOL),
    R(nd_subj_perm_t, allow, ND_OT_STRLIST),
    R(nd_subj_perm_t, deny, ND_OT_STRLIST),
    ND_OPT_END,
};
static const nd_opt_block_t subj_perm_block = {"permission", NULL, sizeof(nd_subj_perm_t),
                                               subj_perm_d, ND_RL_INHERIT};

/* permissions {} is read by nd_cfg_perms (opts_auth.c). */
static const nd_opt_desc_t perms_d[] = {
    R(nd_perms_t, pub_set, ND_OT_BOOL),
    R(nd_perms_t, sub_set, ND_OT_BOOL),
    R(nd_perms_t, resp_set, ND_OT_BOOL),
    R(nd_perms_t, pub, ND_OT_STRUCT, .sub = &subj_perm_block),
    R(nd_perms_t, sub, ND_OT_STRUCT, .sub = &subj_perm_block),
    R(nd_perms_t, resp_max_msgs, ND_OT_I64),
    R(nd_perms_t, resp_expires_ms, ND_OT_I64),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_perms_block = {"permissions", NULL, sizeof(nd_perms_t), perms_d,
                                           ND_RL_INHERIT};

/* users are read by nd_cfg_users (opts_auth.c) and leafnodes' own reader (opts_leaf.c). */
static const nd_opt_desc_t user_d[] = {
    R(nd_user_t, name, ND_OT_STR),
    R(nd_user_t, pass, ND_OT_STR),
    R(nd_user_t, nkey, ND_OT_STR),
    R(nd_user_t, account, ND_OT_STR),
    R(nd_user_t, has_perms, ND_OT_BOOL),
    R(nd_user_t, perms, ND_OT_STRUCT, .sub = &nd_opt_perms_block),
    R(nd_user_t, conn_types, ND_OT_U32),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_user_block = {"users", NULL, sizeof(nd_user_t), user_d,
                                          ND_RL_INHERIT};

#undef R

/* ---- tls, permissions and users ----------------------------------------------------------- */

void
nd_tls_opts_free(nd_tls_opts_t *t)
{
    nd_opt_free(&nd_opt_tls_block, t);
}

nd_tls_opts_t *
nd_tls_opts_dup(const nd_tls_opts_t *t)
{
    return nd_opt_dup(&nd_opt_tls_block, t);
}

void
nd_perms_clear(nd_perms_t *p)
{
    nd_opt_clear(&nd_opt_perms_block, p);
}

nd_perms_t
nd_perms_dup(const nd_perms_t *p)
{
    nd_perms_t c;
    nd_opt_copy(&nd_opt_perms_block, &c, p);
    return c;
}

void
nd_user_clear(nd_user_t *u)
{
    nd_opt_clear(&nd_opt_user_block, u);
}

nd_user_t
nd_user_dup(const nd_user_t *u)
{
    nd_user_t c;
    nd_opt_copy(&nd_opt_user_block, &c, u);
    return c;
}

void
nd_users_free(nd_user_t *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nd_user_clear(&u[i]);
    nd_free(u);
}

static nd_user_t *
users_dup(const nd_user_t *u, size_t n)
{
    if (n == 0)
        return NULL;
    nd_user_t *c = nd_xmalloc(n * sizeof(*c));
    for (size_t i = 0; i < n; i++)
        c[i] = nd_user_dup(&u[i]);
    return c;
}

/* ---- accounts ----------------------------------------------------------------------------- */

void
nd_account_opts_clear(nd_account_opts_t *a)
{
    nd_free(a->name);
    nd_free(a->nkey);
    for (size_t i = 0; i < a->nexports; i++) {
        nd_free(a->exports[i].subject);
        nd_strlist_free(&a->exports[i].accounts);
        nd_free(a->exports[i].latency_subject);
    }
    nd_free(a->exports);
    for (size_t i = 0; i < a->nimports; i++) {
        nd_import_t *im = &a->imports[i];
        nd_free(im->account);
        nd_free(im->subject);
        nd_free(im->to);
        nd_free(im->prefix);
    }
    nd_free(a->imports);
    for (size_t i = 0; i < a->nmappings; i++) {
        nd_mapping_t *m = &a->mappings[i];
        nd_free(m->src);
        for (size_t d = 0; d < m->ndests; d++) {
            nd_free(m->dests[d].subject);
            nd_free(m->dests[d].cluster);
        }
        nd_free(m->dests);
    }
    nd_free(a->mappings);
    nd_perms_clear(&a->default_perms);
    memset(a, 0, sizeof(*a));
}

static nd_account_opts_t
account_dup(const nd_account_opts_t *a)
{
    nd_account_opts_t c = *a;
    DUPS(&c, name);
    DUPS(&c, nkey);
    c.exports = a->nexports ? nd_xmalloc(a->nexports * sizeof(*c.exports)) : NULL;
    for (size_t i = 0; i < a->nexports; i++) {
        c.exports[i] = a->exports[i];
        DUPS(&c.exports[i], subject);
        DUPS(&c.exports[i], latency_subject);
        c.exports[i].accounts = nd_strlist_dup(&a->exports[i].accounts);
    }
    c.imports = a->nimports ? nd_xmalloc(a->nimports * sizeof(*c.imports)) : NULL;
    for (size_t i = 0; i < a->nimports; i++) {
        c.imports[i] = a->imports[i];
        DUPS(&c.imports[i], account);
        DUPS(&c.imports[i], subject);
        DUPS(&c.imports[i], to);
        DUPS(&c.imports[i], prefix);
    }
    c.mappings = a->nmappings ? nd_xmalloc(a->nmappings * sizeof(*c.mappings)) : NULL;
    for (size_t i = 0; i < a->nmappings; i++) {
        const nd_mapping_t *m = &a->mappings[i];
        c.mappings[i] = *m;
        DUPS(&c.mappings[i], src);
        c.mappings[i].dests = m->ndests ? nd_xmalloc(m->ndests * sizeof(*m->dests)) : NULL;
        for (size_t d = 0; d < m->ndests; d++) {
            c.mappings[i].dests[d] = m->dests[d];
            DUPS(&c.mappings[i].dests[d], subject);
            DUPS(&c.mappings[i].dests[d], cluster);
        }
    }
    c.default_perms = nd_perms_dup(&a->default_perms);
    return c;
}

/* ---- topology blocks: their tables are in opts_<block>.c ------------------------------------ */

void
nd_gateway_remote_clear(nd_gateway_remote_t *r)
{
    nd_opt_clear(&nd_opt_gw_remote_block, r);
}

void
nd_leaf_remote_clear(nd_leaf_remote_t *r)
{
    nd_opt_clear(&nd_opt_leaf_remote_block, r);
}

static void
resolver_free(nd_resolver_opts_t *r)
{
    if (r == NULL)
        return;
    nd_free(r->url);
    nd_free(r->dir);
    nd_free(r);
}

static nd_resolver_opts_t *
resolver_dup(const nd_resolver_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_resolver_opts_t *r = nd_xmalloc(sizeof(*r));
    *r = *s;
    DUPS(r, url);
    DUPS(r, dir);
    return r;
}

static void
callout_free(nd_auth_callout_opts_t *c)
{
    if (c == NULL)
        return;
    nd_free(c->issuer);
    nd_free(c->account);
    nd_strlist_free(&c->auth_users);
    nd_free(c->xkey);
    nd_free(c);
}

static nd_auth_callout_opts_t *
callout_dup(const nd_auth_callout_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_auth_callout_opts_t *c = nd_xmalloc(sizeof(*c));
    *c = *s;
    DUPS(c, issuer);
    DUPS(c, account);
    DUPS(c, xkey);
    c->auth_users = nd_strlist_dup(&s->auth_users);
    return c;
}

void
nd_auth_callout_opts_free(nd_auth_callout_opts_t *c)
{
    callout_free(c);
}

/* ---- the group in nd_opts_t --------------------------------------------------------------- */

void
nd_opts_cfg_defaults(nd_opts_t *o)
{
    o->lame_duck_duration_ms = ND_DEFAULT_LAME_DUCK_DURATION_MS;
    o->lame_duck_grace_period_ms = ND_DEFAULT_LAME_DUCK_GRACE_MS;
    o->max_closed_clients = ND_DEFAULT_MAX_CLOSED_CLIENTS;
    o->connect_error_reports = ND_DEFAULT_CONNECT_ERROR_REPORTS;
    o->reconnect_error_reports = ND_DEFAULT_RECONNECT_ERROR_REPORTS;
}

void
nd_opts_cfg_free(nd_opts_t *o)
{
    nd_strlist_free(&o->server_tags);
    nd_free(o->http_host);
    nd_free(o->http_base_path);
    nd_users_free(o->users, o->nusers);
    callout_free(o->auth_callout);
    o->auth_callout = NULL;
    nd_free(o->no_auth_user);
    nd_free(o->system_account);
    for (size_t i = 0; i < o->naccounts; i++)
        nd_account_opts_clear(&o->accounts[i]);
    nd_free(o->accounts);
    nd_tls_opts_free(o->tls_cfg);
    nd_strlist_free(&o->ocsp_urls);
    nd_opt_free(&nd_opt_cluster_block, o->cluster);
    nd_opt_free(&nd_opt_gateway_block, o->gateway);
    nd_opt_free(&nd_opt_leaf_block, o->leaf);
    nd_opt_free(&nd_opt_js_block, o->js);
    nd_strlist_free(&o->js_default_domains);
    nd_opt_free(&nd_opt_mqtt_block, o->mqtt);
    nd_opt_free(&nd_opt_ws_block, o->ws);
    nd_strlist_free(&o->operators);
    nd_strlist_free(&o->trusted_keys);
    resolver_free(o->resolver);
    nd_tls_opts_free(o->resolver_tls);
    nd_strlist_free(&o->resolver_preload);
    nd_strlist_free(&o->resolver_pinned_accounts);
    o->http_host = o->http_base_path = o->no_auth_user = o->system_account = NULL;
    o->users = NULL;
    o->nusers = 0;
    o->accounts = NULL;
    o->naccounts = 0;
    o->tls_cfg = o->resolver_tls = NULL;
    o->cluster = NULL;
    o->gateway = NULL;
    o->leaf = NULL;
    o->js = NULL;
    o->mqtt = NULL;
    o->ws = NULL;
    o->resolver = NULL;
}

void
nd_opts_cfg_copy(nd_opts_t *dst, const nd_opts_t *src)
{
    dst->server_tags = nd_strlist_dup(&src->server_tags);
    dst->http_host = sdup(src->http_host);
    dst->http_base_path = sdup(src->http_base_path);
    dst->users = users_dup(src->users, src->nusers);
    dst->auth_callout = callout_dup(src->auth_callout);
    dst->no_auth_user = sdup(src->no_auth_user);
    dst->system_account = sdup(src->system_account);
    dst->accounts = src->naccounts ? nd_xmalloc(src->naccounts * sizeof(*dst->accounts)) : NULL;
    for (size_t i = 0; i < src->naccounts; i++)
        dst->accounts[i] = account_dup(&src->accounts[i]);
    dst->tls_cfg = nd_tls_opts_dup(src->tls_cfg);
    dst->ocsp_urls = nd_strlist_dup(&src->ocsp_urls);
    dst->cluster = nd_opt_dup(&nd_opt_cluster_block, src->cluster);
    dst->gateway = nd_opt_dup(&nd_opt_gateway_block, src->gateway);
    dst->leaf = nd_opt_dup(&nd_opt_leaf_block, src->leaf);
    dst->js = nd_opt_dup(&nd_opt_js_block, src->js);
    dst->js_default_domains = nd_strlist_dup(&src->js_default_domains);
    dst->mqtt = nd_opt_dup(&nd_opt_mqtt_block, src->mqtt);
    dst->ws = nd_opt_dup(&nd_opt_ws_block, src->ws);
    dst->operators = nd_strlist_dup(&src->operators);
    dst->trusted_keys = nd_strlist_dup(&src->trusted_keys);
    dst->resolver = resolver_dup(src->resolver);
    dst->resolver_tls = nd_tls_opts_dup(src->resolver_tls);
    dst->resolver_preload = nd_strlist_dup(&src->resolver_preload);
    dst->resolver_pinned_accounts = nd_strlist_dup(&src->resolver_pinned_accounts);
}
