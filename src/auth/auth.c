/* Static authentication snapshots and the CONNECT check; see auth.h. */
#include "auth/auth.h"
#include "subj/interest.h"

#include <stdio.h>
#include <string.h>

#include "auth/acct_route.h"
#include "auth/dn.h"
#include "auth/jwt.h"
#include "actors/epoch.h"
#include "util/log.h"
#include "util/nkey.h"
#include "actors/alloc.h"
#include "auth/passwd.h"

static char *
dup_or_null(const char *s)
{
    return s != NULL ? nd_xstrdup(s) : NULL;
}

static bool blank(const char *s);

/* The fingerprint: every option the snapshot depends on, each string followed by a NUL. */
typedef struct fp {
    char *p;
    size_t len, cap;
} fp_t;

static void
fp_add(fp_t *f, const char *s)
{
    if (s == NULL)
        s = "\x01"; /* absent differs from empty */
    size_t n = strlen(s) + 1;
    if (f->len + n > f->cap) {
        f->cap = (f->len + n) * 2 + 64;
        f->p = nd_xrealloc(f->p, f->cap);
    }
    memcpy(f->p + f->len, s, n);
    f->len += n;
}

static void
fp_num(fp_t *f, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    fp_add(f, b);
}

static void
fp_list(fp_t *f, const nd_strlist_t *l)
{
    fp_num(f, (int64_t)l->n);
    for (size_t i = 0; i < l->n; i++)
        fp_add(f, l->v[i]);
}

static void
fp_perms(fp_t *f, const nd_perms_t *p)
{
    fp_num(f, p->pub_set | p->sub_set << 1 | p->resp_set << 2 | p->pub.allow_set << 3 |
                  p->pub.deny_set << 4 | p->sub.allow_set << 5 | p->sub.deny_set << 6);
    fp_list(f, &p->pub.allow);
    fp_list(f, &p->pub.deny);
    fp_list(f, &p->sub.allow);
    fp_list(f, &p->sub.deny);
    fp_num(f, p->resp_max_msgs);
    fp_num(f, p->resp_expires_ms);
}

static void
fingerprint(nd_auth_t *a, const nd_opts_t *o)
{
    fp_t f = {0};
    fp_add(&f, o->user);
    fp_add(&f, o->pass);
    fp_add(&f, o->token);
    fp_add(&f, o->no_auth_user);
    fp_num(&f, a->timeout_ms);
    if (o->ws != NULL) {
        fp_add(&f, o->ws->user);
        fp_add(&f, o->ws->pass);
        fp_add(&f, o->ws->token);
        fp_add(&f, o->ws->no_auth_user);
    }
    fp_list(&f, &o->operators);
    fp_list(&f, &o->resolver_preload);
    for (size_t i = 0; i < o->naccounts; i++) {
        const nd_account_opts_t *ao = &o->accounts[i];
        fp_add(&f, ao->name);
        fp_num(&f, (int64_t)ao->nexports);
        for (size_t k = 0; k < ao->nexports; k++) {
            const nd_export_t *x = &ao->exports[k];
            fp_num(&f, x->service);
            fp_add(&f, x->subject);
            fp_list(&f, &x->accounts);
            fp_num(&f, x->resp_type);
            fp_num(&f, x->resp_threshold_ms);
        }
        fp_num(&f, (int64_t)ao->nimports);
        for (size_t k = 0; k < ao->nimports; k++) {
            const nd_import_t *im = &ao->imports[k];
            fp_num(&f, im->service);
            fp_add(&f, im->account);
            fp_add(&f, im->subject);
            fp_add(&f, im->to);
            fp_add(&f, im->prefix);
        }
        fp_num(&f, (int64_t)ao->nmappings);
        for (size_t k = 0; k < ao->nmappings; k++) {
            const nd_mapping_t *m = &ao->mappings[k];
            fp_add(&f, m->src);
            fp_num(&f, (int64_t)m->ndests);
            for (size_t d = 0; d < m->ndests; d++) {
                fp_add(&f, m->dests[d].subject);
                fp_num(&f, m->dests[d].weight);
                fp_add(&f, m->dests[d].cluster);
            }
        }
    }
    for (size_t i = 0; i < o->nusers; i++) {
        const nd_user_t *u = &o->users[i];
        fp_add(&f, u->name);
        fp_add(&f, u->pass);
        fp_add(&f, u->nkey);
        fp_add(&f, u->account);
        fp_num(&f, u->conn_types);
        fp_num(&f, u->has_perms);
        if (u->has_perms)
            fp_perms(&f, &u->perms);
    }
    a->fingerprint = f.p;
    a->fp_len = f.len;
}

bool
nd_auth_same(const nd_auth_t *a, const nd_auth_t *b)
{
    return a->fp_len == b->fp_len && memcmp(a->fingerprint, b->fingerprint, a->fp_len) == 0;
}

static void
add_list(nd_permset_t *p, nd_perms_kind_t kind, const nd_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        /* Invalid entries were reported by the config parser; the set skips them as well. */
        nd_perms_add_t r = nd_perms_add(p, kind, l->v[i], strlen(l->v[i]));
        (void)r;
    }
}

nd_permset_t *
nd_perms_build(const nd_perms_t *cp)
{
    if (!cp->pub_set && !cp->sub_set && !cp->resp_set)
        return NULL;
    nd_permset_t *p = nd_perms_new();
    if (cp->pub_set) {
        if (cp->pub.allow_set)
            nd_perms_set_pub_allow_present(p);
        add_list(p, ND_PERMS_PUB_ALLOW, &cp->pub.allow);
        add_list(p, ND_PERMS_PUB_DENY, &cp->pub.deny);
    }
    if (cp->sub_set) {
        add_list(p, ND_PERMS_SUB_ALLOW, &cp->sub.allow);
        add_list(p, ND_PERMS_SUB_DENY, &cp->sub.deny);
    }
    if (cp->resp_set) {
        /* The config keeps "unlimited" as a negative value; the set takes <= 0 after defaults
         * were applied, and 0 would mean "default" there, so pass -1. */
        int64_t max = cp->resp_max_msgs < 0 ? -1 : cp->resp_max_msgs;
        int64_t ttl = cp->resp_expires_ms < 0 ? -1 : cp->resp_expires_ms * 1000000LL;
        nd_perms_set_responses(p, max, ttl);
    }
    nd_perms_seal(p);
    return p;
}

static nd_acct_t *
find_acct(const nd_auth_t *a, const char *name)
{
    if (name == NULL)
        return a->accts[0].acct;
    for (size_t i = 0; i < a->naccts; i++)
        if (strcmp(a->accts[i].name, name) == 0)
            return a->accts[i].acct;
    return a->accts[0].acct;
}

nd_acct_t *
nd_auth_find(const nd_auth_t *a, const char *name, size_t len)
{
    for (size_t i = 0; i < a->naccts; i++)
        if (strlen(a->accts[i].name) == len && memcmp(a->accts[i].name, name, len) == 0)
            return a->accts[i].acct;
    return NULL;
}

nd_auth_acct_t *
nd_auth_add_acct(nd_ctx_t *ctx, nd_auth_t *a, const char *name, const nd_auth_t *prev)
{
    for (size_t i = 0; i < a->naccts; i++)
        if (strcmp(a->accts[i].name, name) == 0)
            return &a->accts[i];
    nd_acct_t *acct = NULL;
    for (size_t i = 0; prev != NULL && i < prev->naccts; i++) {
        if (strcmp(prev->accts[i].name, name) == 0) {
            acct = prev->accts[i].acct;
            nd_actor_ref(&acct->actor);
            break;
        }
    }
    if (acct == NULL) {
        acct = nd_acct_new(ctx, name, strlen(name));
        if (acct != NULL)
            nd_interest_inherit(acct, a->accts[0].acct); /* routes hear of it as of $G */
    }
    if (acct == NULL)
        return NULL; /* a name over ND_ACCT_NAME_MAX: its users land in $G (find_acct) */
    a->accts = nd_xrealloc(a->accts, (a->naccts + 1) * sizeof(*a->accts));
    nd_auth_acct_t *e = &a->accts[a->naccts++];
    memset(e, 0, sizeof(*e));
    e->name = nd_xstrdup(name);
    e->acct = acct;
    e->max_conns = e->max_subs = e->max_payload = -1;
    return e;
}

static void
add_acct(nd_ctx_t *ctx, nd_auth_t *a, const char *name, const nd_auth_t *prev)
{
    (void)nd_auth_add_acct(ctx, a, name, prev);
}

static bool
is_plain(const char *s)
{
    return s != NULL && !nd_passwd_is_bcrypt(s, strlen(s));
}

static bool
plaintext(const nd_auth_t *a)
{
    if (is_plain(a->pass) || is_plain(a->token))
        return true;
    for (size_t i = 0; i < a->nusers; i++)
        if (is_plain(a->users[i].pass))
            return true;
    return false;
}

/* A password (or token) that starts like a bcrypt hash is checked as one, so a malformed hash
 * (the "$2a$11$..." of an example, a hash cut short when pasted) locks its user out without a
 * word from nats-server. natsd says so at every load of the config (start and reload); the
 * value itself is never logged. */
static void
warn_bad_bcrypt_one(const char *what, const char *who, const char *v)
{
    if (v != NULL && nd_passwd_is_bcrypt(v, strlen(v)) && !nd_passwd_bcrypt_valid(v, strlen(v)))
        nd_log_warn("%s%s%s%s looks like a bcrypt hash but is not a valid one: no client can "
                    "match it (natsd --passwd makes a hash)",
                    what, who ? " of user \"" : "", who ? who : "", who ? "\"" : "");
}

static void
warn_bad_bcrypt(const nd_auth_t *a)
{
    warn_bad_bcrypt_one("Password", a->user, a->pass);
    warn_bad_bcrypt_one("Token", NULL, a->token);
    for (size_t i = 0; i < a->nusers; i++)
        warn_bad_bcrypt_one("Password", a->users[i].name, a->users[i].pass);
}

/* The user named (or with the nkey) name, or NULL. */
static const nd_auth_user_t *
find_user(const nd_auth_t *a, const char *name)
{
    for (size_t i = 0; name != NULL && i < a->nusers; i++) {
        const nd_auth_user_t *u = &a->users[i];
        if ((u->name != NULL && strcmp(u->name, name) == 0) ||
            (u->nkey != NULL && strcmp(u->nkey, name) == 0))
            return u;
    }
    return NULL;
}

nd_auth_t *
nd_auth_new(nd_ctx_t *ctx, const nd_opts_t *o, nd_acct_t *gacct, const nd_auth_t *prev)
{
    nd_auth_t *a = nd_new(nd_auth_t);
    atomic_init(&a->refs, 1);
    a->accts = nd_xcalloc(1, sizeof(*a->accts));
    a->accts[0].max_conns = a->accts[0].max_subs = a->accts[0].max_payload = -1;
    a->accts[0].name = nd_xstrdup("$G");
    a->accts[0].acct = gacct;
    nd_actor_ref(&gacct->actor);
    a->naccts = 1;
    for (size_t i = 0; i < o->naccounts; i++) {
        const nd_account_opts_t *ao = &o->accounts[i];
        nd_auth_acct_t *e =
            strcmp(ao->name, "$G") != 0 ? nd_auth_add_acct(ctx, a, ao->name, prev) : &a->accts[0];
        if (e != NULL) {
            e->declared = true;
            e->js = ao->js;
        }
    }
    for (size_t i = 0; i < o->nusers; i++)
        if (o->users[i].account != NULL)
            add_acct(ctx, a, o->users[i].account, prev);
    /* nats-server creates "$SYS" when it is the system account and no accounts block declares
     * it: by default (nd_opts_system_account) or named by system_account. In operator mode the
     * account comes from its JWT (auth_jwt.c). */
    const char *sys = nd_opts_system_account(o);
    if (sys != NULL && strcmp(sys, "$SYS") == 0 && o->operators.n == 0 && o->trusted_keys.n == 0)
        add_acct(ctx, a, sys, prev);

    a->user = dup_or_null(o->user);
    a->pass = dup_or_null(o->pass);
    a->token = dup_or_null(o->token);
    a->timeout_ms =
        o->auth_timeout_s > 0 ? (int64_t)(o->auth_timeout_s * 1000.0) : ND_AUTH_DEFAULT_TIMEOUT_MS;
    a->timeout_default = !(o->auth_timeout_s > 0);
    if (o->nusers > 0)
        a->users = nd_xcalloc(o->nusers, sizeof(*a->users));
    for (size_t i = 0; i < o->nusers; i++) {
        const nd_user_t *cu = &o->users[i];
        nd_auth_user_t *u = &a->users[a->nusers++];
        u->name = dup_or_null(cu->name);
        u->pass = dup_or_null(cu->pass);
        u->nkey = dup_or_null(cu->nkey);
        u->perms = cu->has_perms ? nd_perms_build(&cu->perms) : NULL;
        u->acct = find_acct(a, cu->account);
        u->conn_types = cu->conn_types;
        if (u->nkey != NULL)
            a->nonce = true;
    }
    a->required = a->nusers > 0 || a->token != NULL || a->user != NULL;
    if (o->operators.n > 0) {
        /* Operator mode: only user JWTs log in (nats-server refuses users and tokens in the
         * config together with an operator). */
        nd_auth_jwt_load(ctx, a, o, prev);
        a->op_mode = true;
        a->required = true;
        a->nonce = true;
    }
    a->no_auth = find_user(a, o->no_auth_user);
    const nd_ws_opts_t *wo = o->ws;
    if (wo != NULL && (!blank(wo->user) || !blank(wo->token) || !blank(wo->no_auth_user))) {
        a->ws.override = true;
        a->ws.user = dup_or_null(wo->user);
        a->ws.pass = dup_or_null(wo->pass);
        a->ws.token = dup_or_null(wo->token);
        a->ws.no_auth = find_user(a, wo->no_auth_user);
    }
    if (wo != NULL && wo->auth_timeout_s > 0)
        a->ws.timeout_ms = (int64_t)(wo->auth_timeout_s * 1000.0);
    a->info_auth_required = a->required && a->no_auth == NULL;
    nd_acct_route_build(a, o);
    fingerprint(a, o);
    if (prev == NULL && plaintext(a))
        nd_log_warn("Plaintext passwords detected, use nkeys or bcrypt"); /* as nats-server */
    warn_bad_bcrypt(a);
    return a;
}

nd_auth_t *
nd_auth_ref(nd_auth_t *a)
{
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
    return a;
}

void
nd_auth_unref(nd_ctx_t *ctx, nd_auth_t *a)
{
    if (a == NULL)
        return;
    /* acq_rel: the last holder sees every other holder's reads done before it frees. */
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < a->nusers; i++) {
        nd_auth_user_t *u = &a->users[i];
        nd_free(u->name);
        if (u->pass != NULL)
            nd_nkey_wipe(u->pass, strlen(u->pass));
        nd_free(u->pass);
        nd_free(u->nkey);
        if (u->perms != NULL)
            nd_perms_unref(u->perms);
    }
    nd_free(a->users);
    nd_auth_jwt_free(a);
    for (size_t i = 0; i < a->naccts; i++) {
        nd_free(a->accts[i].name);
        nd_acct_route_free(a->accts[i].route);
        nd_actor_unref(ctx, &a->accts[i].acct->actor);
    }
    nd_free(a->accts);
    if (a->fingerprint != NULL)
        nd_nkey_wipe(a->fingerprint, a->fp_len); /* it holds the passwords */
    nd_free(a->fingerprint);
    nd_free(a->user);
    if (a->pass != NULL)
        nd_nkey_wipe(a->pass, strlen(a->pass));
    nd_free(a->pass);
    if (a->token != NULL)
        nd_nkey_wipe(a->token, strlen(a->token));
    nd_free(a->token);
    nd_free(a->ws.user);
    if (a->ws.pass != NULL)
        nd_nkey_wipe(a->ws.pass, strlen(a->ws.pass));
    nd_free(a->ws.pass);
    if (a->ws.token != NULL)
        nd_nkey_wipe(a->ws.token, strlen(a->ws.token));
    nd_free(a->ws.token);
    nd_free(a);
}

static bool
blank(const char *s)
{
    return s == NULL || s[0] == '\0';
}

bool
nd_auth_creds_empty(const nd_auth_t *a, const nd_auth_creds_t *cr)
{
    /* nats-server 2.9.10 (checked): empty strings count as absent, a JWT outside operator mode
     * and an nkey without nkey users configured are not looked at. */
    return blank(cr->user) && blank(cr->pass) && blank(cr->token) && (blank(cr->nkey) || !a->nonce);
}

static bool
pass_ok(const char *stored, const char *given)
{
    if (stored == NULL)
        return given == NULL || given[0] == '\0';
    if (given == NULL)
        given = "";
    return nd_passwd_check(stored, strlen(stored), given, strlen(given));
}

/* Client connections are STANDARD unless the credentials say otherwise (a WebSocket or an MQTT
 * connection; leaf nodes come with their listener). */
static bool
type_ok(const nd_auth_user_t *u, const nd_auth_creds_t *cr)
{
    uint32_t t = cr->conn_type != 0 ? cr->conn_type : ND_CONN_TYPE_STANDARD;
    return u->conn_types == 0 || (u->conn_types & t) != 0;
}

static void
grant(nd_auth_grant_t *g, const nd_auth_user_t *u)
{
    g->user = u->name != NULL ? u->name : u->nkey;
    g->perms = u->perms;
    g->acct = u->acct;
}

bool
nd_auth_check(const nd_auth_t *a, const nd_auth_creds_t *cr, nd_auth_grant_t *g)
{
    memset(g, 0, sizeof(*g));
    g->acct = a->accts[0].acct;
    g->max_conns = g->max_subs = g->max_payload = -1;
    /* A WebSocket client under the websocket override meets its user, token and
     * no_auth_user; the users (and operator mode) stay the server's. */
    bool ov = cr->conn_type == ND_CONN_TYPE_WEBSOCKET && a->ws.override;
    const char *s_user = ov ? a->ws.user : a->user, *s_pass = ov ? a->ws.pass : a->pass;
    const char *s_token = ov ? a->ws.token : a->token;
    const nd_auth_user_t *no_auth = ov ? a->ws.no_auth : a->no_auth;
    if (!a->required && !ov)
        return true;
    if (a->op_mode)
        return nd_auth_jwt_check(a, cr, g);
    if (a->nusers > 0) {
        if (cr->tls_map) {
            for (size_t k = 0; cr->tls_names != NULL && k < cr->tls_names->n; k++) {
                for (size_t i = 0; i < a->nusers; i++) {
                    const nd_auth_user_t *u = &a->users[i];
                    /* A DN matches structurally (dn.h), as nats-server's ldap.DN compare. */
                    if (u->name != NULL && (strcmp(u->name, cr->tls_names->v[k]) == 0 ||
                                            nd_dn_match(u->name, cr->tls_names->v[k]))) {
                        if (!type_ok(u, cr))
                            return false;
                        grant(g, u);
                        return true;
                    }
                }
            }
            return false;
        }
        if (cr->no_auth_user != NULL && nd_auth_creds_empty(a, cr)) {
            /* A listener's own no_auth_user (mqtt {}): that user, found by name. */
            for (size_t i = 0; i < a->nusers; i++) {
                const nd_auth_user_t *u = &a->users[i];
                if (u->name != NULL && strcmp(u->name, cr->no_auth_user) == 0) {
                    if (!type_ok(u, cr))
                        return false;
                    grant(g, u);
                    return true;
                }
            }
            return false;
        }
        if (no_auth != NULL && nd_auth_creds_empty(a, cr)) {
            if (!type_ok(no_auth, cr))
                return false;
            grant(g, no_auth);
            return true;
        }
        if (!blank(cr->nkey) && a->nonce) { /* nkey users exist (nats-server's hasNkeys) */
            for (size_t i = 0; i < a->nusers; i++) {
                const nd_auth_user_t *u = &a->users[i];
                if (u->nkey == NULL || strcmp(u->nkey, cr->nkey) != 0)
                    continue;
                if (cr->nonce == NULL || cr->sig == NULL ||
                    !nd_jwt_verify_nonce(u->nkey, strlen(u->nkey), ND_NKEY_PREFIX_USER, cr->nonce,
                                         strlen(cr->nonce), cr->sig, strlen(cr->sig)) ||
                    !type_ok(u, cr))
                    return false;
                grant(g, u);
                return true;
            }
            return false;
        }
        if (cr->user != NULL) {
            for (size_t i = 0; i < a->nusers; i++) {
                const nd_auth_user_t *u = &a->users[i];
                if (u->name == NULL || strcmp(u->name, cr->user) != 0)
                    continue;
                if (!pass_ok(u->pass, cr->pass) || !type_ok(u, cr))
                    return false;
                grant(g, u);
                return true;
            }
        }
        return false;
    }
    if (s_token != NULL)
        return cr->token != NULL && pass_ok(s_token, cr->token);
    if (s_user != NULL) {
        if (cr->user == NULL || strcmp(cr->user, s_user) != 0 || !pass_ok(s_pass, cr->pass))
            return false;
        g->user = s_user;
        return true;
    }
    return false;
}

/* ---- the server's slot ---- */

nd_auth_slot_t *
nd_auth_slot_new(void)
{
    nd_auth_slot_t *s = nd_new(nd_auth_slot_t);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hook_mu, NULL);
    return s;
}

nd_auth_t *
nd_auth_slot_get(nd_auth_slot_t *s)
{
    pthread_mutex_lock(&s->mu);
    nd_auth_t *a = s->cur != NULL ? nd_auth_ref(s->cur) : NULL;
    pthread_mutex_unlock(&s->mu);
    return a;
}

void
nd_auth_slot_set(nd_ctx_t *ctx, nd_auth_slot_t *s, nd_auth_t *a)
{
    pthread_mutex_lock(&s->mu);
    nd_auth_t *old = s->cur;
    s->cur = a;
    for (size_t i = 0; a != NULL && i < a->nusers; i++) {
        if (a->users[i].perms == NULL)
            continue;
        s->kept = nd_xrealloc(s->kept, (s->nkept + 1) * sizeof(*s->kept));
        s->kept[s->nkept++] = nd_perms_ref(a->users[i].perms);
    }
    /* Under the mutex: two installs must not interleave their route stores. */
    nd_acct_route_install(old, a);
    pthread_mutex_unlock(&s->mu);
    if (old != NULL) {
        /* A publisher may still use one of old's routes inside its epoch section: wait for every
         * section that began before the stores above, then old (and its routes) may go. */
        nd_epoch_barrier(ctx->epoch);
    }
    nd_auth_unref(ctx, old);
    if (a == NULL)
        return;
    /* The hook sees the snapshot just installed, or a newer one when installs race: either way
     * the one in force when its call runs. */
    pthread_mutex_lock(&s->hook_mu);
    pthread_mutex_lock(&s->mu);
    nd_auth_install_fn fn = s->on_install;
    void *arg = s->on_install_arg;
    nd_auth_t *cur = fn != NULL && s->cur != NULL ? nd_auth_ref(s->cur) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (cur != NULL) {
        fn(ctx, cur, arg);
        nd_auth_unref(ctx, cur);
    }
    pthread_mutex_unlock(&s->hook_mu);
}

void
nd_auth_slot_on_install(nd_auth_slot_t *s, nd_auth_install_fn fn, void *arg)
{
    pthread_mutex_lock(&s->hook_mu);
    pthread_mutex_lock(&s->mu);
    s->on_install = fn;
    s->on_install_arg = arg;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->hook_mu);
}

nd_permset_t *
nd_auth_slot_keep(nd_auth_slot_t *s, const char *id, nd_permset_t *perms)
{
    pthread_mutex_lock(&s->mu);
    /* Linear: one entry per distinct user JWT that carries permissions, looked up once per
     * CONNECT. A hash table is the next step if operator deployments with many users need it. */
    for (size_t i = 0; i < s->njkept; i++) {
        if (strcmp(s->jkept[i].id, id) == 0) {
            nd_permset_t *p = s->jkept[i].perms;
            pthread_mutex_unlock(&s->mu);
            nd_perms_unref(perms);
            return p;
        }
    }
    s->jkept = nd_xrealloc(s->jkept, (s->njkept + 1) * sizeof(*s->jkept));
    snprintf(s->jkept[s->njkept].id, sizeof s->jkept[s->njkept].id, "%s", id);
    s->jkept[s->njkept++].perms = perms;
    pthread_mutex_unlock(&s->mu);
    return perms;
}

void
nd_auth_slot_clear(nd_ctx_t *ctx, nd_auth_slot_t *s)
{
    nd_auth_slot_set(ctx, s, NULL);
}

void
nd_auth_slot_free(nd_auth_slot_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nkept; i++)
        nd_perms_unref(s->kept[i]);
    nd_free(s->kept);
    for (size_t i = 0; i < s->njkept; i++)
        nd_perms_unref(s->jkept[i].perms);
    nd_free(s->jkept);
    pthread_mutex_destroy(&s->hook_mu);
    pthread_mutex_destroy(&s->mu);
    nd_free(s);
}
