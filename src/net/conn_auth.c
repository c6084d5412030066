/* Authentication, permissions and account binding of client connections (inventory §1.1, §5.1,
 * §5.2, §5.4; nats-server server/client.go processConnect, authViolation, pubAllowed,
 * canSubscribe, deliverMsg; server/auth.go; server/reload.go reloadAuthorization).
 *
 * - At start (nd_conn_auth_begin) the connection looks at the server's auth snapshot (auth.h):
 *   without credentials configured it is authenticated at once and nothing below costs it
 *   anything. Otherwise it makes a nonce for the INFO when nkey users exist and arms the auth
 *   timer (default 2 s; "Authentication Timeout" then close).
 * - The first CONNECT is checked against the snapshot in force then; a failure writes
 *   -ERR 'Authorization Violation' and closes with "Authentication Failure" (nats-server's
 *   AuthenticationViolation). Only the first CONNECT authenticates: later ones update the
 *   options but keep the identity. A first op other than CONNECT is refused the same way, unless
 *   no_auth_user is set: then the client is logged in as that user (parser.go).
 * - Success binds the connection to the user's account (its subscriptions and publishes go to
 *   that account's sublist only) and to the user's permission set: c->perms (owner-only caches,
 *   one lookup per PUB on the hot path, nothing at all for connections without permissions) and
 *   c->rperms, which publishers read when delivering to us: a subscribe deny that overlaps a
 *   wildcard or queue subscription is enforced at delivery (S-2 in reliability.md), and reply
 *   subjects of messages delivered to a user with allow_responses are sent to us ahead of the
 *   message (ND_CONN_MSG_REPLY) so we may answer them.
 * - Violations write the exact nats-server texts and never close the connection.
 * - Operator mode (auth_jwt.c): a user JWT login also counts the connection against its
 *   account's conn limit (acct->jwt_conns; over it: -ERR 'maximum account active connections
 *   exceeded' and the close, as nats-server's registerWithAccount), takes the subs limit
 *   (client.c; a limit of 0 gets -ERR 'maximum subscriptions exceeded' and the close at once,
 *   as nats-server's applyAccountLimits), and re-arms auth_timer for the JWT's expiry: then
 *   -ERR 'User Authentication Expired' and the close (nats-server's userExpired /
 *   "Authentication Expired"); the end of the user's connect-time window ("times"), when it
 *   comes first, closes it the same way (nats-server's setExpiration). The permission set of a
 *   user JWT is kept by the auth slot by JWT id.
 * - A reload that changes the authorization sends ND_CONN_MSG_REAUTH to every client: each
 *   re-checks the credentials it connected with against the new snapshot and closes with
 *   -ERR 'Authorization Violation' when they no longer pass (reloadAuthorization). A client that
 *   still passes takes its user's new permissions, and each of its subscriptions that they no
 *   longer allow is removed with -ERR 'Permissions Violation for Subscription to "s" (sid "1")'
 *   (processSubsOnConfigReload). A user moved to another account is closed the same way as a
 *   failed one (nats-server moves the connection and its subscriptions; natsd does not yet).
 */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "net/conn_int.h"
#include "util/gojson.h"
#include "auth/jwt.h"
#include "util/log.h"
#include "net/tls.h"

/* deliver.c reads rperms for every delivery: it must share the cache line of `slow`, which it
 * reads anyway, so recipients without permissions cost no extra cache miss. */
_Static_assert(offsetof(nd_conn_t, rperms) / 64 == offsetof(nd_conn_t, slow) / 64,
               "rperms shares slow's cache line");
_Static_assert(sizeof(((nd_conn_t *)0)->nonce) >= ND_JWT_NONCE_LEN + 1, "room for the nonce");

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void
nd_conn_auth_begin(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_auth_t *a = c->srv->auth != NULL ? nd_auth_slot_get(c->srv->auth) : NULL;
    /* MQTT over WebSocket follows the mqtt block's rules, not the websocket block's (nats-server's
     * clientType is MQTT for it). */
    bool ws = c->ws != NULL && c->proto == NULL;
    if (a == NULL || !(a->required || (ws && a->ws.override))) {
        c->authed = true;
        nd_auth_unref(ctx, a);
        return;
    }
    if (a->nonce && !nd_jwt_nonce(c->nonce))
        c->nonce[0] = '\0'; /* no nonce: nkey users cannot log in on this connection */
    int64_t ms = a->timeout_ms;
    if (ws && a->ws.timeout_ms > 0)
        ms = a->ws.timeout_ms; /* websocket { authorization { timeout } } */
    else if (a->timeout_default && c->tls != NULL)
        ms = c->tls->timeout_ms + 1000; /* nats-server's getDefaultAuthTimeout */
    nd_timer_start(ctx, &c->auth_timer, (uint64_t)ms * 1000000ull, 0);
    nd_auth_unref(ctx, a);
}

static void
violation(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->cr_user != NULL)
        nd_log_error("%s:%d - %s:%llu - authentication error - User \"%s\"", nd_conn_lhost(c),
                     c->port, nd_conn_log_tag(c), (unsigned long long)c->cid, c->cr_user);
    else
        nd_log_error("%s:%d - %s:%llu - authentication error", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
    nd_conn_write_err(c, ND_ERR_AUTH_VIOLATION);
    nd_conn_close(ctx, c, ND_CLOSE_AUTH_FAILURE);
}

/* Sends the INFO again with our own max_payload, as nats-server's applyAccountLimits does for
 * clients that take asynchronous INFO (protocol >= 1). The template's other fields stay; the
 * nonce is not repeated (checked against 2.9.10). */
static void
write_payload_info(nd_ctx_t *ctx, nd_conn_t *c, int64_t max_payload)
{
    static const char key[] = "\"max_payload\":";
    char num[32];
    int k = snprintf(num, sizeof num, "%lld", (long long)max_payload);
    nd_epoch_enter(ctx);
    /* acquire: pairs with the release exchange in nd_server_publish_info. */
    const nd_server_info_t *info = atomic_load_explicit(&c->srv->info, memory_order_acquire);
    const char *t = info->text, *end = info->text + info->len;
    const char *at = memmem(t, info->len, key, sizeof key - 1);
    if (at != NULL) {
        at += sizeof key - 1;
        nd_conn_write(c, t, (size_t)(at - t));
        nd_conn_write(c, num, (size_t)k);
        while (at < end && *at >= '0' && *at <= '9')
            at++;
        nd_conn_write(c, at, (size_t)(end - at));
    }
    nd_epoch_exit(ctx);
    if (at == NULL)
        return; /* a template without max_payload: nothing sensible to send */
    char tail[128];
    int n = snprintf(tail, sizeof tail, ",\"client_id\":%llu,\"client_ip\":\"%s\"} \r\n",
                     (unsigned long long)c->cid, c->ip);
    nd_conn_write(c, tail, (size_t)n);
}

/* Operator mode: counts the connection against its account's conn limit and arms the expiry
 * of the user JWT. Returns: false (the -ERR written, the connection closing) over the limit. */
static bool
bind_jwt(nd_ctx_t *ctx, nd_conn_t *c, const nd_auth_grant_t *g)
{
    /* relaxed: a counter that publishes no other data; one fetch_add per login makes the bound
     * exact even when logins race (each sees the count of those before it). */
    int64_t before = atomic_fetch_add_explicit(&g->acct->jwt_conns, 1, memory_order_relaxed);
    c->acct_counted = true;
    if (g->max_conns >= 0 && before >= g->max_conns) {
        nd_log_error("%s:%d - %s:%llu - maximum account active connections exceeded",
                     nd_conn_lhost(c), c->port, nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_write_err(c, ND_ERR_MAX_ACCOUNT_CONNECTIONS);
        nd_conn_close(ctx, c, ND_CLOSE_MAX_ACCOUNT_CONNECTIONS);
        return false;
    }
    c->jwt_subs_limited = g->max_subs >= 0;
    c->jwt_max_subs = g->max_subs;
    if (g->max_payload >= 0) {
        /* +1 so that 0 stays "none" in a zeroed connection; a limit of 0 refuses any payload. */
        c->jwt_max_payload = g->max_payload + 1;
        int64_t server = nd_server_live_get(c->srv, max_payload);
        int64_t eff = nd_conn_auth_max_payload(c, server);
        nd_proto_parser_set_limits(&c->parser, c->parser.max_control_line, eff);
        if (eff != server && c->protocol >= 1)
            write_payload_info(ctx, c, eff);
    }
    if (c->jwt_subs_limited && c->jwt_max_subs <= 0) {
        /* At its subscription limit before any SUB (a user JWT without "subs" has 0):
         * nats-server's applyAccountLimits sends the error and closes the connection. */
        nd_log_error("%s:%d - %s:%llu - maximum subscriptions exceeded", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_write_err(c, ND_ERR_MAX_SUBSCRIPTIONS);
        nd_conn_close(ctx, c, ND_CLOSE_MAX_SUBSCRIPTIONS);
        return false;
    }
    /* The JWT's expiry or the end of the user's connect-time window, whichever comes first,
     * closes the connection the same way (nats-server's setExpiration). */
    int64_t left_ns = -1;
    if (g->exp > 0) {
        int64_t left = g->exp - (int64_t)time(NULL);
        left_ns = left > 0 ? left * 1000000000LL : 1;
        c->jwt_acct_expiry = g->acct_expiry;
    }
    if (g->window_ns > 0 && (left_ns < 0 || g->window_ns < left_ns)) {
        left_ns = g->window_ns;
        c->jwt_acct_expiry = false;
    }
    if (left_ns > 0) {
        c->jwt_expiring = true;
        nd_timer_start(ctx, &c->auth_timer, (uint64_t)left_ns, 0);
    }
    return true;
}

static bool
apply_grant(nd_ctx_t *ctx, nd_conn_t *c, const nd_auth_grant_t *g)
{
    if (g->acct != c->acct) {
        /* Nothing of ours is in the old account yet: authentication comes before any SUB. */
        nd_actor_ref(&g->acct->actor);
        nd_actor_unref(ctx, &c->acct->actor);
        c->acct = g->acct;
        nd_slcache_fini(&c->cache);
        nd_slcache_init(&c->cache);
    }
    if (g->perms != NULL) {
        nd_perms_conn_init(&c->perms, g->perms);
        /* Kept allocated by the server's auth slot (auth.h). */
        atomic_store_explicit(&c->rperms, g->perms, memory_order_relaxed);
    }
    c->authed = true;
    nd_timer_cancel(ctx, &c->auth_timer);
    nd_connreg_set_user(c->srv->connreg, &c->mon, g->user, nd_acct_name(g->acct));
    if (g->user == g->jwt_user)
        return bind_jwt(ctx, c, g);
    return true;
}

/* A grant of a user JWT owns its permission set: the slot keeps it (auth.h). */
static void
keep_perms(nd_conn_t *c, nd_auth_grant_t *g)
{
    if (g->owns_perms) {
        g->perms = nd_auth_slot_keep(c->srv->auth, g->jwt_id, g->perms);
        g->owns_perms = false;
    }
}

static void
creds_of(const nd_conn_t *c, nd_auth_creds_t *cr)
{
    cr->user = c->cr_user;
    cr->pass = c->cr_pass;
    cr->token = c->cr_token;
    cr->nkey = c->cr_nkey;
    cr->sig = c->cr_sig;
    cr->jwt = c->cr_jwt;
    cr->nonce = c->nonce[0] != '\0' ? c->nonce : NULL;
    cr->ip = c->ip;
    cr->tls_map = c->tls != NULL && c->tls->verify_and_map;
    cr->tls_names = &c->tls_names;
    cr->conn_type = c->kind == ND_CONN_MQTT
                        ? (c->ws != NULL ? ND_CONN_TYPE_MQTT_WS : ND_CONN_TYPE_MQTT)
                    : c->ws != NULL ? ND_CONN_TYPE_WEBSOCKET
                                    : 0;
    cr->no_auth_user = c->no_auth_override;
}

/* A missing or empty CONNECT credential takes the WebSocket upgrade's cookie, if any. */
static void
take_cookie(char **dst, const char *cookie)
{
    if (cookie != NULL && (*dst == NULL || (*dst)[0] == '\0')) {
        nd_free(*dst);
        *dst = nd_xstrdup(cookie);
    }
}

static void
take_str(json_t *o, const char *key, char **dst)
{
    json_t *v = nd_gojson_field(o, key);
    nd_free(*dst);
    *dst = json_is_string(v) ? nd_xstrdup(json_string_value(v)) : NULL;
}

bool
nd_conn_auth_connect(nd_ctx_t *ctx, nd_conn_t *c, json_t *o)
{
    /* The legacy "account" and "new_account" fields are refused on every CONNECT, with or
     * without authentication (nats-server 2.9.10, checked): a client never picks its account. */
    json_t *acc = nd_gojson_field(o, "account");
    if ((json_is_string(acc) && json_string_length(acc) > 0) ||
        json_is_true(nd_gojson_field(o, "new_account"))) {
        violation(ctx, c);
        return false;
    }
    if (c->authed)
        return true;
    /* Read ahead of client.c (same value): bind_jwt's INFO goes only to protocol-1 clients. */
    json_t *proto = nd_gojson_field(o, "protocol");
    if (json_is_integer(proto))
        c->protocol = (int)json_integer_value(proto);
    take_str(o, "user", &c->cr_user);
    take_str(o, "pass", &c->cr_pass);
    take_str(o, "auth_token", &c->cr_token);
    take_str(o, "nkey", &c->cr_nkey);
    take_str(o, "sig", &c->cr_sig);
    take_str(o, "jwt", &c->cr_jwt);
    if (c->ws_cookies != NULL) {
        take_cookie(&c->cr_jwt, c->ws_cookies->jwt);
        take_cookie(&c->cr_user, c->ws_cookies->user);
        take_cookie(&c->cr_pass, c->ws_cookies->pass);
        take_cookie(&c->cr_token, c->ws_cookies->token);
    }
    nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
    nd_auth_creds_t cr;
    nd_auth_grant_t g;
    creds_of(c, &cr);
    bool ok = a != NULL && nd_auth_check(a, &cr, &g);
    if (!ok) {
        nd_auth_unref(ctx, a);
        violation(ctx, c);
        return false;
    }
    /* g borrows from a (the user's name, the account): a stays referenced until apply_grant has
     * copied the name and taken its own reference on the account, since a reload may drop every
     * other reference on a meanwhile. An account that reload removes stays alive through our
     * reference, and the ND_CONN_MSG_REAUTH the reload sends after installing its snapshot
     * reaches us after this CONNECT, so nd_conn_auth_recheck closes us then. */
    keep_perms(c, &g);
    ok = apply_grant(ctx, c, &g);
    nd_auth_unref(ctx, a);
    return ok;
}

bool
nd_conn_auth_login(nd_ctx_t *ctx, nd_conn_t *c, const char *user, const char *pass,
                   const char *own_user, const char *own_pass, const char *own_token,
                   const char *no_auth_user)
{
    nd_free(c->cr_user);
    nd_free(c->cr_pass);
    c->cr_user = user != NULL ? nd_xstrdup(user) : NULL;
    c->cr_pass = pass != NULL ? nd_xstrdup(pass) : NULL;
    if (own_user != NULL || own_token != NULL) {
        /* The listener's own single user or token (nats-server's mqtt/websocket authorization
         * block): it replaces the server's users and binds the global account. */
        bool ok = own_user != NULL
                      ? user != NULL && strcmp(user, own_user) == 0 &&
                            strcmp(pass != NULL ? pass : "", own_pass != NULL ? own_pass : "") == 0
                      : pass != NULL && strcmp(pass, own_token) == 0;
        if (ok) {
            c->authed = true;
            c->auth_own = true; /* a reload's re-check does not apply (nd_conn_auth_recheck) */
            nd_timer_cancel(ctx, &c->auth_timer);
            nd_connreg_set_user(c->srv->connreg, &c->mon, user, nd_acct_name(c->acct));
        }
        return ok;
    }
    if (c->authed)
        return true; /* no authentication required */
    nd_free(c->cr_token);
    /* nats-server also tries the password as a token. */
    c->cr_token = pass != NULL ? nd_xstrdup(pass) : NULL;
    nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
    nd_auth_creds_t cr;
    nd_auth_grant_t g;
    c->no_auth_override = no_auth_user;
    creds_of(c, &cr);
    bool ok = a != NULL && nd_auth_check(a, &cr, &g);
    if (!ok) {
        nd_auth_unref(ctx, a);
        if (c->cr_user != NULL)
            nd_log_error("%s:%d - %s:%llu - authentication error - User \"%s\"", nd_conn_lhost(c),
                         c->port, nd_conn_log_tag(c), (unsigned long long)c->cid, c->cr_user);
        else
            nd_log_error("%s:%d - %s:%llu - authentication error", nd_conn_lhost(c), c->port,
                         nd_conn_log_tag(c), (unsigned long long)c->cid);
        return false;
    }
    keep_perms(c, &g);
    ok = apply_grant(ctx, c, &g);
    nd_auth_unref(ctx, a);
    return ok;
}

bool
nd_conn_auth_first_op(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
    bool ws_ov = a != NULL && c->ws != NULL && a->ws.override;
    bool ok = a != NULL && (ws_ov ? a->ws.no_auth : a->no_auth) != NULL;
    if (ok) {
        nd_auth_creds_t cr = {.conn_type = c->ws != NULL ? ND_CONN_TYPE_WEBSOCKET : 0};
        nd_auth_grant_t g;
        ok = nd_auth_check(a, &cr, &g);
        if (ok) {
            keep_perms(c, &g);
            ok = apply_grant(ctx, c, &g);
        }
        if (!ok && c->closing) {
            nd_auth_unref(ctx, a);
            return false; /* closed by apply_grant with its own error */
        }
    }
    nd_auth_unref(ctx, a);
    if (!ok)
        violation(ctx, c);
    return ok;
}

/* Writes "-ERR '<text>'\r\n" with a text made by one of nd_perms_err_*. */
static void
write_perm_err(nd_conn_t *c, const char *text, size_t n)
{
    if (c->proto != NULL)
        return; /* a protocol connection has no -ERR line (MQTT: nothing is sent) */
    nd_conn_write(c, "-ERR '", 6);
    nd_conn_write(c, text, n);
    nd_conn_write(c, "'\r\n", 3);
}

bool
nd_conn_auth_pub(nd_conn_t *c, const char *subj, size_t len)
{
    if (nd_perms_conn_pub(&c->perms, subj, len, now_ns()))
        return true;
    char buf[256];
    size_t n = nd_perms_err_pub(buf, sizeof buf, subj, len);
    char *p = n < sizeof buf ? buf : nd_xmalloc(n + 1);
    if (p != buf)
        nd_perms_err_pub(p, n + 1, subj, len);
    nd_log_error("%s:%d - %s:%llu - Publish Violation - User \"%s\", Subject \"%.*s\"",
                 nd_conn_lhost(c), c->port, nd_conn_log_tag(c), (unsigned long long)c->cid,
                 c->cr_user ? c->cr_user : "", (int)len, subj);
    write_perm_err(c, p, n);
    if (p != buf)
        nd_free(p);
    return false;
}

bool
nd_conn_auth_sub(nd_conn_t *c, const char *subj, size_t slen, const char *queue, size_t qlen)
{
    if (nd_perms_conn_sub(&c->perms, subj, slen, queue, qlen)) {
        /* Before the subscription goes to the account: a publisher that finds it sees this. */
        if (c->perms.deny_filter)
            atomic_store_explicit(&c->rdeny, true, memory_order_relaxed);
        return true;
    }
    char buf[256];
    size_t n = nd_perms_err_sub(buf, sizeof buf, subj, slen, queue, qlen);
    char *p = n < sizeof buf ? buf : nd_xmalloc(n + 1);
    if (p != buf)
        nd_perms_err_sub(p, n + 1, subj, slen, queue, qlen);
    nd_log_error("%s:%d - %s:%llu - Subscription Violation - User \"%s\", Subject \"%.*s\"",
                 nd_conn_lhost(c), c->port, nd_conn_log_tag(c), (unsigned long long)c->cid,
                 c->cr_user ? c->cr_user : "", (int)slen, subj);
    write_perm_err(c, p, n);
    if (p != buf)
        nd_free(p);
    return false;
}

void
nd_conn_auth_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg)
{
    if (!nd_timer_fired(&c->auth_timer, msg) || c->closing)
        return;
    if (c->authed && c->jwt_expiring) {
        nd_log_info("%s:%d - %s:%llu - %s JWT expired", nd_conn_lhost(c), c->port,
                    nd_conn_log_tag(c), (unsigned long long)c->cid,
                    c->jwt_acct_expiry ? "Account" : "User");
        nd_conn_write_err(c, c->jwt_acct_expiry ? ND_ERR_ACCT_EXPIRED : ND_ERR_AUTH_EXPIRED);
        nd_conn_close(ctx, c, ND_CLOSE_AUTH_EXPIRED);
        return;
    }
    if (c->authed)
        return;
    nd_log_error("%s:%d - %s:%llu - authentication timeout", nd_conn_lhost(c), c->port,
                 nd_conn_log_tag(c), (unsigned long long)c->cid);
    nd_conn_write_err(c, ND_ERR_AUTH_TIMEOUT);
    nd_conn_close(ctx, c, ND_CLOSE_AUTH_TIMEOUT);
}

void
nd_conn_auth_reply(nd_conn_t *c, nd_conn_msg_reply_t *m)
{
    if (!c->closing && c->perms.perms != NULL)
        nd_perms_conn_track_reply(&c->perms, m->subj, m->len, now_ns());
}

/* A reload changed our permissions: take the new set and drop the subscriptions it refuses. */
static void
swap_perms(nd_ctx_t *ctx, nd_conn_t *c, nd_permset_t *perms)
{
    nd_perms_conn_fini(&c->perms);
    nd_perms_conn_init(&c->perms, perms);
    atomic_store_explicit(&c->rperms, perms, memory_order_relaxed);
    if (perms == NULL) {
        atomic_store_explicit(&c->rdeny, false, memory_order_relaxed);
        return;
    }
    size_t n = 0;
    nd_sub_t **all = nd_xmalloc((c->subs.count + 1) * sizeof(*all));
    for (uint32_t i = 0; i < c->subs.cap; i++) {
        nd_sub_t *sub = c->subs.slots[i];
        if ((uintptr_t)sub > 1) /* neither empty (NULL) nor a tombstone (1, sidmap.c) */
            all[n++] = sub;
    }
    for (size_t i = 0; i < n; i++) {
        nd_sub_t *sub = all[i];
        if (nd_perms_conn_sub(&c->perms, sub->subject, sub->subject_len, sub->queue,
                              sub->queue_len))
            continue;
        nd_log_info("Removed sub \"%s\" (sid \"%s\") for User \"%s\" - not authorized",
                    sub->subject, sub->sid, c->cr_user ? c->cr_user : "");
        char line[160 + 2 * 256];
        int k = snprintf(line, sizeof line,
                         "-ERR 'Permissions Violation for Subscription to \"%.*s\" (sid \"%.*s\")'"
                         "\r\n",
                         (int)(sub->subject_len > 256 ? 256 : sub->subject_len), sub->subject,
                         (int)(sub->sid_len > 256 ? 256 : sub->sid_len), sub->sid);
        nd_conn_write(c, line, (size_t)k);
        nd_conn_remove_sub(ctx, c, sub);
    }
    nd_free(all);
    atomic_store_explicit(&c->rdeny, c->perms.deny_filter, memory_order_relaxed);
}

void
nd_conn_auth_recheck(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->closing || !c->authed || c->auth_own)
        return;
    nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
    if (a == NULL) /* shutting down */
        return;
    nd_auth_creds_t cr;
    nd_auth_grant_t g;
    creds_of(c, &cr);
    bool ok = nd_auth_check(a, &cr, &g);
    if (ok)
        keep_perms(c, &g);
    if (ok && g.acct != c->acct)
        ok = false; /* moved to another account: see the top comment */
    if (ok && g.perms != c->perms.perms)
        swap_perms(ctx, c, g.perms);
    nd_auth_unref(ctx, a);
    if (!ok && g.revoked) {
        /* A reload revoked the user JWT of a connected client (nats-server's "User
         * Authentication Revoked"; a revoked login at CONNECT is a plain violation). */
        nd_log_info("%s:%d - %s:%llu - User JWT revoked", nd_conn_lhost(c), c->port,
                    nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_write_err(c, ND_ERR_AUTH_REVOKED);
        nd_conn_close(ctx, c, ND_CLOSE_REVOKED);
        return;
    }
    if (!ok)
        violation(ctx, c);
}

int64_t
nd_conn_auth_max_payload(const nd_conn_t *c, int64_t server)
{
    if (c->jwt_max_payload == 0)
        return server;
    int64_t jwt = c->jwt_max_payload - 1;
    return server == ND_PROTO_NO_LIMIT || jwt < server ? jwt : server;
}

void
nd_conn_auth_fini(nd_conn_t *c)
{
    nd_perms_conn_fini(&c->perms);
    if (c->acct_counted) {
        atomic_fetch_sub_explicit(&c->acct->jwt_conns, 1, memory_order_relaxed);
        c->acct_counted = false;
    }
    char **secrets[] = {&c->cr_user, &c->cr_pass, &c->cr_token,
                        &c->cr_nkey, &c->cr_sig,  &c->cr_jwt};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        nd_free(*secrets[i]);
        *secrets[i] = NULL;
    }
    nd_conn_ws_cookies_t *k = c->ws_cookies;
    if (k != NULL) {
        nd_free(k->jwt);
        nd_free(k->user);
        nd_free(k->pass);
        nd_free(k->token);
        nd_free(k);
        c->ws_cookies = NULL;
    }
}

void
nd_conn_auth_reload_all(nd_ctx_t *ctx, nd_server_t *s)
{
    nd_conn_info_t **all = NULL;
    size_t n = nd_connreg_live(s->connreg, 0, &all);
    for (size_t i = 0; i < n; i++)
        if (all[i]->kind == ND_CONN_CLIENT && all[i]->actor != NULL)
            nd_actor_send(ctx, all[i]->actor,
                          nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_REAUTH));
    nd_connreg_release_all(ctx, all, n);
}
