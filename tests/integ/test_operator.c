/* Integration tests: operator mode (issue 6, item 4; inventory §5.3) with the MEMORY resolver.
 *
 * Every test makes fresh operator, account and user keys and signs the JWTs itself with natsd's
 * own encoder (src/auth/jwt.h, linked from nd_core), writes the operator JWT and the config
 * (resolver: MEMORY, resolver_preload), and logs in either with the C client and a creds file
 * (natsOptions_SetUserCredentialsFromFiles) or on a raw socket that signs INFO's nonce itself,
 * so the exact -ERR texts and the close can be checked.
 *
 * Cases: a good user (pub/sub round trip, signed by the account and by an account signing key
 * with issuer_account; a scoped signing key, whose template gives the permissions and whose
 * users may set none of their own); refused logins, each with -ERR 'Authorization Violation' and a
 * close: an expired user, a revoked user, a user signed by an account the server does not trust, a
 * bad nonce signature, no JWT at all, an account JWT signed by another operator; a bearer token
 * without a signature (refused when the account sets disallow_bearer); src CIDRs and
 * allowed_connection_types; user permissions; the account's conn and subs limits; the close with
 * -ERR 'User Authentication Expired' when the user JWT expires while connected; the account's
 * payload limit (-ERR 'Maximum Payload Violation' and the close); a reload whose preloaded
 * account revokes a connected user closes it with -ERR 'User Authentication Revoked'; an account
 * JWT that expires while a user is connected closes it with -ERR 'Account Authentication Expired'.
 *
 * The expectations were checked against nats-server 2.9.10 (NATSD_TEST_SERVER=/usr/sbin/nats-server
 * runs the file unchanged; tests/CMakeLists.txt registers that run when it is installed).
 */
#include <criterion/criterion.h>

#include <jansson.h>
#include <nats/nats.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"
#include "auth/jwt.h"
#include "util/nkey.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_operator, .fini = suite_fini, .timeout = 240);

/* ---- fixtures ------------------------------------------------------------------------------ */

typedef struct key {
    char seed[ND_NKEY_SEED_LEN + 1];
    char pub[ND_NKEY_PUBLIC_LEN + 1];
} tkey_t;

static tkey_t
key_new(uint8_t role)
{
    tkey_t k;
    uint8_t raw[32], pub[32];
    cr_assert(nd_nkey_random(raw, sizeof raw));
    cr_assert(nd_nkey_seed_public(raw, pub));
    nd_nkey_encode_seed(role, raw, k.seed);
    nd_nkey_encode_public(role, pub, k.pub);
    return k;
}

/* Signs claims (consumed) with seed. Owns: the result (free). */
static char *
sign(json_t *claims, const char *seed)
{
    char *tok = NULL;
    cr_assert_eq(nd_jwt_encode(claims, seed, strlen(seed), 0, &tok), ND_OK);
    json_decref(claims);
    char *out = strdup(tok);
    free(tok);
    return out;
}

static json_t *
nats_limits(void)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I}", "subs", (json_int_t)-1, "data",
                     (json_int_t)-1, "payload", (json_int_t)-1, "imports", (json_int_t)-1,
                     "exports", (json_int_t)-1, "wildcards", 1, "conn", (json_int_t)-1, "leaf",
                     (json_int_t)-1);
}

typedef struct world {
    tkey_t op, acc, acc_sk, user;
    nd_integ_conf_t cf; /* the config, op.jwt and user.creds */
    char creds[128];
    char *op_jwt, *acc_jwt;
    nd_integ_server_t *srv;
} world_t;

/* The account's claims: limits (overridden by `limits`, a JSON object or NULL), the signing
 * key, and `extra` merged into "nats" (may be NULL). */
static char *
account_jwt(world_t *w, const char *limits, const char *extra, const char *signer)
{
    json_t *lim = nats_limits();
    if (limits != NULL) {
        json_t *o = json_loads(limits, 0, NULL);
        cr_assert_not_null(o);
        json_object_update(lim, o);
        json_decref(o);
    }
    json_t *nats = json_pack("{s:s, s:i, s:o, s:[s]}", "type", "account", "version", 2, "limits",
                             lim, "signing_keys", w->acc_sk.pub);
    if (extra != NULL) {
        json_t *o = json_loads(extra, 0, NULL);
        cr_assert_not_null(o, "%s", extra);
        json_object_update(nats, o);
        json_decref(o);
    }
    return sign(json_pack("{s:s, s:s, s:o}", "sub", w->acc.pub, "name", "A", "nats", nats),
                signer != NULL ? signer : w->op.seed);
}

/* Writes the config: the operator file, resolver MEMORY, and acc as the one preloaded account. */
static void
write_conf(world_t *w, const char *acc)
{
    size_t n = strlen(acc) + 1024;
    char *text = malloc(n);
    snprintf(text, n,
             "operator: \"%s/op.jwt\"\nresolver: MEMORY\nresolver_preload: {\n  %s: \"%s\"\n}\n",
             w->cf.dir, w->acc.pub, acc);
    nd_integ_conf_write(&w->cf, text);
    free(text);
}

/* Makes the keys, the operator and the account (with limits/extra as account_jwt), writes the
 * config and starts the server. */
static void
world_start(world_t *w, const char *limits, const char *extra)
{
    memset(w, 0, sizeof(*w));
    w->op = key_new(ND_NKEY_PREFIX_OPERATOR);
    w->acc = key_new(ND_NKEY_PREFIX_ACCOUNT);
    w->acc_sk = key_new(ND_NKEY_PREFIX_ACCOUNT);
    w->user = key_new(ND_NKEY_PREFIX_USER);
    w->op_jwt = sign(json_pack("{s:s, s:s, s:{s:s, s:i}}", "sub", w->op.pub, "name", "O", "nats",
                               "type", "operator", "version", 2),
                     w->op.seed);
    w->acc_jwt = account_jwt(w, limits, extra, NULL);
    char opath[128];
    nd_integ_conf_file(&w->cf, "op.jwt", opath, sizeof opath);
    nd_integ_write_file(opath, w->op_jwt);
    nd_integ_conf_file(&w->cf, "user.creds", w->creds, sizeof w->creds);
    write_conf(w, w->acc_jwt);
    const char *args[] = {"-c", w->cf.path, NULL};
    w->srv = nd_integ_server_start(0, args);
}

static void
world_stop(world_t *w)
{
    nd_integ_conf_stop(w->srv, &w->cf);
    free(w->op_jwt);
    free(w->acc_jwt);
}

/* A user JWT for w->user: `nats_extra` merged into "nats" (may be NULL), exp (0 = none), signed
 * by signer (default: the account key). */
static char *
user_jwt(world_t *w, const char *nats_extra, int64_t exp, const char *signer)
{
    json_t *nats = json_pack("{s:s, s:i, s:I, s:I, s:I}", "type", "user", "version", 2, "subs",
                             (json_int_t)-1, "data", (json_int_t)-1, "payload", (json_int_t)-1);
    if (nats_extra != NULL) {
        json_t *o = json_loads(nats_extra, 0, NULL);
        cr_assert_not_null(o, "%s", nats_extra);
        json_object_update(nats, o);
        json_decref(o);
    }
    json_t *c = json_pack("{s:s, s:s, s:o}", "sub", w->user.pub, "name", "u", "nats", nats);
    if (exp > 0)
        json_object_set_new(c, "exp", json_integer(exp));
    return sign(c, signer != NULL ? signer : w->acc.seed);
}

/* Opens a raw connection and sends CONNECT with jwt and the nonce signed by seed (no sig when
 * seed is NULL), then PING. */
static nd_integ_conn_t *
raw_login(world_t *w, const char *jwt, const char *seed)
{
    nd_integ_conn_t *c = nd_integ_conn_open(w->srv);
    const char *info = nd_integ_conn_info(c);
    const char *p = strstr(info, "\"nonce\":\"");
    cr_assert_not_null(p, "INFO without a nonce: %s", info);
    p += 9;
    const char *e = strchr(p, '"');
    cr_assert_not_null(e);
    char *sig = NULL;
    if (seed != NULL)
        cr_assert(nd_jwt_sign_nonce(seed, strlen(seed), p, (size_t)(e - p), &sig));
    size_t n = strlen(jwt) + 512;
    char *line = malloc(n);
    snprintf(line, n, "CONNECT {\"verbose\":false,\"protocol\":1,\"jwt\":\"%s\"%s%s%s}\r\nPING\r\n",
             jwt, sig ? ",\"sig\":\"" : "", sig ? sig : "", sig ? "\"" : "");
    ND_SENDS(c, line);
    free(line);
    free(sig);
    return c;
}

static nd_integ_conn_t *login_or_null(world_t *w, const char *jwt);

static void
raw_ok(world_t *w, const char *jwt)
{
    nd_integ_conn_t *c = raw_login(w, jwt, w->user.seed);
    ND_EXPECT(c, "PONG\r\n");
    nd_integ_conn_close(c);
}

static void
raw_refused(world_t *w, const char *jwt, const char *seed)
{
    nd_integ_conn_t *c = raw_login(w, jwt, seed);
    ND_EXPECT(c, "-ERR 'Authorization Violation'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
}

#define OK(call) ND_NATS_OK(call)

/* Writes a creds file for jwt and w->user and connects the C client with it. */
static natsStatus
cconnect(world_t *w, const char *jwt, natsConnection **nc)
{
    size_t n = strlen(jwt) + 512;
    char *text = malloc(n);
    snprintf(text, n,
             "-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
             "************************* IMPORTANT *************************\n\n"
             "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n",
             jwt, w->user.seed);
    nd_integ_write_file(w->creds, text);
    free(text);
    natsOptions *o = NULL;
    char url[64];
    nd_integ_nats_url(w->srv, url, sizeof url);
    OK(natsOptions_Create(&o));
    OK(natsOptions_SetURL(o, url));
    OK(natsOptions_SetAllowReconnect(o, false));
    OK(natsOptions_SetTimeout(o, ND_INTEG_TIMEOUT_MS));
    OK(natsOptions_SetUserCredentialsFromFiles(o, w->creds, NULL));
    *nc = NULL;
    natsStatus s = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    return s;
}

static void
cping(natsConnection *nc)
{
    natsSubscription *sub = NULL;
    natsMsg *m = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "op.echo"));
    OK(natsConnection_PublishString(nc, "op.echo", "hi"));
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert_str_eq(natsMsg_GetData(m), "hi");
    natsMsg_Destroy(m);
    natsSubscription_Destroy(sub);
}

/* ---- tests --------------------------------------------------------------------------------- */

Test(integ_operator, good_user_creds_file)
{
    world_t w;
    world_start(&w, NULL, NULL);
    nd_integ_conn_t *c = nd_integ_conn_open(w.srv);
    cr_assert_not_null(strstr(nd_integ_conn_info(c), "\"auth_required\":true"), "%s",
                       nd_integ_conn_info(c));
    nd_integ_conn_close(c);

    char *jwt = user_jwt(&w, NULL, 0, NULL);
    natsConnection *nc = NULL;
    OK(cconnect(&w, jwt, &nc));
    cping(nc);
    natsConnection_Destroy(nc);
    raw_ok(&w, jwt);
    free(jwt);

    /* Signed by the account's signing key, naming the account in issuer_account. */
    char extra[160];
    snprintf(extra, sizeof extra, "{\"issuer_account\":\"%s\"}", w.acc.pub);
    jwt = user_jwt(&w, extra, 0, w.acc_sk.seed);
    OK(cconnect(&w, jwt, &nc));
    cping(nc);
    natsConnection_Destroy(nc);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, refused_logins)
{
    world_t w;
    world_start(&w, NULL, NULL);
    /* Expired a minute ago. */
    char *jwt = user_jwt(&w, NULL, (int64_t)time(NULL) - 60, NULL);
    raw_refused(&w, jwt, w.user.seed);
    natsConnection *nc = NULL;
    cr_assert_neq(cconnect(&w, jwt, &nc), NATS_OK);
    free(jwt);

    /* Signed by an account the server does not know. */
    tkey_t other = key_new(ND_NKEY_PREFIX_ACCOUNT);
    jwt = user_jwt(&w, NULL, 0, other.seed);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);

    /* Claims the trusted account but is signed by another account key. */
    char extra[160];
    snprintf(extra, sizeof extra, "{\"issuer_account\":\"%s\"}", w.acc.pub);
    jwt = user_jwt(&w, extra, 0, other.seed);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);

    /* A good JWT with the nonce signed by another user key, or without a signature. */
    jwt = user_jwt(&w, NULL, 0, NULL);
    tkey_t mallory = key_new(ND_NKEY_PREFIX_USER);
    raw_refused(&w, jwt, mallory.seed);
    raw_refused(&w, jwt, NULL);
    free(jwt);

    /* No JWT at all. */
    nd_integ_conn_t *c = nd_integ_conn_open(w.srv);
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Authorization Violation'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    world_stop(&w);
}

Test(integ_operator, bearer_token)
{
    world_t w;
    world_start(&w, NULL, NULL);
    char *jwt = user_jwt(&w, "{\"bearer_token\":true}", 0, NULL);
    nd_integ_conn_t *c = raw_login(&w, jwt, NULL);
    ND_EXPECT(c, "PONG\r\n");
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, revoked_user)
{
    world_t w;
    char extra[256];
    /* A revocation time at or after the user JWT's iat revokes it; the key is made first so the
     * account can name it. */
    world_start(&w, NULL, NULL);
    /* Replace the account by one that revokes every user issued until an hour from now: a
     * restart with the new preload. */
    nd_integ_server_stop(w.srv);
    snprintf(extra, sizeof extra, "{\"revocations\":{\"%s\":%lld}}", w.user.pub,
             (long long)time(NULL) + 3600);
    char *acc = account_jwt(&w, NULL, extra, NULL);
    write_conf(&w, acc);
    free(acc);
    const char *args[] = {"-c", w.cf.path, NULL};
    w.srv = nd_integ_server_start(0, args);

    char *jwt = user_jwt(&w, NULL, 0, NULL);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    /* Another user of the same account is not revoked. */
    w.user = key_new(ND_NKEY_PREFIX_USER);
    jwt = user_jwt(&w, NULL, 0, NULL);
    raw_ok(&w, jwt);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, untrusted_account)
{
    /* The preloaded account is signed by another operator: its users cannot log in. */
    world_t w;
    world_start(&w, NULL, NULL);
    nd_integ_server_stop(w.srv);
    tkey_t other = key_new(ND_NKEY_PREFIX_OPERATOR);
    char *acc = account_jwt(&w, NULL, NULL, other.seed);
    write_conf(&w, acc);
    free(acc);
    const char *args[] = {"-c", w.cf.path, NULL};
    w.srv = nd_integ_server_start(0, args);
    char *jwt = user_jwt(&w, NULL, 0, NULL);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, user_permissions)
{
    world_t w;
    world_start(&w, NULL, NULL);
    char *jwt =
        user_jwt(&w, "{\"pub\":{\"allow\":[\"ok.>\"]},\"sub\":{\"deny\":[\"secret\"]}}", 0, NULL);
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    ND_EXPECT(c, "PONG\r\n");
    ND_SEND(c, "SUB ok.1 1\r\nPUB ok.1 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(c, "MSG ok.1 1 2\r\nhi\r\nPONG\r\n");
    ND_SEND(c, "PUB no 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Permissions Violation for Publish to \"no\"'\r\nPONG\r\n");
    ND_SEND(c, "SUB secret 2\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Permissions Violation for Subscription to \"secret\"'\r\nPONG\r\n");
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, account_conn_limit)
{
    world_t w;
    world_start(&w, "{\"conn\":1}", NULL);
    char *jwt = user_jwt(&w, NULL, 0, NULL);
    nd_integ_conn_t *a = raw_login(&w, jwt, w.user.seed);
    ND_EXPECT(a, "PONG\r\n");
    nd_integ_conn_t *b = raw_login(&w, jwt, w.user.seed);
    ND_EXPECT(b, "-ERR 'maximum account active connections exceeded'\r\n");
    nd_integ_expect_close(b);
    nd_integ_conn_close(b);
    ND_PING(a);
    /* The slot comes back when the first one leaves. */
    nd_integ_conn_close(a);
    nd_integ_conn_t *c = NULL;
    for (int i = 0; i < 600; i++) { /* up to 30 s: a hang guard */
        c = raw_login(&w, jwt, w.user.seed);
        char *f = nd_integ_read_frame(c);
        bool ok = f != NULL && strcmp(f, "PONG\r\n") == 0;
        free(f);
        if (ok)
            break;
        nd_integ_conn_close(c);
        c = NULL;
        usleep(50 * 1000); /* the server has not seen the close yet */
    }
    cr_assert_not_null(c, "the freed connection slot never came back");
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, account_subs_limit)
{
    world_t w;
    world_start(&w, "{\"subs\":1}", NULL);
    char *jwt = user_jwt(&w, NULL, 0, NULL);
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    ND_EXPECT(c, "PONG\r\n");
    ND_SEND(c, "SUB a 1\r\nSUB b 2\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n");
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, expires_while_connected)
{
    world_t w;
    world_start(&w, NULL, NULL);
    /* The server closes us at the JWT's expiry; a margin that a slow machine used up before the
     * login is retried with a longer one. The harness's read timeout is the hang guard. */
    for (int margin = 2; margin <= 32; margin *= 4) {
        char *jwt = user_jwt(&w, NULL, (int64_t)time(NULL) + margin, NULL);
        nd_integ_conn_t *c = login_or_null(&w, jwt);
        free(jwt);
        if (c == NULL)
            continue;
        ND_EXPECT(c, "-ERR 'User Authentication Expired'\r\n");
        nd_integ_expect_close(c);
        nd_integ_conn_close(c);
        world_stop(&w);
        return;
    }
    cr_assert_fail("every login came after the user JWT's expiry");
}

Test(integ_operator, account_payload_limit)
{
    world_t w;
    world_start(&w, "{\"payload\":8}", NULL);
    char *jwt = user_jwt(&w, NULL, 0, NULL);
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    /* A protocol-1 client is told its own max_payload in a new INFO: natsd sends it before the
     * PONG, nats-server 2.9.10 after it, so the order is not checked. */
    bool info = false, pong = false;
    while (!info || !pong) {
        char *f = nd_integ_read_frame(c);
        cr_assert_not_null(f, "closed");
        if (strcmp(f, "PONG\r\n") == 0) {
            pong = true;
        } else {
            cr_assert(!info && strncmp(f, "INFO {", 6) == 0, "%s", f);
            cr_assert_not_null(strstr(f, "\"max_payload\":8,"), "%s", f);
            cr_assert_null(strstr(f, "\"nonce\""), "%s", f);
            info = true;
        }
        free(f);
    }
    ND_SEND(c, "SUB p 1\r\nPUB p 8\r\n12345678\r\nPING\r\n");
    ND_EXPECT(c, "MSG p 1 8\r\n12345678\r\nPONG\r\n");
    ND_SEND(c, "PUB p 9\r\n123456789\r\n");
    ND_EXPECT(c, "-ERR 'Maximum Payload Violation'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, reload_revokes_connected_user)
{
    world_t w;
    world_start(&w, NULL, NULL);
    char *jwt = user_jwt(&w, NULL, 0, NULL);
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    ND_EXPECT(c, "PONG\r\n");
    /* The preloaded account now revokes the user: a reload closes the connection. */
    char extra[256];
    snprintf(extra, sizeof extra, "{\"revocations\":{\"%s\":%lld}}", w.user.pub,
             (long long)time(NULL) + 3600);
    char *acc = account_jwt(&w, NULL, extra, NULL);
    write_conf(&w, acc);
    free(acc);
    size_t mark = nd_integ_server_log_mark(w.srv);
    nd_integ_server_signal(w.srv, SIGHUP);
    nd_integ_server_wait_log(w.srv, mark, "Reloaded server configuration");
    ND_EXPECT(c, "-ERR 'User Authentication Revoked'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, user_restrictions)
{
    world_t w;
    world_start(&w, NULL, NULL);
    /* src CIDRs: the client's address must be inside one of them. */
    char *jwt = user_jwt(&w, "{\"src\":[\"10.0.0.0/8\"]}", 0, NULL);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    jwt = user_jwt(&w, "{\"src\":[\"10.0.0.0/8\",\"127.0.0.0/8\"]}", 0, NULL);
    raw_ok(&w, jwt);
    free(jwt);
    /* allowed_connection_types: a plain client is STANDARD. */
    jwt = user_jwt(&w, "{\"allowed_connection_types\":[\"WEBSOCKET\"]}", 0, NULL);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    jwt = user_jwt(&w, "{\"allowed_connection_types\":[\"STANDARD\"]}", 0, NULL);
    raw_ok(&w, jwt);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, disallow_bearer)
{
    world_t w;
    world_start(&w, "{\"disallow_bearer\":true}", NULL);
    char *jwt = user_jwt(&w, "{\"bearer_token\":true}", 0, NULL);
    raw_refused(&w, jwt, NULL);
    free(jwt);
    world_stop(&w);
}

/* Logs in with jwt; returns the connection when the server answered PONG, else NULL (the JWT
 * had already expired: a loaded machine took longer than the test's margin). */
static nd_integ_conn_t *
login_or_null(world_t *w, const char *jwt)
{
    nd_integ_conn_t *c = raw_login(w, jwt, w->user.seed);
    char *f = nd_integ_read_frame(c);
    bool ok = f != NULL && strcmp(f, "PONG\r\n") == 0;
    cr_assert(ok || (f != NULL && strcmp(f, "-ERR 'Authorization Violation'\r\n") == 0), "%s",
              f ? f : "(closed)");
    free(f);
    if (!ok) {
        nd_integ_conn_close(c);
        return NULL;
    }
    return c;
}

Test(integ_operator, account_expires_while_connected)
{
    /* The account JWT expires `margin` seconds after it is made, the user's never; a margin
     * that a slow start used up is retried with a longer one. */
    for (int margin = 3; margin <= 48; margin *= 4) {
        world_t w;
        world_start(&w, NULL, NULL);
        nd_integ_server_stop(w.srv);
        json_t *lim = nats_limits();
        json_t *nats = json_pack("{s:s, s:i, s:o}", "type", "account", "version", 2, "limits", lim);
        char *acc = sign(json_pack("{s:s, s:s, s:I, s:o}", "sub", w.acc.pub, "name", "A", "exp",
                                   (json_int_t)time(NULL) + margin, "nats", nats),
                         w.op.seed);
        write_conf(&w, acc);
        free(acc);
        const char *args[] = {"-c", w.cf.path, NULL};
        w.srv = nd_integ_server_start(0, args);
        char *jwt = user_jwt(&w, NULL, 0, NULL);
        nd_integ_conn_t *c = login_or_null(&w, jwt);
        free(jwt);
        if (c != NULL) {
            ND_EXPECT(c, "-ERR 'Account Authentication Expired'\r\n");
            nd_integ_expect_close(c);
            nd_integ_conn_close(c);
        }
        world_stop(&w);
        if (c != NULL)
            return;
    }
    cr_assert_fail("every login came after the account JWT's expiry");
}

Test(integ_operator, scoped_signing_key)
{
    /* A user issued by a scoped signing key gets the key's template permissions. */
    world_t w;
    world_start(&w, NULL, NULL);
    nd_integ_server_stop(w.srv);
    char extra[512];
    snprintf(extra, sizeof extra,
             "{\"signing_keys\":[{\"kind\":\"user_scope\",\"key\":\"%s\",\"role\":\"r\","
             "\"template\":{\"pub\":{\"allow\":[\"scoped.>\"]},\"sub\":{},\"subs\":-1,"
             "\"data\":-1,\"payload\":-1}}]}",
             w.acc_sk.pub);
    char *acc = account_jwt(&w, NULL, extra, NULL);
    write_conf(&w, acc);
    free(acc);
    const char *args[] = {"-c", w.cf.path, NULL};
    w.srv = nd_integ_server_start(0, args);
    /* Such a user may set no permissions or limits of its own (-1 "unlimited" counts). */
    snprintf(extra, sizeof extra, "{\"issuer_account\":\"%s\"}", w.acc.pub);
    char *jwt = user_jwt(&w, extra, 0, w.acc_sk.seed);
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    jwt = sign(json_pack("{s:s, s:s, s:{s:s, s:i, s:s}}", "sub", w.user.pub, "name", "u", "nats",
                         "type", "user", "version", 2, "issuer_account", w.acc.pub),
               w.acc_sk.seed);
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    ND_EXPECT(c, "PONG\r\n");
    ND_SEND(c, "SUB scoped.a 1\r\nPUB scoped.a 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(c, "MSG scoped.a 1 2\r\nhi\r\nPONG\r\n");
    ND_SEND(c, "PUB other 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Permissions Violation for Publish to \"other\"'\r\nPONG\r\n");
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

/* ---- connect times (issue 11, defect 5) ---------------------------------------------------- */

/* hh:mm:ss of the wall-clock time t, in UTC or in the local zone. */
static void
clock_str(time_t t, bool utc, char out[16])
{
    struct tm tm;
    if (utc)
        gmtime_r(&t, &tm);
    else
        localtime_r(&t, &tm);
    snprintf(out, 16, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* A user JWT whose only window is [start, end] (nats "times"), in `loc` (NULL: none). */
static char *
times_jwt(world_t *w, const char *start, const char *end, const char *loc)
{
    char extra[256];
    snprintf(extra, sizeof extra, "{\"times\":[{\"start\":\"%s\",\"end\":\"%s\"}]%s%s%s}", start,
             end, loc ? ",\"times_location\":\"" : "", loc ? loc : "", loc ? "\"" : "");
    return user_jwt(w, extra, 0, NULL);
}

Test(integ_operator, connect_times)
{
    world_t w;
    world_start(&w, NULL, NULL);
    /* Two windows that together cover the whole day (the second one crosses midnight). */
    char *jwt = user_jwt(&w,
                         "{\"times\":[{\"start\":\"00:00:00\",\"end\":\"23:59:59\"},"
                         "{\"start\":\"23:00:00\",\"end\":\"01:00:00\"}]}",
                         0, NULL);
    raw_ok(&w, jwt);
    free(jwt);
    /* A one-second window twelve hours away: outside it, in the server's zone and in UTC. */
    for (int utc = 0; utc <= 1; utc++) {
        char start[16], end[16];
        time_t t = time(NULL) + 12 * 3600;
        clock_str(t, utc, start);
        clock_str(t + 1, utc, end);
        jwt = times_jwt(&w, start, end, utc ? "UTC" : NULL);
        raw_refused(&w, jwt, w.user.seed);
        free(jwt);
    }
    /* The whole day in a named zone is fine; a zone that does not exist is refused, and so is a
     * time that is not hh:mm:ss. */
    jwt = times_jwt(&w, "00:00:00", "23:59:59", "America/New_York");
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    char *f = nd_integ_read_frame(c);
    /* The last second of New York's day is outside the window: retry once. */
    if (f != NULL && strcmp(f, "PONG\r\n") != 0) {
        free(f);
        nd_integ_conn_close(c);
        sleep(2);
        c = raw_login(&w, jwt, w.user.seed);
        f = nd_integ_read_frame(c);
    }
    cr_assert(f != NULL && strcmp(f, "PONG\r\n") == 0, "%s", f ? f : "(closed)");
    free(f);
    nd_integ_conn_close(c);
    free(jwt);
    jwt = times_jwt(&w, "00:00:00", "23:59:59", "Mars/Olympus_Mons");
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    jwt = times_jwt(&w, "00:00:00", "24:00:00", "UTC");
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    jwt = times_jwt(&w, "0:00", "23:59:59", "UTC");
    raw_refused(&w, jwt, w.user.seed);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, connect_times_window_closes)
{
    world_t w;
    world_start(&w, NULL, NULL);
    /* The window ends `margin` seconds from now (UTC): the server closes us then, as at the
     * JWT's expiry. It starts an hour earlier, or at midnight when that is later (nats-server
     * does not admit the early-morning part of a window that crosses midnight). A margin that a
     * slow machine used up before the login is retried with a longer one. */
    for (int margin = 2; margin <= 32; margin *= 4) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char start[16], end[16];
        if (tm.tm_hour == 0)
            snprintf(start, sizeof start, "00:00:00");
        else
            clock_str(now - 3600, true, start);
        clock_str(now + margin, true, end);
        char *jwt = times_jwt(&w, start, end, "UTC");
        nd_integ_conn_t *c = login_or_null(&w, jwt);
        free(jwt);
        if (c == NULL)
            continue;
        ND_EXPECT(c, "-ERR 'User Authentication Expired'\r\n");
        nd_integ_expect_close(c);
        nd_integ_conn_close(c);
        world_stop(&w);
        return;
    }
    cr_assert_fail("every login came after the window's end");
}

/* ---- limits and permissions of user JWTs (issue 11, defect 7) ------------------------------ */

/* Logs in with jwt (protocol 1) and reads the PONG and the INFO that tells the client its own
 * max_payload (natsd sends it before the PONG, nats-server 2.9.10 after it), which must be
 * `max_payload`. */
static nd_integ_conn_t *
login_payload_info(world_t *w, const char *jwt, const char *max_payload)
{
    nd_integ_conn_t *c = raw_login(w, jwt, w->user.seed);
    bool info = false, pong = false;
    while (!info || !pong) {
        char *f = nd_integ_read_frame(c);
        cr_assert_not_null(f, "closed");
        if (strcmp(f, "PONG\r\n") == 0) {
            pong = true;
        } else {
            cr_assert(!info && strncmp(f, "INFO {", 6) == 0, "%s", f);
            cr_assert_not_null(strstr(f, max_payload), "%s", f);
            info = true;
        }
        free(f);
    }
    return c;
}

Test(integ_operator, user_without_limits)
{
    /* A user JWT without subs/data/payload has limits of 0 (Go's zero values), as nats-server
     * 2.9.10: at its subscription limit from the start, the connection gets
     * -ERR 'maximum subscriptions exceeded' and is closed (applyAccountLimits); the PONG and the
     * INFO with max_payload 0 may come first. */
    world_t w;
    world_start(&w, NULL, NULL);
    char *jwt = sign(json_pack("{s:s, s:s, s:{s:s, s:i}}", "sub", w.user.pub, "name", "u", "nats",
                               "type", "user", "version", 2),
                     w.acc.seed);
    nd_integ_conn_t *c = raw_login(&w, jwt, w.user.seed);
    for (;;) {
        char *f = nd_integ_read_frame(c);
        cr_assert_not_null(f, "closed without the error");
        bool err = strcmp(f, "-ERR 'maximum subscriptions exceeded'\r\n") == 0;
        cr_assert(err || strcmp(f, "PONG\r\n") == 0 ||
                      (strncmp(f, "INFO {", 6) == 0 && strstr(f, "\"max_payload\":0,") != NULL),
                  "%s", f);
        free(f);
        if (err)
            break;
    }
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    free(jwt);
    /* subs given, payload not: no payload. */
    jwt = sign(json_pack("{s:s, s:s, s:{s:s, s:i, s:I}}", "sub", w.user.pub, "name", "u", "nats",
                         "type", "user", "version", 2, "subs", (json_int_t)-1),
               w.acc.seed);
    c = login_payload_info(&w, jwt, "\"max_payload\":0,");
    ND_SEND(c, "SUB a 1\r\nPUB a 0\r\n\r\nPING\r\n");
    ND_EXPECT(c, "MSG a 1 0\r\n\r\nPONG\r\n");
    ND_SEND(c, "PUB a 2\r\nhi\r\n");
    ND_EXPECT(c, "-ERR 'Maximum Payload Violation'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    free(jwt);
    world_stop(&w);
}

Test(integ_operator, invalid_permission_entries)
{
    /* A user JWT whose permissions the jwt library finds invalid is refused, as nats-server
     * 2.9.10 refuses it (checked): an empty subject, a queue in a publish entry, more than one
     * space. natsd never skips an entry: skipping a deny would widen access. */
    world_t w;
    world_start(&w, NULL, NULL);
    const char *bad[] = {
        "{\"pub\":{\"allow\":[\"\"]}}",      "{\"sub\":{\"deny\":[\"\"]}}",
        "{\"sub\":{\"allow\":[\"a b c\"]}}", "{\"pub\":{\"deny\":[\"a q\"]}}",
        "{\"sub\":{\"deny\":[\"a  q\"]}}",   "{\"sub\":{\"deny\":[\" a\"]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nd_integ_context("permissions %s", bad[i]);
        char *jwt = user_jwt(&w, bad[i], 0, NULL);
        raw_refused(&w, jwt, w.user.seed);
        free(jwt);
    }
    /* A queue entry ("subject queue") in a subscribe permission is valid. */
    char *jwt = user_jwt(&w, "{\"sub\":{\"deny\":[\"a.* q\"]}}", 0, NULL);
    raw_ok(&w, jwt);
    free(jwt);
    /* Not a valid subject: nats-server 2.9.10 admits the user and its sublist drops the entry
     * (a deny that no longer denies); natsd refuses the user. natsd only. */
    if (!nd_integ_is_reference()) {
        const char *subj[] = {"{\"sub\":{\"deny\":[\"a..b\"]}}",
                              "{\"pub\":{\"deny\":[\"foo.>.bar\"]}}"};
        for (size_t i = 0; i < sizeof subj / sizeof subj[0]; i++) {
            nd_integ_context("permissions %s", subj[i]);
            jwt = user_jwt(&w, subj[i], 0, NULL);
            raw_refused(&w, jwt, w.user.seed);
            free(jwt);
        }
    }
    world_stop(&w);
}
