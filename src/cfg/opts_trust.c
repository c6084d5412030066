/* Operator mode: operator JWTs, trusted keys, the account resolver and its TLS, preloaded
 * account JWTs and pinned accounts -> nd_opts_t, with nats-server's checks and texts.
 *
 * An operator is a JWT file (optionally "decorated" between -----BEGIN ... JWT----- lines) or an
 * inline JWT; its claims are read to default system_account and a URL resolver from the
 * operator's account_server_url, as nats-server does. Signatures are not verified here: that
 * belongs with the JWT work that will use them.
 * References: nats-server 2.9.10 server/opts.go processConfigFileLine ("operator", "resolver",
 * "resolver_tls", "resolver_preload", "resolver_pinned_accounts", "trusted"), server/jwt.go
 * readOperatorJWT, github.com/nats-io/jwt (ParseDecoratedJWT, Decode*Claims).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"

/* Decodes base64 (URL or standard alphabet, padding optional) into an owned NUL-terminated
 * buffer. Returns: NULL when s is not base64. */
static char *
b64_decode(const char *s, size_t n)
{
    char *out = nd_xmalloc(n * 3 / 4 + 4);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '-' || c == '+')
            v = 62;
        else if (c == '_' || c == '/')
            v = 63;
        else if (c == '=')
            break;
        else {
            nd_free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)(acc >> bits);
        }
    }
    out[o] = '\0';
    return out;
}

/* Decodes a JWT's claims. Returns: the owned JSON object, or NULL. */
static json_t *
jwt_claims(const char *jwt)
{
    const char *d1 = strchr(jwt, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.'))
        return NULL;
    char *payload = b64_decode(d1 + 1, (size_t)(d2 - d1 - 1));
    if (!payload)
        return NULL;
    json_t *j = json_loads(payload, 0, NULL);
    nd_free(payload);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* The "nats.type" of claims, or "". */
static const char *
claim_type(json_t *claims)
{
    json_t *n = json_object_get(claims, "nats");
    const char *t = json_string_value(json_object_get(n, "type"));
    if (!t)
        t = json_string_value(json_object_get(claims, "type"));
    return t ? t : "";
}

/* jwt.ParseDecoratedJWT: the line after a "-----BEGIN ... JWT-----" line, else the trimmed
 * contents. Returns: an owned JWT. */
static char *
decorated_jwt(const char *contents)
{
    const char *b = strstr(contents, "-----BEGIN");
    if (b) {
        const char *eol = strchr(b, '\n');
        if (eol) {
            const char *s = eol + 1;
            while (*s && isspace((unsigned char)*s))
                s++;
            size_t n = strcspn(s, "\r\n");
            return nd_xstrndup(s, n);
        }
    }
    while (*contents && isspace((unsigned char)*contents))
        contents++;
    size_t n = strlen(contents);
    while (n > 0 && isspace((unsigned char)contents[n - 1]))
        n--;
    return nd_xstrndup(contents, n);
}

/* readOperatorJWT. Returns: the owned claims, or NULL with the error text in why. */
static json_t *
read_operator(const char *file, char *why, size_t len)
{
    char *contents = NULL;
    FILE *f = fopen(file, "r");
    if (f) {
        size_t cap = 4096, n = 0;
        contents = nd_xmalloc(cap);
        size_t r;
        while ((r = fread(contents + n, 1, cap - n - 1, f)) > 0) {
            n += r;
            if (n + 1 >= cap && cap < (1u << 20)) {
                cap *= 2;
                contents = nd_xrealloc(contents, cap);
            } else if (n + 1 >= cap) {
                break;
            }
        }
        contents[n] = '\0';
        fclose(f);
    } else if (strncmp(file, "eyJ", 3) == 0) {
        contents = nd_xstrdup(file);
    } else {
        char msg[128];
        snprintf(msg, sizeof msg, "%s", strerror(errno));
        msg[0] = (char)tolower((unsigned char)msg[0]);
        snprintf(why, len, "open %s: %s", file, msg);
        return NULL;
    }
    char *jwt = decorated_jwt(contents);
    nd_free(contents);
    json_t *claims = jwt_claims(jwt);
    nd_free(jwt);
    if (claims == NULL) {
        snprintf(why, len, "expected 3 chunks");
        return NULL;
    }
    if (strcmp(claim_type(claims), "operator") != 0) {
        snprintf(why, len, "not operator claim");
        json_decref(claims);
        return NULL;
    }
    return claims;
}

static int
operators(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    nd_opts_t *o = a->o;
    const nd_cfg_node_t *v = e->val;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    if (v->type != ND_CFG_STRING)
        /* In nats-server's pedantic parse an array is []interface {}, which it does not take. */
        return nd_cfg_fail(a, at, "error parsing operators: unsupported type %s",
                           nd_cfg_go_type(v));
    char why[600];
    json_t *claims = read_operator(v->u.str.s, why, sizeof why);
    if (claims == NULL)
        return nd_cfg_fail(a, at, "error parsing operator JWT: %s", why);
    nd_strlist_free(&o->operators);
    nd_strlist_add(&o->operators, v->u.str.s);
    json_t *n = json_object_get(claims, "nats");
    const char *url = json_string_value(json_object_get(n, "account_server_url"));
    const char *sys = json_string_value(json_object_get(n, "system_account"));
    if (url && url[0] && o->resolver == NULL) {
        o->resolver = nd_xcalloc(1, sizeof(*o->resolver));
        o->resolver->type = ND_RESOLVER_URL;
        size_t l = strlen(url) + sizeof "/accounts";
        o->resolver->url = nd_xmalloc(l);
        snprintf(o->resolver->url, l, "%s/accounts", url);
    }
    if (sys && sys[0] && (o->system_account == NULL || o->system_account[0] == '\0'))
        nd_set_str(&o->system_account, sys);
    json_decref(claims);
    return 0;
}

/* A string or an array of strings (the pinned-accounts and trusted-keys forms). */
static int
string_or_array(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const char *what, nd_strlist_t *out)
{
    const nd_cfg_node_t *v = e->val;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    nd_strlist_t l = {0};
    if (v->type == ND_CFG_STRING) {
        nd_strlist_add(&l, v->u.str.s);
    } else if (v->type == ND_CFG_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++) {
            const nd_cfg_node_t *x = v->u.arr.v[i];
            if (x->type != ND_CFG_STRING) {
                nd_strlist_free(&l);
                return nd_cfg_fail(a, nd_cfg_at_node(x),
                                   "error parsing %s: unsupported type in array %s", what,
                                   nd_cfg_go_type(x));
            }
            nd_strlist_add(&l, x->u.str.s);
        }
    } else {
        return nd_cfg_fail(a, at, "error parsing %s: unsupported type %s", what, nd_cfg_go_type(v));
    }
    nd_strlist_free(out);
    *out = l;
    return 0;
}

/* resolver: MEM | MEMORY | URL("...") as nats-server's regular expressions read them. */
static int
resolver_string(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *s, nd_resolver_opts_t *r)
{
    /* (?i)(MEM|MEMORY)\s* matches anywhere in the string. */
    for (const char *p = s; *p; p++)
        if (strncasecmp(p, "mem", 3) == 0) {
            r->type = ND_RESOLVER_MEM;
            return 0;
        }
    /* (?i)(?:URL){1}(?:\({1}\s*"?([^\s"]*)"?\s*\){1})?\s* */
    for (const char *p = s; *p; p++) {
        if (strncasecmp(p, "url", 3) != 0)
            continue;
        const char *q = p + 3;
        if (*q != '(')
            break;
        q++;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == '"')
            q++;
        const char *st = q;
        while (*q && !isspace((unsigned char)*q) && *q != '"' && *q != ')')
            q++;
        const char *en = q;
        if (*q == '"')
            q++;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != ')')
            break;
        char *u = nd_xstrndup(st, (size_t)(en - st));
        char *parsed = NULL;
        int rc = nd_cfg_url(a, at, "account resolver", u, &parsed);
        nd_free(u);
        if (rc < 0)
            return -1;
        r->type = ND_RESOLVER_URL;
        nd_free(r->url);
        r->url = parsed;
        return 0;
    }
    return 0;
}

static int
resolver_map(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, nd_resolver_opts_t *r)
{
    char *type = NULL;
    int rc = 0;
    int64_t ms;
    const nd_cfg_node_t *x;
    const nd_cfg_entry_t *e;
    /* nats-server reads these keys case-sensitively; a type panic names the key. */
    if (rc == 0 && (e = nd_cfg_map_entry(v, "dir")))
        rc = nd_cfg_str(a, nd_cfg_at_entry(e), e->val, &r->dir);
    if (rc == 0 && (e = nd_cfg_map_entry(v, "type")))
        rc = nd_cfg_str(a, nd_cfg_at_entry(e), e->val, &type);
    if (rc == 0 && (e = nd_cfg_map_entry(v, "allow_delete")))
        rc = nd_cfg_bool(a, nd_cfg_at_entry(e), e->val, &r->allow_delete);
    if (rc == 0 && (e = nd_cfg_map_entry(v, "limit")))
        rc = nd_cfg_i64(a, nd_cfg_at_entry(e), e->val, &r->limit);
    /* nats-server reports these duration errors bare, at the resolver key. */
    if (rc == 0 && (x = nd_cfg_get(v, "ttl")) &&
        (rc = nd_cfg_duration_str(a, at, NULL, x, &ms)) == 0)
        r->ttl_ms = ms;
    if (rc == 0 && (x = nd_cfg_get(v, "interval")) &&
        (rc = nd_cfg_duration_str(a, at, NULL, x, &ms)) == 0)
        r->interval_ms = ms;
    if (rc == 0 && (x = nd_cfg_get(v, "timeout")) &&
        (rc = nd_cfg_duration_str(a, at, NULL, x, &ms)) == 0)
        r->timeout_ms = ms;
    if (rc == 0 && (!r->dir || !r->dir[0]))
        rc = nd_cfg_fail(a, at, "dir has no value and needs to point to a directory");
    struct stat st;
    if (rc == 0 && stat(r->dir, &st) == 0 && (!S_ISDIR(st.st_mode) || !(st.st_mode & S_IRUSR)))
        rc = nd_cfg_fail(a, at, "dir needs to point to an accessible directory");
    if (rc == 0 && type && strcasecmp(type, "cache") == 0) {
        r->type = ND_RESOLVER_CACHE;
        if (r->interval_ms != 0)
            rc = nd_cfg_fail(a, at, "CACHE does not accept sync");
        else if (r->allow_delete)
            rc = nd_cfg_fail(a, at, "CACHE does not accept allow_delete");
    } else if (rc == 0 && type && strcasecmp(type, "full") == 0) {
        r->type = ND_RESOLVER_FULL;
        if (r->ttl_ms != 0)
            rc = nd_cfg_fail(a, at, "FULL does not accept ttl");
    }
    nd_free(type);
    return rc;
}

static int
resolver(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    nd_opts_t *o = a->o;
    const nd_cfg_node_t *v = e->val;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    nd_resolver_opts_t *r = nd_xcalloc(1, sizeof(*r));
    int rc;
    if (v->type == ND_CFG_STRING)
        rc = resolver_string(a, at, v->u.str.s, r);
    else if (v->type == ND_CFG_MAP)
        rc = resolver_map(a, at, v, r);
    else
        rc =
            nd_cfg_fail(a, at, "error parsing operator resolver, wrong type %s", nd_cfg_go_type(v));
    if (rc == 0 && r->type == ND_RESOLVER_NONE)
        rc = nd_cfg_fail(a, at,
                         "error parsing account resolver, should be MEM or  URL(\"url\") or a map "
                         "containing dir and type state=[FULL|CACHE])");
    if (rc < 0) {
        nd_free(r->url);
        nd_free(r->dir);
        nd_free(r);
        return -1;
    }
    if (o->resolver) {
        nd_free(o->resolver->url);
        nd_free(o->resolver->dir);
        nd_free(o->resolver);
    }
    o->resolver = r;
    return 0;
}

static int
preload(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(e),
                           "preload should be a map of account_public_key:account_jwt");
    nd_strlist_t l = {0};
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *x = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(x);
        int rc = 0;
        if (x->val->type != ND_CFG_STRING) {
            rc = nd_cfg_fail(a, at, "preload map value should be a string JWT");
        } else {
            json_t *claims = jwt_claims(x->val->u.str.s);
            if (claims == NULL || strcmp(claim_type(claims), "account") != 0)
                rc = nd_cfg_fail(a, at, "invalid account JWT");
            json_decref(claims);
        }
        if (rc < 0) {
            nd_strlist_free(&l);
            return -1;
        }
        nd_strlist_add(&l, x->key);
        nd_strlist_add(&l, x->val->u.str.s);
    }
    nd_strlist_free(&a->o->resolver_preload);
    a->o->resolver_preload = l;
    return 0;
}

int
nd_cfg_apply_trust(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    nd_opts_t *o = a->o;
    const char *k = e->key;
    int rc;
    if (nd_cfg_key_is(k, "operator operators roots root root_operators root_operator")) {
        rc = operators(a, e);
    } else if (nd_cfg_key_is(k, "resolver account_resolver accounts_resolver")) {
        rc = resolver(a, e);
    } else if (nd_cfg_key_is(k, "resolver_tls")) {
        rc = nd_cfg_tls(a, e, true, &o->resolver_tls);
    } else if (nd_cfg_key_is(k, "resolver_preload")) {
        rc = preload(a, e);
    } else if (nd_cfg_key_is(k, "resolver_pinned_accounts")) {
        rc = string_or_array(a, e, "resolver_pinned_accounts", &o->resolver_pinned_accounts);
    } else if (nd_cfg_key_is(k, "trusted trusted_keys")) {
        rc = string_or_array(a, e, "trusted", &o->trusted_keys);
        for (size_t i = 0; rc == 0 && i < o->trusted_keys.n; i++)
            if (!nd_cfg_valid_nkey(o->trusted_keys.v[i], 'O'))
                rc = nd_cfg_fail(a, nd_cfg_at_entry(e),
                                 "trust key \"%s\" required to be a valid public operator nkey",
                                 o->trusted_keys.v[i]);
    } else {
        return 0;
    }
    return rc < 0 ? -1 : 1;
}
