/* The static authentication snapshot (src/auth/auth.c): which credentials pass and what they are
 * granted (user name, account, permissions), no_auth_user, allowed_connection_types, TLS
 * mapping, account actors reused across rebuilds (reload), the fingerprint that tells a reload
 * whether anything changed, and that everything is freed (ASan, and the pool's live count). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "subj/account.h"
#include "cfg/opts.h"
#include "actors/pool.h"
#include "auth/auth.h"
#include "auth/jwt.h"
#include "auth/passwd.h"

#define USEED "SUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMRLFM2XLAXK4GY"
#define UPUB  "UAT6BWCSCWLUKJT6K6MBJJOEOTXZ5AJDOYKNEVRFC7VNO6OA43N4TRNO"

static nd_pool_t *pool;
static nd_ctx_t *ctx;
static nd_acct_t *gacct;
static char path[64];

static void
setup(void)
{
    pool = nd_pool_new(2);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
    gacct = nd_acct_new(ctx, "$G", 2);
    snprintf(path, sizeof path, "/tmp/nd_authcheck_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
}

static void
teardown(void)
{
    unlink(path);
    nd_actor_unref(ctx, &gacct->actor);
    nd_ctx_external_free(ctx);
    nd_pool_shutdown(pool);
    cr_assert_eq(nd_pool_live_actors(pool), 0, "every account actor was freed");
    nd_pool_free(pool);
}

TestSuite(authcheck, .init = setup, .fini = teardown, .timeout = 60);

static void
load(nd_opts_t *o, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    nd_opts_defaults(o);
    char err[1024] = "";
    cr_assert_eq(nd_opts_apply_config(o, path, err, sizeof err), 0, "%s", err);
}

static nd_auth_t *
build(const char *text, const nd_auth_t *prev)
{
    nd_opts_t o;
    load(&o, text);
    nd_auth_t *a = nd_auth_new(ctx, &o, gacct, prev);
    nd_opts_free(&o);
    return a;
}

static bool
check_user(const nd_auth_t *a, const char *user, const char *pass, nd_auth_grant_t *g)
{
    nd_auth_creds_t cr = {.user = user, .pass = pass};
    return nd_auth_check(a, &cr, g);
}

Test(authcheck, no_authorization)
{
    nd_auth_t *a = build("port: 4222\n", NULL);
    cr_assert(!a->required);
    cr_assert(!a->info_auth_required);
    nd_auth_grant_t g;
    cr_assert(check_user(a, "x", "y", &g));
    cr_assert_eq(g.acct, gacct);
    cr_assert_null(g.perms);
    nd_auth_unref(ctx, a);
}

Test(authcheck, users_bcrypt_and_perms)
{
    char *hash = nd_passwd_bcrypt_hash("bob", "$2a$", 4);
    cr_assert_not_null(hash);
    char conf[512];
    snprintf(conf, sizeof conf,
             "authorization { users: [\n"
             "  {user: alice, password: pw, permissions: {publish: [\"a.>\"]}}\n"
             "  {user: bob, password: \"%s\"}\n"
             "] }\n",
             hash);
    nd_free(hash);
    nd_auth_t *a = build(conf, NULL);
    cr_assert(a->required && a->info_auth_required && !a->nonce);
    nd_auth_grant_t g;
    cr_assert(check_user(a, "alice", "pw", &g));
    cr_assert_str_eq(g.user, "alice");
    cr_assert_eq(g.acct, gacct);
    cr_assert_not_null(g.perms);
    cr_assert(nd_perms_pub_allowed(g.perms, "a.b", 3));
    cr_assert(!nd_perms_pub_allowed(g.perms, "b", 1));
    cr_assert(check_user(a, "bob", "bob", &g));
    cr_assert_null(g.perms);
    cr_assert(!check_user(a, "alice", "pw2", &g));
    cr_assert(!check_user(a, "alice", NULL, &g));
    cr_assert(!check_user(a, "carol", "pw", &g));
    cr_assert(!check_user(a, NULL, NULL, &g));
    nd_auth_creds_t tok = {.token = "pw"};
    cr_assert(!nd_auth_check(a, &tok, &g));
    nd_auth_unref(ctx, a);
}

Test(authcheck, nkey_nonce_signature)
{
    nd_auth_t *a = build("authorization { users: [ {nkey: " UPUB "} ] }\n", NULL);
    cr_assert(a->nonce);
    char nonce[ND_JWT_NONCE_LEN + 1];
    cr_assert(nd_jwt_nonce(nonce));
    char *sig = NULL;
    cr_assert(nd_jwt_sign_nonce(USEED, strlen(USEED), nonce, strlen(nonce), &sig));
    nd_auth_creds_t cr = {.nkey = UPUB, .sig = sig, .nonce = nonce};
    nd_auth_grant_t g;
    cr_assert(nd_auth_check(a, &cr, &g));
    cr_assert_str_eq(g.user, UPUB);
    char other[ND_JWT_NONCE_LEN + 1];
    cr_assert(nd_jwt_nonce(other));
    cr.nonce = other; /* a signature of another nonce (a replay) */
    cr_assert(!nd_auth_check(a, &cr, &g));
    cr.nonce = NULL;
    cr_assert(!nd_auth_check(a, &cr, &g));
    cr.nonce = nonce;
    cr.sig = NULL;
    cr_assert(!nd_auth_check(a, &cr, &g));
    nd_free(sig);
    nd_auth_unref(ctx, a);
}

Test(authcheck, single_user_and_token)
{
    nd_auth_t *a = build("authorization { user: u, password: p }\n", NULL);
    nd_auth_grant_t g;
    cr_assert(check_user(a, "u", "p", &g));
    cr_assert_str_eq(g.user, "u");
    cr_assert(!check_user(a, "u", "q", &g));
    cr_assert(!check_user(a, "v", "p", &g));
    nd_auth_unref(ctx, a);
    a = build("authorization { token: t0k }\n", NULL);
    nd_auth_creds_t cr = {.token = "t0k"};
    cr_assert(nd_auth_check(a, &cr, &g));
    cr_assert_null(g.user);
    cr.token = "t0";
    cr_assert(!nd_auth_check(a, &cr, &g));
    cr.token = NULL;
    cr_assert(!nd_auth_check(a, &cr, &g));
    nd_auth_unref(ctx, a);
}

Test(authcheck, no_auth_user_types_and_tls_map)
{
    nd_auth_t *a = build("authorization { users: [\n"
                         "  {user: anon, password: x}\n"
                         "  {user: ws, password: x, allowed_connection_types: [\"WEBSOCKET\"]}\n"
                         "  {user: \"CN=client\", password: x}\n"
                         "] }\n"
                         "no_auth_user: anon\n",
                         NULL);
    cr_assert(a->required);
    cr_assert(!a->info_auth_required);
    nd_auth_grant_t g;
    nd_auth_creds_t none = {0};
    cr_assert(nd_auth_creds_empty(a, &none));
    cr_assert(nd_auth_check(a, &none, &g));
    cr_assert_str_eq(g.user, "anon");
    /* Empty strings, a JWT outside operator mode and an nkey without nkey users count as no
     * credentials (nats-server 2.9.10); a password without a user does not. */
    nd_auth_creds_t blank = {.user = "", .pass = "", .jwt = "x.y.z", .nkey = "UBOGUS"};
    cr_assert(nd_auth_creds_empty(a, &blank));
    cr_assert(nd_auth_check(a, &blank, &g));
    cr_assert_str_eq(g.user, "anon");
    blank.pass = "x";
    cr_assert(!nd_auth_creds_empty(a, &blank));
    cr_assert(!nd_auth_check(a, &blank, &g));
    cr_assert(!check_user(a, "ws", "x", &g)); /* not a STANDARD connection type */
    char *names_v[] = {"nobody", "CN=client"};
    nd_strlist_t names = {.v = names_v, .n = 2};
    nd_auth_creds_t tls = {.tls_map = true, .tls_names = &names};
    cr_assert(nd_auth_check(a, &tls, &g));
    cr_assert_str_eq(g.user, "CN=client");
    names.n = 1;
    cr_assert(!nd_auth_check(a, &tls, &g));
    nd_auth_unref(ctx, a);
}

Test(authcheck, accounts_and_rebuild)
{
    static const char conf[] = "accounts {\n"
                               "  A { users: [ {user: a, password: p} ] }\n"
                               "  B { users: [ {user: b, password: p} ] }\n"
                               "}\n"
                               "authorization { users: [ {user: g, password: p} ] }\n";
    nd_auth_t *a = build(conf, NULL);
    nd_auth_grant_t ga, gb, gg;
    cr_assert(check_user(a, "a", "p", &ga));
    cr_assert(check_user(a, "b", "p", &gb));
    cr_assert(check_user(a, "g", "p", &gg));
    cr_assert_str_eq(nd_acct_name(ga.acct), "A");
    cr_assert_str_eq(nd_acct_name(gb.acct), "B");
    cr_assert_eq(gg.acct, gacct);
    cr_assert_neq(ga.acct, gb.acct);

    /* A rebuild from the same options: same accounts, same fingerprint. */
    nd_auth_t *same = build(conf, a);
    cr_assert(nd_auth_same(a, same));
    nd_auth_grant_t g2;
    cr_assert(check_user(same, "a", "p", &g2));
    cr_assert_eq(g2.acct, ga.acct, "the account actor is reused");

    /* A changed password, a removed account and a new one. */
    nd_auth_t *changed = build("accounts {\n"
                               "  A { users: [ {user: a, password: q} ] }\n"
                               "  C { users: [ {user: c, password: p} ] }\n"
                               "}\n",
                               a);
    cr_assert(!nd_auth_same(a, changed));
    cr_assert(!check_user(changed, "a", "p", &g2));
    cr_assert(check_user(changed, "a", "q", &g2));
    cr_assert_eq(g2.acct, ga.acct);
    cr_assert(!check_user(changed, "b", "p", &g2));
    cr_assert(check_user(changed, "c", "p", &g2));
    cr_assert_str_eq(nd_acct_name(g2.acct), "C");

    /* The slot keeps the snapshot in force. */
    nd_auth_slot_t *slot = nd_auth_slot_new();
    nd_auth_slot_set(ctx, slot, nd_auth_ref(a));
    nd_auth_t *cur = nd_auth_slot_get(slot);
    cr_assert_eq(cur, a);
    nd_auth_unref(ctx, cur);
    nd_auth_slot_set(ctx, slot, nd_auth_ref(changed));
    cur = nd_auth_slot_get(slot);
    cr_assert_eq(cur, changed);
    nd_auth_unref(ctx, cur);
    nd_auth_slot_clear(ctx, slot);
    cr_assert_null(nd_auth_slot_get(slot));
    nd_auth_slot_free(slot);

    nd_auth_unref(ctx, changed);
    nd_auth_unref(ctx, same);
    nd_auth_unref(ctx, a);
}
