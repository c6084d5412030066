/* Operator mode: the trust chain operator -> account -> user, the MEMORY resolver and the
 * user-JWT login (inventory §5.3; nats-server 2.9.10 server/server.go configureResolver and
 * validateTrustedOperators, server/accounts.go, server/auth.go processClientOrLeafAuthentication,
 * server/client.go applyAccountLimits).
 *
 * Load (nd_auth_jwt_load, once per snapshot):
 * - every `operator` entry (a file, decorated or not, or an inline JWT) is decoded, its
 *   self-signature checked, and it must be an operator claim that has not expired; an operator
 *   that fails is logged and left out (the config parser already refused unreadable files);
 * - every resolver_preload entry (account public key -> account JWT) must be an account claim
 *   whose subject is that key, issued by one of the operators or one of their signing keys (only
 *   by a signing key when the operator sets strict_signing_key_usage); each good one becomes an
 *   account actor named by its public key, as nats-server names JWT accounts. A bad one is logged
 *   and skipped: its users cannot log in.
 *
 * Check (nd_auth_jwt_check, per CONNECT; pure):
 *   1. a user JWT must be present and decode (its signature by its "iss" key is checked there);
 *   2. its account is issuer_account when set, else iss; that account must be preloaded and
 *      must name iss as itself or one of its signing keys; a scoped signing key's template
 *      replaces the user's own permissions and limits, and such a user may set none itself
 *      (nats-server's scoped users);
 *   3. the user JWT and the account JWT must be within their times (exp/nbf);
 *   4. the account must not revoke the user (revocations of its key or "*" at or after iat);
 *   5. unless the user is a bearer token (refused when the account sets disallow_bearer), sig
 *      must be our nonce signed by the user's key (its "sub");
 *   6. the client's address must be inside one of the user's src CIDRs, when given, and
 *      allowed_connection_types, when given, must contain STANDARD (a plain client);
 *   7. now must be inside one of the user's connect-time windows ("times" in "times_location",
 *      jwt_times.c), when given; a window that is not "hh:mm:ss" or a location that is not a
 *      zone refuses the user;
 *   8. the grant carries the user's permissions (nd_perms_from_jwt), expiry, the end of its
 *      window, and the account's conn and subs limits for conn_auth.c to enforce.
 * Every failure is the same "Authorization Violation" for the client, as nats-server; the cause
 * is logged at debug level only, as there.
 * TODO(issue 6): the data limit, URL/full/cache
 * resolvers, claim updates over $SYS, trusted_keys without an operator JWT.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "auth/jwt.h"
#include "util/log.h"
#include "actors/alloc.h"
#include "util/nkey.h"

/* Reads an operator entry: a file path, or the JWT itself (nats-server's readOperatorJWT). */
static char *
read_entry(const char *entry)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = fopen(entry, "r");
    if (f != NULL) {
        size_t cap = 4096, r;
        text = nd_xmalloc(cap);
        while ((r = fread(text + n, 1, cap - n - 1, f)) > 0) {
            n += r;
            if (n + 1 >= cap) {
                if (cap >= 2u * ND_JWT_MAX_TOKEN)
                    break;
                cap *= 2;
                text = nd_xrealloc(text, cap);
            }
        }
        text[n] = '\0';
        fclose(f);
    } else {
        text = nd_xstrdup(entry);
        n = strlen(text);
    }
    char *jwt = NULL;
    if (nd_jwt_creds_parse(text, n, &jwt, NULL) != ND_OK)
        jwt = NULL;
    nd_free(text);
    return jwt;
}

static int64_t
now_s(void)
{
    return (int64_t)time(NULL);
}

/* Returns: the account claim's nats.limits.<key>, or -1 (unlimited) when absent: a JWT made by
 * hand may leave limits out, and Go's zero there would forbid everything. */
static int64_t
acct_limit(const nd_jwt_t *j, const char *key)
{
    json_t *lim = json_object_get(json_object_get(j->claims, "nats"), "limits");
    json_t *v = json_object_get(lim, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* Returns: whether key may issue account claims under the loaded operators. */
static bool
operator_signer(const nd_auth_t *a, const char *key)
{
    for (size_t i = 0; i < a->nops; i++) {
        const nd_jwt_t *op = a->ops[i];
        if (!op->u.op.strict_signing_key_usage && strcmp(op->sub, key) == 0)
            return true;
        for (size_t k = 0; k < op->u.op.signing_keys.n; k++)
            if (strcmp(op->u.op.signing_keys.v[k], key) == 0)
                return true;
    }
    return false;
}

void
nd_auth_jwt_load(nd_ctx_t *ctx, nd_auth_t *a, const nd_opts_t *o, const nd_auth_t *prev)
{
    char detail[256];
    int64_t now = now_s();
    for (size_t i = 0; i < o->operators.n; i++) {
        char *tok = read_entry(o->operators.v[i]);
        nd_jwt_t *op = NULL;
        nd_err_t e = tok != NULL ? nd_jwt_decode(tok, strlen(tok), &op, detail, sizeof detail)
                                 : ND_ERR_JWT_CHUNKS;
        nd_free(tok);
        if (e == ND_OK && op->type != ND_JWT_OPERATOR)
            e = ND_ERR_JWT_CLAIM_TYPE;
        if (e == ND_OK)
            e = nd_jwt_check_times(op, now);
        if (e != ND_OK) {
            nd_log_error("Operator %s refused: %s", o->operators.v[i], nd_strerror(e));
            nd_jwt_free(op);
            continue;
        }
        a->ops = nd_xrealloc(a->ops, (a->nops + 1) * sizeof(*a->ops));
        a->ops[a->nops++] = op;
    }
    for (size_t i = 0; i + 1 < o->resolver_preload.n; i += 2) {
        const char *pub = o->resolver_preload.v[i], *tok = o->resolver_preload.v[i + 1];
        nd_jwt_t *j = NULL;
        nd_err_t e = nd_jwt_decode(tok, strlen(tok), &j, detail, sizeof detail);
        const char *why = e != ND_OK ? nd_strerror(e) : NULL;
        if (why == NULL && j->type != ND_JWT_ACCOUNT)
            why = "not an account claim";
        else if (why == NULL && strcmp(j->sub, pub) != 0)
            why = "the JWT's subject is another account";
        else if (why == NULL && !operator_signer(a, j->iss))
            why = "not signed by a trusted operator";
        if (why != NULL) {
            nd_log_error("Account %s in resolver_preload refused: %s", pub, why);
            nd_jwt_free(j);
            continue;
        }
        nd_auth_acct_t *ae = nd_auth_add_acct(ctx, a, pub, prev);
        if (ae == NULL || ae->jwt != NULL) {
            nd_jwt_free(j); /* a duplicate key: the first one stands */
            continue;
        }
        ae->jwt = j;
        ae->max_conns = acct_limit(j, "conn");
        ae->max_subs = acct_limit(j, "subs");
        ae->max_payload = acct_limit(j, "payload");
    }
    if (prev == NULL && o->resolver != NULL && o->resolver->type != ND_RESOLVER_MEM)
        nd_log_warn("Account resolver: only MEMORY is supported yet by natsd; only the accounts "
                    "of resolver_preload are known");
    if (prev == NULL)
        nd_log_info("Operator mode: %zu trusted operator(s), %zu preloaded account(s)", a->nops,
                    a->naccts - 1);
}

void
nd_auth_jwt_free(nd_auth_t *a)
{
    for (size_t i = 0; i < a->nops; i++)
        nd_jwt_free(a->ops[i]);
    nd_free(a->ops);
    a->ops = NULL;
    a->nops = 0;
    for (size_t i = 0; i < a->naccts; i++) {
        nd_jwt_free(a->accts[i].jwt);
        a->accts[i].jwt = NULL;
    }
}

static const nd_auth_acct_t *
find_jwt_acct(const nd_auth_t *a, const char *pub)
{
    for (size_t i = 0; i < a->naccts; i++)
        if (a->accts[i].jwt != NULL && strcmp(a->accts[i].name, pub) == 0)
            return &a->accts[i];
    return NULL;
}

static bool
standard_allowed(const nd_jwt_strlist_t *types)
{
    if (types->n == 0)
        return true;
    for (size_t i = 0; i < types->n; i++)
        if (strcmp(types->v[i], "STANDARD") == 0)
            return true;
    return false;
}

/* Returns: whether ip is inside one of the CIDRs of src ("a.b.c.d/n" or IPv6; nats-server's
 * net.ParseCIDR: entries without a prefix length or that do not parse match nothing). An empty
 * list allows every address. */
static bool
src_allowed(const nd_jwt_strlist_t *src, const char *ip)
{
    if (src->n == 0)
        return true;
    uint8_t addr[16];
    int fam = AF_INET;
    size_t alen = 4;
    if (ip == NULL)
        return false;
    if (inet_pton(AF_INET, ip, addr) != 1) {
        fam = AF_INET6;
        alen = 16;
        if (inet_pton(AF_INET6, ip, addr) != 1)
            return false;
    }
    for (size_t i = 0; i < src->n; i++) {
        char buf[INET6_ADDRSTRLEN + 8];
        if (snprintf(buf, sizeof buf, "%s", src->v[i]) >= (int)sizeof buf)
            continue;
        char *slash = strchr(buf, '/');
        if (slash == NULL)
            continue;
        *slash = '\0';
        char *end = NULL;
        long bits = strtol(slash + 1, &end, 10);
        uint8_t net[16];
        if (end == slash + 1 || *end != '\0' || bits < 0 || bits > (long)alen * 8 ||
            inet_pton(fam, buf, net) != 1)
            continue;
        size_t full = (size_t)bits / 8;
        unsigned rest = (unsigned)bits % 8;
        if (memcmp(addr, net, full) != 0)
            continue;
        if (rest != 0) {
            uint8_t mask = (uint8_t)(0xffu << (8 - rest));
            if ((addr[full] & mask) != (net[full] & mask))
                continue;
        }
        return true;
    }
    return false;
}

/* Returns: whether a user JWT sets no permissions and no limits (jwt's HasEmptyPermissions: the
 * zero value, so an explicit -1 "unlimited" counts as set). */
static bool
user_lim_empty(const nd_jwt_user_limits_t *l)
{
    const nd_jwt_perms_t *p = &l->perms;
    return p->pub.allow.n == 0 && p->pub.deny.n == 0 && p->sub.allow.n == 0 && p->sub.deny.n == 0 &&
           !p->has_resp && l->subs == 0 && l->data == 0 && l->payload == 0 && l->src.n == 0 &&
           l->ntimes == 0 && (l->locale == NULL || l->locale[0] == '\0') && !l->bearer_token &&
           l->allowed_connection_types.n == 0;
}

/* Returns: the tighter of a user's and its account's limit, each -1 (any negative) when
 * unlimited (jwt.NoLimit; applyAccountLimits' minLimit). */
static int64_t
min_limit(int64_t user, int64_t acct)
{
    if (user < 0)
        return acct;
    return acct >= 0 && acct < user ? acct : user;
}

/* Logs why a user JWT was refused (debug, as nats-server) and fails. */
static bool
refuse(nd_jwt_t *u, const char *why)
{
    nd_log_debug("User JWT refused: %s", why);
    nd_jwt_free(u);
    return false;
}

bool
nd_auth_jwt_check(const nd_auth_t *a, const nd_auth_creds_t *cr, nd_auth_grant_t *g)
{
    if (cr->jwt == NULL || cr->jwt[0] == '\0') {
        nd_log_debug("User JWT refused: no JWT in CONNECT");
        return false;
    }
    nd_jwt_t *u = NULL;
    nd_err_t e = nd_jwt_decode(cr->jwt, strlen(cr->jwt), &u, NULL, 0);
    if (e != ND_OK)
        return refuse(NULL, nd_strerror(e));
    if (u->type != ND_JWT_USER)
        return refuse(u, "not a user claim");
    const char *acct_key = u->u.user.issuer_account != NULL && u->u.user.issuer_account[0] != '\0'
                               ? u->u.user.issuer_account
                               : u->iss;
    const nd_auth_acct_t *ae = find_jwt_acct(a, acct_key);
    if (ae == NULL)
        return refuse(u, "unknown account");
    const nd_jwt_signing_key_t *scope = NULL;
    if (!nd_jwt_account_has_signer(ae->jwt, u->iss, &scope))
        return refuse(u, "issuer is not the account or one of its signing keys");
    /* A scoped key's users take everything from its template and may set nothing themselves
     * (jwt's UserScope.ValidateScopedSigner). */
    if (scope != NULL && scope->scoped && !user_lim_empty(&u->u.user.lim))
        return refuse(u, "scoped users require no permissions or limits set");
    int64_t now = now_s();
    if (nd_jwt_check_times(u, now) != ND_OK)
        return refuse(u, "user JWT expired or not yet valid");
    if (nd_jwt_check_times(ae->jwt, now) != ND_OK)
        return refuse(u, "account JWT expired or not yet valid");
    if (nd_jwt_user_revoked(ae->jwt, u)) {
        g->revoked = true;
        return refuse(u, "user revoked");
    }
    const nd_jwt_user_limits_t *lim =
        scope != NULL && scope->scoped ? &scope->template : &u->u.user.lim;
    if (lim->bearer_token) {
        if (ae->jwt->u.acc.disallow_bearer)
            return refuse(u, "bearer tokens are not allowed by the account");
    } else if (cr->nonce == NULL || cr->sig == NULL ||
               !nd_jwt_verify_nonce(u->sub, strlen(u->sub), ND_NKEY_PREFIX_USER, cr->nonce,
                                    strlen(cr->nonce), cr->sig, strlen(cr->sig))) {
        return refuse(u, "signature of the nonce does not verify");
    }
    if (!src_allowed(&lim->src, cr->ip))
        return refuse(u, "client address not in the user's src CIDRs");
    if (!standard_allowed(&lim->allowed_connection_types))
        return refuse(u, "connection type not allowed");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    nd_jwt_times_t tr =
        nd_jwt_check_user_times(lim, (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec, &g->window_ns);
    if (tr == ND_JWT_TIMES_INVALID)
        return refuse(u, "invalid times or times_location");
    if (tr == ND_JWT_TIMES_OUTSIDE)
        return refuse(u, "outside connect times");
    size_t skipped = 0;
    g->perms = nd_perms_from_jwt(&lim->perms, &skipped);
    if (skipped > 0) {
        /* Skipping an entry would widen access when it is a deny: refuse the user instead. */
        nd_perms_unref(g->perms);
        g->perms = NULL;
        return refuse(u, "invalid permission entries");
    }
    g->owns_perms = g->perms != NULL;
    snprintf(g->jwt_user, sizeof g->jwt_user, "%s", u->sub);
    /* The key of the kept permission set (auth.h): a scoped user's come from the account JWT's
     * template, which a reload may change under the same user JWT. */
    snprintf(g->jwt_id, sizeof g->jwt_id, "%s/%s", u->jti != NULL ? u->jti : u->sub,
             lim != &u->u.user.lim && ae->jwt->jti != NULL ? ae->jwt->jti : "");
    g->user = g->jwt_user;
    g->acct = ae->acct;
    g->exp = u->exp;
    if (ae->jwt->exp > 0 && (g->exp == 0 || ae->jwt->exp < g->exp)) {
        g->exp = ae->jwt->exp;
        g->acct_expiry = true;
    }
    g->max_conns = ae->max_conns;
    /* The user's limits (a scoped user's: the template's) where the account's are not
     * tighter, as nats-server's applyAccountLimits. An absent limit is Go's zero value, 0: such
     * a user may neither subscribe nor send a payload; only -1 is unlimited. */
    g->max_subs = min_limit(lim->subs, ae->max_subs);
    g->max_payload = min_limit(lim->payload, ae->max_payload);
    nd_jwt_free(u);
    return true;
}
