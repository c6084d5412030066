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

/* ---- tls ---------------------------------------------------------------------------------- */

void
nd_tls_opts_free(nd_tls_opts_t *t)
{
    if (t == NULL)
        return;
    nd_free(t->cert_file);
    nd_free(t->key_file);
    nd_free(t->ca_file);
    for (size_t i = 0; i < t->ncerts; i++) {
        nd_free(t->certs[i].cert_file);
        nd_free(t->certs[i].key_file);
    }
    nd_free(t->certs);
    nd_strlist_free(&t->cipher_suites);
    nd_strlist_free(&t->curve_preferences);
    nd_strlist_free(&t->pinned_certs);
    nd_free(t);
}

nd_tls_opts_t *
nd_tls_opts_dup(const nd_tls_opts_t *t)
{
    if (t == NULL)
        return NULL;
    nd_tls_opts_t *c = nd_xmalloc(sizeof(*c));
    *c = *t;
    DUPS(c, cert_file);
    DUPS(c, key_file);
    DUPS(c, ca_file);
    c->certs = NULL;
    if (t->ncerts) {
        c->certs = nd_xmalloc(t->ncerts * sizeof(*c->certs));
        for (size_t i = 0; i < t->ncerts; i++) {
            c->certs[i].cert_file = sdup(t->certs[i].cert_file);
            c->certs[i].key_file = sdup(t->certs[i].key_file);
        }
    }
    c->cipher_suites = nd_strlist_dup(&t->cipher_suites);
    c->curve_preferences = nd_strlist_dup(&t->curve_preferences);
    c->pinned_certs = nd_strlist_dup(&t->pinned_certs);
    return c;
}

/* ---- permissions and users ---------------------------------------------------------------- */

static void
subj_perm_clear(nd_subj_perm_t *p)
{
    nd_strlist_free(&p->allow);
    nd_strlist_free(&p->deny);
}

static nd_subj_perm_t
subj_perm_dup(const nd_subj_perm_t *p)
{
    nd_subj_perm_t c = *p;
    c.allow = nd_strlist_dup(&p->allow);
    c.deny = nd_strlist_dup(&p->deny);
    return c;
}

void
nd_perms_clear(nd_perms_t *p)
{
    subj_perm_clear(&p->pub);
    subj_perm_clear(&p->sub);
}

nd_perms_t
nd_perms_dup(const nd_perms_t *p)
{
    nd_perms_t c = *p;
    c.pub = subj_perm_dup(&p->pub);
    c.sub = subj_perm_dup(&p->sub);
    return c;
}

void
nd_user_clear(nd_user_t *u)
{
    nd_free(u->name);
    nd_free(u->pass);
    nd_free(u->nkey);
    nd_free(u->account);
    nd_perms_clear(&u->perms);
    memset(u, 0, sizeof(*u));
}

nd_user_t
nd_user_dup(const nd_user_t *u)
{
    nd_user_t c = *u;
    DUPS(&c, name);
    DUPS(&c, pass);
    DUPS(&c, nkey);
    DUPS(&c, account);
    c.perms = nd_perms_dup(&u->perms);
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

/* ---- topology blocks ---------------------------------------------------------------------- */

static void
cluster_free(nd_cluster_opts_t *c)
{
    if (c == NULL)
        return;
    nd_free(c->name);
    nd_free(c->host);
    nd_free(c->user);
    nd_free(c->pass);
    nd_strlist_free(&c->routes);
    nd_tls_opts_free(c->tls);
    nd_free(c->advertise);
    nd_perms_clear(&c->perms);
    nd_strlist_free(&c->pinned_accounts);
    nd_free(c->compression);
    nd_free(c);
}

static nd_cluster_opts_t *
cluster_dup(const nd_cluster_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_cluster_opts_t *c = nd_xmalloc(sizeof(*c));
    *c = *s;
    DUPS(c, name);
    DUPS(c, host);
    DUPS(c, user);
    DUPS(c, pass);
    c->routes = nd_strlist_dup(&s->routes);
    c->tls = nd_tls_opts_dup(s->tls);
    DUPS(c, advertise);
    c->perms = nd_perms_dup(&s->perms);
    c->pinned_accounts = nd_strlist_dup(&s->pinned_accounts);
    DUPS(c, compression);
    return c;
}

void
nd_gateway_remote_clear(nd_gateway_remote_t *r)
{
    nd_free(r->name);
    nd_strlist_free(&r->urls);
    nd_tls_opts_free(r->tls);
    memset(r, 0, sizeof(*r));
}

static void
gateway_free(nd_gateway_opts_t *g)
{
    if (g == NULL)
        return;
    nd_free(g->name);
    nd_free(g->host);
    nd_free(g->user);
    nd_free(g->pass);
    nd_tls_opts_free(g->tls);
    nd_free(g->advertise);
    for (size_t i = 0; i < g->ngateways; i++)
        nd_gateway_remote_clear(&g->gateways[i]);
    nd_free(g->gateways);
    nd_free(g);
}

static nd_gateway_opts_t *
gateway_dup(const nd_gateway_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_gateway_opts_t *g = nd_xmalloc(sizeof(*g));
    *g = *s;
    DUPS(g, name);
    DUPS(g, host);
    DUPS(g, user);
    DUPS(g, pass);
    g->tls = nd_tls_opts_dup(s->tls);
    DUPS(g, advertise);
    g->gateways = s->ngateways ? nd_xmalloc(s->ngateways * sizeof(*g->gateways)) : NULL;
    for (size_t i = 0; i < s->ngateways; i++) {
        g->gateways[i].name = sdup(s->gateways[i].name);
        g->gateways[i].urls = nd_strlist_dup(&s->gateways[i].urls);
        g->gateways[i].tls = nd_tls_opts_dup(s->gateways[i].tls);
    }
    return g;
}

void
nd_leaf_remote_clear(nd_leaf_remote_t *r)
{
    nd_strlist_free(&r->urls);
    nd_free(r->account);
    nd_free(r->credentials);
    nd_tls_opts_free(r->tls);
    nd_strlist_free(&r->deny_imports);
    nd_strlist_free(&r->deny_exports);
    nd_free(r->compression);
    memset(r, 0, sizeof(*r));
}

static void
leaf_free(nd_leaf_opts_t *l)
{
    if (l == NULL)
        return;
    nd_free(l->host);
    nd_free(l->user);
    nd_free(l->pass);
    nd_free(l->account);
    nd_users_free(l->users, l->nusers);
    for (size_t i = 0; i < l->nremotes; i++)
        nd_leaf_remote_clear(&l->remotes[i]);
    nd_free(l->remotes);
    nd_tls_opts_free(l->tls);
    nd_free(l->advertise);
    nd_free(l->min_version);
    nd_free(l->compression);
    nd_free(l);
}

static nd_leaf_opts_t *
leaf_dup(const nd_leaf_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_leaf_opts_t *l = nd_xmalloc(sizeof(*l));
    *l = *s;
    DUPS(l, host);
    DUPS(l, user);
    DUPS(l, pass);
    DUPS(l, account);
    l->users = users_dup(s->users, s->nusers);
    l->remotes = s->nremotes ? nd_xmalloc(s->nremotes * sizeof(*l->remotes)) : NULL;
    for (size_t i = 0; i < s->nremotes; i++) {
        nd_leaf_remote_t *r = &l->remotes[i];
        *r = s->remotes[i];
        r->urls = nd_strlist_dup(&s->remotes[i].urls);
        DUPS(r, account);
        DUPS(r, credentials);
        r->tls = nd_tls_opts_dup(s->remotes[i].tls);
        r->deny_imports = nd_strlist_dup(&s->remotes[i].deny_imports);
        r->deny_exports = nd_strlist_dup(&s->remotes[i].deny_exports);
        DUPS(r, compression);
    }
    l->tls = nd_tls_opts_dup(s->tls);
    DUPS(l, advertise);
    DUPS(l, min_version);
    DUPS(l, compression);
    return l;
}

static void
js_free(nd_js_opts_t *j)
{
    if (j == NULL)
        return;
    nd_free(j->domain);
    nd_free(j->key);
    nd_free(j->prev_key);
    nd_free(j->extension_hint);
    nd_free(j->unique_tag);
    nd_free(j);
}

static nd_js_opts_t *
js_dup(const nd_js_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_js_opts_t *j = nd_xmalloc(sizeof(*j));
    *j = *s;
    DUPS(j, domain);
    DUPS(j, key);
    DUPS(j, prev_key);
    DUPS(j, extension_hint);
    DUPS(j, unique_tag);
    return j;
}

static void
mqtt_free(nd_mqtt_opts_t *m)
{
    if (m == NULL)
        return;
    nd_free(m->host);
    nd_tls_opts_free(m->tls);
    nd_free(m->user);
    nd_free(m->pass);
    nd_free(m->token);
    nd_free(m->no_auth_user);
    nd_free(m->js_domain);
    nd_free(m);
}

static nd_mqtt_opts_t *
mqtt_dup(const nd_mqtt_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_mqtt_opts_t *m = nd_xmalloc(sizeof(*m));
    *m = *s;
    DUPS(m, host);
    m->tls = nd_tls_opts_dup(s->tls);
    DUPS(m, user);
    DUPS(m, pass);
    DUPS(m, token);
    DUPS(m, no_auth_user);
    DUPS(m, js_domain);
    return m;
}

static void
ws_free(nd_ws_opts_t *w)
{
    if (w == NULL)
        return;
    nd_free(w->host);
    nd_free(w->advertise);
    nd_tls_opts_free(w->tls);
    nd_strlist_free(&w->allowed_origins);
    nd_free(w->user);
    nd_free(w->pass);
    nd_free(w->token);
    nd_free(w->jwt_cookie);
    nd_free(w->user_cookie);
    nd_free(w->pass_cookie);
    nd_free(w->token_cookie);
    nd_free(w->no_auth_user);
    nd_strlist_free(&w->headers);
    nd_free(w);
}

static nd_ws_opts_t *
ws_dup(const nd_ws_opts_t *s)
{
    if (s == NULL)
        return NULL;
    nd_ws_opts_t *w = nd_xmalloc(sizeof(*w));
    *w = *s;
    DUPS(w, host);
    DUPS(w, advertise);
    w->tls = nd_tls_opts_dup(s->tls);
    w->allowed_origins = nd_strlist_dup(&s->allowed_origins);
    DUPS(w, user);
    DUPS(w, pass);
    DUPS(w, token);
    DUPS(w, jwt_cookie);
    DUPS(w, user_cookie);
    DUPS(w, pass_cookie);
    DUPS(w, token_cookie);
    DUPS(w, no_auth_user);
    w->headers = nd_strlist_dup(&s->headers);
    return w;
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
    cluster_free(o->cluster);
    gateway_free(o->gateway);
    leaf_free(o->leaf);
    js_free(o->js);
    nd_strlist_free(&o->js_default_domains);
    mqtt_free(o->mqtt);
    ws_free(o->ws);
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
    dst->cluster = cluster_dup(src->cluster);
    dst->gateway = gateway_dup(src->gateway);
    dst->leaf = leaf_dup(src->leaf);
    dst->js = js_dup(src->js);
    dst->js_default_domains = nd_strlist_dup(&src->js_default_domains);
    dst->mqtt = mqtt_dup(src->mqtt);
    dst->ws = ws_dup(src->ws);
    dst->operators = nd_strlist_dup(&src->operators);
    dst->trusted_keys = nd_strlist_dup(&src->trusted_keys);
    dst->resolver = resolver_dup(src->resolver);
    dst->resolver_tls = nd_tls_opts_dup(src->resolver_tls);
    dst->resolver_preload = nd_strlist_dup(&src->resolver_preload);
    dst->resolver_pinned_accounts = nd_strlist_dup(&src->resolver_pinned_accounts);
}
