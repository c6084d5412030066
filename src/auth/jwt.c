/* NATS JWTs: decode, verify, encode, creds files and nonce signatures; see jwt.h for the format
 * and its references. */
#include "auth/jwt.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "util/base64.h"
#include "actors/alloc.h"
#include "util/nkey.h"

/* ---- claim parsing helpers ------------------------------------------------------------------
 * Each getter treats an absent key and JSON null alike (Go leaves the zero value) and fails on
 * any other JSON type than the Go field's, recording the dotted field path for the error text. */

typedef struct pctx {
    nd_err_t err;
    char *detail;
    size_t cap;
} pctx_t;

static bool fail(pctx_t *p, nd_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool
fail(pctx_t *p, nd_err_t err, const char *fmt, ...)
{
    if (p->err == ND_OK) {
        p->err = err;
        if (p->detail != NULL && p->cap > 0) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->detail, p->cap, fmt, ap);
            va_end(ap);
        }
    }
    return false;
}

static json_t *
field(json_t *obj, const char *key)
{
    json_t *v = obj != NULL ? json_object_get(obj, key) : NULL;
    return json_is_null(v) ? NULL : v;
}

static bool
get_str(pctx_t *p, json_t *obj, const char *path, const char *key, char **out)
{
    json_t *v = field(obj, key);
    if (v == NULL)
        return true;
    if (!json_is_string(v))
        return fail(p, ND_ERR_JWT_FIELD, "field %s%s: expected a string", path, key);
    *out = nd_xstrndup(json_string_value(v), json_string_length(v));
    return true;
}

static bool
get_int(pctx_t *p, json_t *obj, const char *path, const char *key, int64_t *out)
{
    json_t *v = field(obj, key);
    if (v == NULL)
        return true;
    if (!json_is_integer(v))
        return fail(p, ND_ERR_JWT_FIELD, "field %s%s: expected an integer", path, key);
    *out = (int64_t)json_integer_value(v);
    return true;
}

static bool
get_bool(pctx_t *p, json_t *obj, const char *path, const char *key, bool *out)
{
    json_t *v = field(obj, key);
    if (v == NULL)
        return true;
    if (!json_is_boolean(v))
        return fail(p, ND_ERR_JWT_FIELD, "field %s%s: expected a boolean", path, key);
    *out = json_is_true(v);
    return true;
}

static bool
get_obj(pctx_t *p, json_t *obj, const char *path, const char *key, json_t **out)
{
    json_t *v = field(obj, key);
    *out = NULL;
    if (v == NULL)
        return true;
    if (!json_is_object(v))
        return fail(p, ND_ERR_JWT_FIELD, "field %s%s: expected an object", path, key);
    *out = v;
    return true;
}

static bool
get_arr(pctx_t *p, json_t *obj, const char *path, const char *key, json_t **out)
{
    json_t *v = field(obj, key);
    *out = NULL;
    if (v == NULL)
        return true;
    if (!json_is_array(v))
        return fail(p, ND_ERR_JWT_FIELD, "field %s%s: expected an array", path, key);
    *out = v;
    return true;
}

static void
strlist_free(nd_jwt_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nd_free(l->v[i]);
    nd_free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool
get_strlist(pctx_t *p, json_t *obj, const char *path, const char *key, nd_jwt_strlist_t *out)
{
    json_t *a;
    if (!get_arr(p, obj, path, key, &a))
        return false;
    if (a == NULL)
        return true;
    size_t n = json_array_size(a);
    out->v = nd_xcalloc(n ? n : 1, sizeof *out->v);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(a, i);
        if (!json_is_string(s))
            return fail(p, ND_ERR_JWT_FIELD, "field %s%s[%zu]: expected a string", path, key, i);
        out->v[out->n++] = nd_xstrndup(json_string_value(s), json_string_length(s));
    }
    return true;
}

/* A v1 user's "src" was one comma-separated string; v2 has a list. Both are accepted. */
static bool
get_cidrs(pctx_t *p, json_t *obj, const char *path, const char *key, nd_jwt_strlist_t *out)
{
    json_t *v = field(obj, key);
    if (!json_is_string(v))
        return get_strlist(p, obj, path, key, out);
    const char *s = json_string_value(v);
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ',';
    out->v = nd_xcalloc(cap, sizeof *out->v);
    while (*s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        while (n > 0 && isspace((unsigned char)*s)) {
            s++;
            n--;
        }
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        if (n > 0)
            out->v[out->n++] = nd_xstrndup(s, n);
        s += (e ? (size_t)(e - s) + 1 : strlen(s));
    }
    return true;
}

static bool
get_perm(pctx_t *p, json_t *obj, const char *path, const char *key, nd_jwt_perm_t *out)
{
    json_t *o;
    char sub[96];
    if (!get_obj(p, obj, path, key, &o))
        return false;
    if (o == NULL)
        return true;
    snprintf(sub, sizeof sub, "%s%s.", path, key);
    return get_strlist(p, o, sub, "allow", &out->allow) &&
           get_strlist(p, o, sub, "deny", &out->deny);
}

static bool
get_perms(pctx_t *p, json_t *obj, const char *path, nd_jwt_perms_t *out)
{
    json_t *resp;
    char sub[96];
    if (!get_perm(p, obj, path, "pub", &out->pub) || !get_perm(p, obj, path, "sub", &out->sub) ||
        !get_obj(p, obj, path, "resp", &resp))
        return false;
    if (resp != NULL) {
        out->has_resp = true;
        snprintf(sub, sizeof sub, "%sresp.", path);
        if (!get_int(p, resp, sub, "max", &out->resp_max) ||
            !get_int(p, resp, sub, "ttl", &out->resp_ttl_ns))
            return false;
    }
    return true;
}

static void
perms_free(nd_jwt_perms_t *x)
{
    strlist_free(&x->pub.allow);
    strlist_free(&x->pub.deny);
    strlist_free(&x->sub.allow);
    strlist_free(&x->sub.deny);
}

/* UserPermissionLimits: Permissions + Limits (UserLimits + NatsLimits) + the three flags, all
 * flattened into one object (a user claim's "nats", or a scoped signing key's "template"). */
static bool
get_user_limits(pctx_t *p, json_t *o, const char *path, nd_jwt_user_limits_t *u)
{
    json_t *times;
    if (!get_perms(p, o, path, &u->perms) || !get_int(p, o, path, "subs", &u->subs) ||
        !get_int(p, o, path, "data", &u->data) || !get_int(p, o, path, "payload", &u->payload) ||
        !get_cidrs(p, o, path, "src", &u->src) || !get_arr(p, o, path, "times", &times) ||
        !get_str(p, o, path, "times_location", &u->locale) ||
        !get_bool(p, o, path, "bearer_token", &u->bearer_token) ||
        !get_bool(p, o, path, "proxy_required", &u->proxy_required) ||
        !get_strlist(p, o, path, "allowed_connection_types", &u->allowed_connection_types))
        return false;
    if (times != NULL) {
        size_t n = json_array_size(times);
        u->times = nd_xcalloc(n ? n : 1, sizeof *u->times);
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_array_get(times, i);
            if (!json_is_object(t))
                return fail(p, ND_ERR_JWT_FIELD, "field %stimes[%zu]: expected an object", path, i);
            u->ntimes++;
            if (!get_str(p, t, path, "start", &u->times[i].start) ||
                !get_str(p, t, path, "end", &u->times[i].end))
                return false;
        }
    }
    return true;
}

static void
user_limits_free(nd_jwt_user_limits_t *u)
{
    perms_free(&u->perms);
    strlist_free(&u->src);
    for (size_t i = 0; i < u->ntimes; i++) {
        nd_free(u->times[i].start);
        nd_free(u->times[i].end);
    }
    nd_free(u->times);
    nd_free(u->locale);
    strlist_free(&u->allowed_connection_types);
}

static bool
get_js_limits(pctx_t *p, json_t *o, const char *path, nd_jwt_js_limits_t *j)
{
    return get_int(p, o, path, "mem_storage", &j->mem_storage) &&
           get_int(p, o, path, "disk_storage", &j->disk_storage) &&
           get_int(p, o, path, "streams", &j->streams) &&
           get_int(p, o, path, "consumer", &j->consumer) &&
           get_int(p, o, path, "max_ack_pending", &j->max_ack_pending) &&
           get_int(p, o, path, "mem_max_stream_bytes", &j->mem_max_stream_bytes) &&
           get_int(p, o, path, "disk_max_stream_bytes", &j->disk_max_stream_bytes) &&
           get_bool(p, o, path, "max_bytes_required", &j->max_bytes_required);
}

/* RevocationList: an object mapping a key to a Unix time. */
static bool
get_revocations(pctx_t *p, json_t *o, const char *path, const char *key, nd_jwt_revocation_t **out,
                size_t *nout)
{
    json_t *r;
    if (!get_obj(p, o, path, key, &r))
        return false;
    if (r == NULL)
        return true;
    size_t n = json_object_size(r);
    *out = nd_xcalloc(n ? n : 1, sizeof **out);
    const char *k;
    json_t *v;
    json_object_foreach(r, k, v)
    {
        if (!json_is_integer(v))
            return fail(p, ND_ERR_JWT_FIELD, "field %s%s.%s: expected an integer", path, key, k);
        (*out)[*nout].key = nd_xstrdup(k);
        (*out)[*nout].at = (int64_t)json_integer_value(v);
        (*nout)++;
    }
    return true;
}

static bool
get_export_type(pctx_t *p, json_t *o, const char *path, nd_jwt_export_type_t *t)
{
    json_t *v = field(o, "type");
    if (v == NULL)
        return true;
    if (json_is_string(v) && strcmp(json_string_value(v), "stream") == 0)
        *t = ND_JWT_EXPORT_STREAM;
    else if (json_is_string(v) && strcmp(json_string_value(v), "service") == 0)
        *t = ND_JWT_EXPORT_SERVICE;
    else
        return fail(p, ND_ERR_JWT_FIELD, "field %stype: unknown export type", path);
    return true;
}

static bool
get_export(pctx_t *p, json_t *o, const char *path, nd_jwt_export_t *e)
{
    char *rt = NULL;
    json_t *lat;
    bool ok =
        get_str(p, o, path, "name", &e->name) && get_str(p, o, path, "subject", &e->subject) &&
        get_export_type(p, o, path, &e->type) && get_bool(p, o, path, "token_req", &e->token_req) &&
        get_revocations(p, o, path, "revocations", &e->revocations, &e->nrevocations) &&
        get_str(p, o, path, "response_type", &rt) &&
        get_int(p, o, path, "response_threshold", &e->response_threshold_ns) &&
        get_obj(p, o, path, "service_latency", &lat) &&
        get_bool(p, o, path, "advertise", &e->advertise) &&
        get_bool(p, o, path, "allow_trace", &e->allow_trace);
    int64_t pos = 0;
    ok = ok && get_int(p, o, path, "account_token_position", &pos);
    if (ok && (pos < 0 || pos > UINT32_MAX))
        ok = fail(p, ND_ERR_JWT_FIELD, "field %saccount_token_position: out of range", path);
    e->account_token_position = (uint32_t)pos;
    if (ok && rt != NULL) {
        if (strcmp(rt, "Singleton") == 0)
            e->response_type = ND_JWT_RESP_SINGLETON;
        else if (strcmp(rt, "Stream") == 0)
            e->response_type = ND_JWT_RESP_STREAM;
        else if (strcmp(rt, "Chunked") == 0)
            e->response_type = ND_JWT_RESP_CHUNKED;
        else
            ok = fail(p, ND_ERR_JWT_FIELD, "field %sresponse_type: unknown response type", path);
    }
    nd_free(rt);
    if (ok && lat != NULL) {
        e->has_latency = true;
        json_t *s = field(lat, "sampling");
        /* SamplingRate unmarshals from an integer or the string "headers" (= 0). */
        if (json_is_integer(s))
            e->latency_sampling = (int64_t)json_integer_value(s);
        else if (json_is_string(s) && strcasecmp(json_string_value(s), "headers") == 0)
            e->latency_sampling = 0;
        else if (s != NULL)
            ok = fail(p, ND_ERR_JWT_FIELD, "field %sservice_latency.sampling: bad value", path);
        ok = ok && get_str(p, lat, path, "results", &e->latency_results);
    }
    return ok;
}

static bool
get_import(pctx_t *p, json_t *o, const char *path, nd_jwt_import_t *i)
{
    return get_str(p, o, path, "name", &i->name) && get_str(p, o, path, "subject", &i->subject) &&
           get_str(p, o, path, "account", &i->account) && get_str(p, o, path, "token", &i->token) &&
           get_str(p, o, path, "to", &i->to) &&
           get_str(p, o, path, "local_subject", &i->local_subject) &&
           get_export_type(p, o, path, &i->type) && get_bool(p, o, path, "share", &i->share) &&
           get_bool(p, o, path, "allow_trace", &i->allow_trace);
}

/* SigningKeys: an array of plain keys or of scope objects {"kind":"user_scope","key",...}. */
static bool
get_signing_keys(pctx_t *p, json_t *o, nd_jwt_account_t *a)
{
    json_t *arr;
    if (!get_arr(p, o, "nats.", "signing_keys", &arr))
        return false;
    if (arr == NULL)
        return true;
    size_t n = json_array_size(arr);
    a->signing_keys = nd_xcalloc(n ? n : 1, sizeof *a->signing_keys);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        nd_jwt_signing_key_t *k = &a->signing_keys[a->nsigning_keys];
        if (json_is_string(v)) {
            k->key = nd_xstrdup(json_string_value(v));
            a->nsigning_keys++;
            continue;
        }
        if (!json_is_object(v))
            return fail(p, ND_ERR_JWT_FIELD, "field nats.signing_keys[%zu]: bad entry", i);
        json_t *kind = field(v, "kind"), *tmpl;
        if (!json_is_string(kind) || strcmp(json_string_value(kind), "user_scope") != 0)
            return fail(p, ND_ERR_JWT_FIELD,
                        "field nats.signing_keys[%zu]: unknown signing key scope", i);
        a->nsigning_keys++;
        k->scoped = true;
        if (!get_str(p, v, "nats.signing_keys.", "key", &k->key) ||
            !get_str(p, v, "nats.signing_keys.", "role", &k->role) ||
            !get_str(p, v, "nats.signing_keys.", "description", &k->description) ||
            !get_obj(p, v, "nats.signing_keys.", "template", &tmpl))
            return false;
        if (k->key == NULL)
            return fail(p, ND_ERR_JWT_FIELD, "field nats.signing_keys[%zu]: scope without a key",
                        i);
        if (tmpl != NULL && !get_user_limits(p, tmpl, "nats.signing_keys.template.", &k->template))
            return false;
    }
    return true;
}

static bool
get_mappings(pctx_t *p, json_t *o, nd_jwt_account_t *a)
{
    json_t *m;
    if (!get_obj(p, o, "nats.", "mappings", &m))
        return false;
    if (m == NULL)
        return true;
    size_t n = json_object_size(m);
    a->mappings = nd_xcalloc(n ? n : 1, sizeof *a->mappings);
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v)
    {
        nd_jwt_mapping_t *mp = &a->mappings[a->nmappings++];
        mp->source = nd_xstrdup(k);
        if (json_is_null(v))
            continue;
        if (!json_is_array(v))
            return fail(p, ND_ERR_JWT_FIELD, "field nats.mappings.%s: expected an array", k);
        size_t nd = json_array_size(v);
        mp->dests = nd_xcalloc(nd ? nd : 1, sizeof *mp->dests);
        for (size_t i = 0; i < nd; i++) {
            json_t *d = json_array_get(v, i);
            if (!json_is_object(d))
                return fail(p, ND_ERR_JWT_FIELD, "field nats.mappings.%s[%zu]: expected an object",
                            k, i);
            nd_jwt_mapping_dest_t *dd = &mp->dests[mp->ndests++];
            int64_t w = 0;
            if (!get_str(p, d, "nats.mappings.", "subject", &dd->subject) ||
                !get_str(p, d, "nats.mappings.", "cluster", &dd->cluster) ||
                !get_int(p, d, "nats.mappings.", "weight", &w))
                return false;
            /* Weight is a Go uint8: anything outside 0..255 fails to unmarshal. */
            if (w < 0 || w > 255)
                return fail(p, ND_ERR_JWT_FIELD, "field nats.mappings.%s[%zu].weight: out of range",
                            k, i);
            dd->weight = (uint32_t)w;
        }
    }
    return true;
}

static bool
parse_account(pctx_t *p, json_t *nats, nd_jwt_account_t *a)
{
    json_t *lim, *tiers, *imps, *exps, *dp, *auth;
    if (!get_obj(p, nats, "nats.", "limits", &lim))
        return false;
    if (lim != NULL) {
        const char *lp = "nats.limits.";
        if (!get_int(p, lim, lp, "subs", &a->subs) || !get_int(p, lim, lp, "data", &a->data) ||
            !get_int(p, lim, lp, "payload", &a->payload) ||
            !get_int(p, lim, lp, "imports", &a->imports_max) ||
            !get_int(p, lim, lp, "exports", &a->exports_max) ||
            !get_bool(p, lim, lp, "wildcards", &a->wildcards) ||
            !get_bool(p, lim, lp, "disallow_bearer", &a->disallow_bearer) ||
            !get_int(p, lim, lp, "conn", &a->conn) || !get_int(p, lim, lp, "leaf", &a->leaf) ||
            !get_js_limits(p, lim, lp, &a->js) || !get_obj(p, lim, lp, "tiered_limits", &tiers))
            return false;
        if (tiers != NULL) {
            size_t n = json_object_size(tiers);
            a->tiers = nd_xcalloc(n ? n : 1, sizeof *a->tiers);
            const char *k;
            json_t *v;
            json_object_foreach(tiers, k, v)
            {
                if (!json_is_object(v))
                    return fail(p, ND_ERR_JWT_FIELD,
                                "field nats.limits.tiered_limits.%s: expected an object", k);
                nd_jwt_js_tier_t *t = &a->tiers[a->ntiers++];
                t->name = nd_xstrdup(k);
                if (!get_js_limits(p, v, "nats.limits.tiered_limits.", &t->lim))
                    return false;
            }
        }
    }
    if (!get_arr(p, nats, "nats.", "imports", &imps) ||
        !get_arr(p, nats, "nats.", "exports", &exps))
        return false;
    if (imps != NULL) {
        size_t n = json_array_size(imps);
        a->imports = nd_xcalloc(n ? n : 1, sizeof *a->imports);
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(imps, i);
            if (json_is_null(v))
                continue;
            if (!json_is_object(v))
                return fail(p, ND_ERR_JWT_FIELD, "field nats.imports[%zu]: expected an object", i);
            if (!get_import(p, v, "nats.imports.", &a->imports[a->nimports++]))
                return false;
        }
    }
    if (exps != NULL) {
        size_t n = json_array_size(exps);
        a->exports = nd_xcalloc(n ? n : 1, sizeof *a->exports);
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(exps, i);
            if (json_is_null(v))
                continue;
            if (!json_is_object(v))
                return fail(p, ND_ERR_JWT_FIELD, "field nats.exports[%zu]: expected an object", i);
            if (!get_export(p, v, "nats.exports.", &a->exports[a->nexports++]))
                return false;
        }
    }
    if (!get_signing_keys(p, nats, a) ||
        !get_revocations(p, nats, "nats.", "revocations", &a->revocations, &a->nrevocations) ||
        !get_obj(p, nats, "nats.", "default_permissions", &dp) || !get_mappings(p, nats, a) ||
        !get_obj(p, nats, "nats.", "authorization", &auth) ||
        !get_str(p, nats, "nats.", "cluster_traffic", &a->cluster_traffic))
        return false;
    if (dp != NULL && !get_perms(p, dp, "nats.default_permissions.", &a->default_permissions))
        return false;
    if (auth != NULL &&
        (!get_strlist(p, auth, "nats.authorization.", "auth_users", &a->auth_users) ||
         !get_strlist(p, auth, "nats.authorization.", "allowed_accounts",
                      &a->auth_allowed_accounts) ||
         !get_str(p, auth, "nats.authorization.", "xkey", &a->auth_xkey)))
        return false;
    return true;
}

static void
account_free(nd_jwt_account_t *a)
{
    for (size_t i = 0; i < a->ntiers; i++)
        nd_free(a->tiers[i].name);
    nd_free(a->tiers);
    for (size_t i = 0; i < a->nimports; i++) {
        nd_jwt_import_t *x = &a->imports[i];
        nd_free(x->name);
        nd_free(x->subject);
        nd_free(x->account);
        nd_free(x->token);
        nd_free(x->to);
        nd_free(x->local_subject);
    }
    nd_free(a->imports);
    for (size_t i = 0; i < a->nexports; i++) {
        nd_jwt_export_t *x = &a->exports[i];
        nd_free(x->name);
        nd_free(x->subject);
        for (size_t j = 0; j < x->nrevocations; j++)
            nd_free(x->revocations[j].key);
        nd_free(x->revocations);
        nd_free(x->latency_results);
    }
    nd_free(a->exports);
    for (size_t i = 0; i < a->nsigning_keys; i++) {
        nd_jwt_signing_key_t *k = &a->signing_keys[i];
        nd_free(k->key);
        nd_free(k->role);
        nd_free(k->description);
        user_limits_free(&k->template);
    }
    nd_free(a->signing_keys);
    for (size_t i = 0; i < a->nrevocations; i++)
        nd_free(a->revocations[i].key);
    nd_free(a->revocations);
    perms_free(&a->default_permissions);
    for (size_t i = 0; i < a->nmappings; i++) {
        for (size_t j = 0; j < a->mappings[i].ndests; j++) {
            nd_free(a->mappings[i].dests[j].subject);
            nd_free(a->mappings[i].dests[j].cluster);
        }
        nd_free(a->mappings[i].dests);
        nd_free(a->mappings[i].source);
    }
    nd_free(a->mappings);
    strlist_free(&a->auth_users);
    strlist_free(&a->auth_allowed_accounts);
    nd_free(a->auth_xkey);
    nd_free(a->cluster_traffic);
}

static bool
parse_operator(pctx_t *p, json_t *nats, nd_jwt_operator_t *o)
{
    return get_strlist(p, nats, "nats.", "signing_keys", &o->signing_keys) &&
           get_str(p, nats, "nats.", "account_server_url", &o->account_server_url) &&
           get_strlist(p, nats, "nats.", "operator_service_urls", &o->operator_service_urls) &&
           get_str(p, nats, "nats.", "system_account", &o->system_account) &&
           get_str(p, nats, "nats.", "assert_server_version", &o->assert_server_version) &&
           get_bool(p, nats, "nats.", "strict_signing_key_usage", &o->strict_signing_key_usage);
}

static void
operator_free(nd_jwt_operator_t *o)
{
    strlist_free(&o->signing_keys);
    nd_free(o->account_server_url);
    strlist_free(&o->operator_service_urls);
    nd_free(o->system_account);
    nd_free(o->assert_server_version);
}

void
nd_jwt_free(nd_jwt_t *j)
{
    if (j == NULL)
        return;
    switch (j->type) {
    case ND_JWT_OPERATOR:
        operator_free(&j->u.op);
        break;
    case ND_JWT_ACCOUNT:
        account_free(&j->u.acc);
        break;
    case ND_JWT_USER:
        user_limits_free(&j->u.user.lim);
        nd_free(j->u.user.issuer_account);
        break;
    default:
        break;
    }
    nd_free(j->type_name);
    nd_free(j->jti);
    nd_free(j->iss);
    nd_free(j->sub);
    nd_free(j->name);
    nd_free(j->aud);
    strlist_free(&j->tags);
    json_decref(j->claims);
    nd_free(j);
}

/* ---- decoding ------------------------------------------------------------------------------- */

/* Decodes one RawURL segment into a fresh buffer (NUL-terminated for convenience). */
static uint8_t *
seg_decode(const char *s, size_t len, size_t *outlen)
{
    uint8_t *buf = nd_xmalloc(nd_b64_decoded_max(len) + 1);
    if (!nd_b64_decode(ND_B64_RAWURL, s, len, buf, nd_b64_decoded_max(len), outlen)) {
        nd_free(buf);
        return NULL;
    }
    buf[*outlen] = '\0';
    return buf;
}

static bool
check_header(pctx_t *p, const char *s, size_t len)
{
    size_t n;
    uint8_t *raw = seg_decode(s, len, &n);
    if (raw == NULL)
        return fail(p, ND_ERR_JWT_HEADER, "header is not base64url");
    json_t *h = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
    nd_free(raw);
    bool ok = false;
    if (!json_is_object(h)) {
        fail(p, ND_ERR_JWT_HEADER, "header is not a JSON object");
        goto out;
    }
    json_t *typ = field(h, "typ"), *alg = field(h, "alg");
    if ((typ != NULL && !json_is_string(typ)) || (alg != NULL && !json_is_string(alg))) {
        fail(p, ND_ERR_JWT_HEADER, "header fields must be strings");
        goto out;
    }
    /* Header.Valid: typ upper-cased is "JWT"; alg lower-cased is "ed25519" or "ed25519-nkey". */
    if (typ == NULL || strcasecmp(json_string_value(typ), "JWT") != 0 ||
        json_string_length(typ) != 3) {
        fail(p, ND_ERR_JWT_HEADER_TYPE, "not supported type");
        goto out;
    }
    const char *a = alg != NULL ? json_string_value(alg) : "";
    if ((strcasecmp(a, "ed25519") != 0 && strcasecmp(a, "ed25519-nkey") != 0) ||
        strlen(a) != json_string_length(alg)) {
        fail(p, ND_ERR_JWT_HEADER_ALG, "unexpected algorithm");
        goto out;
    }
    ok = true;
out:
    json_decref(h);
    return ok;
}

static nd_jwt_type_t
type_of(const char *t, int *unsupported)
{
    *unsupported = 0;
    if (strcmp(t, "operator") == 0)
        return ND_JWT_OPERATOR;
    if (strcmp(t, "account") == 0)
        return ND_JWT_ACCOUNT;
    if (strcmp(t, "user") == 0)
        return ND_JWT_USER;
    if (strcmp(t, "activation") == 0)
        return ND_JWT_ACTIVATION;
    if (strcmp(t, "cluster") == 0 || strcmp(t, "server") == 0)
        *unsupported = 1;
    return ND_JWT_GENERIC;
}

/* The issuer roles that may sign each claim type (Claims.ExpectedPrefixes); other types: any. */
static bool
issuer_role_ok(nd_jwt_type_t t, uint8_t role)
{
    switch (t) {
    case ND_JWT_OPERATOR:
    case ND_JWT_ACCOUNT:
        return role == ND_NKEY_PREFIX_OPERATOR;
    case ND_JWT_USER:
    case ND_JWT_ACTIVATION:
        return role == ND_NKEY_PREFIX_ACCOUNT;
    default:
        return true;
    }
}

/* The role the subject key must have (the claim's Validate); false for types not checked. */
static bool
subject_role(nd_jwt_type_t t, uint8_t *role)
{
    switch (t) {
    case ND_JWT_OPERATOR:
        *role = ND_NKEY_PREFIX_OPERATOR;
        return true;
    case ND_JWT_ACCOUNT:
        *role = ND_NKEY_PREFIX_ACCOUNT;
        return true;
    case ND_JWT_USER:
        *role = ND_NKEY_PREFIX_USER;
        return true;
    default:
        return false;
    }
}

nd_err_t
nd_jwt_decode(const char *tok, size_t len, nd_jwt_t **out, char *detail, size_t cap)
{
    pctx_t pc = {ND_OK, detail, cap}, *p = &pc;
    nd_jwt_t *j = NULL;
    uint8_t *craw = NULL, *sig = NULL;
    *out = NULL;
    if (detail != NULL && cap > 0)
        detail[0] = '\0';
    if (tok == NULL || len > ND_JWT_MAX_TOKEN) {
        fail(p, ND_ERR_JWT_TOO_LARGE, "token size %zu exceeds maximum of %d bytes", len,
             ND_JWT_MAX_TOKEN);
        return pc.err;
    }
    const char *d1 = memchr(tok, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
    if (d1 == NULL || d2 == NULL || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)) != NULL) {
        fail(p, ND_ERR_JWT_CHUNKS, "expected 3 chunks");
        return pc.err;
    }
    size_t hlen = (size_t)(d1 - tok), clen = (size_t)(d2 - d1 - 1);
    size_t slen = len - (size_t)(d2 + 1 - tok);
    if (!check_header(p, tok, hlen))
        return pc.err;

    size_t cn;
    craw = seg_decode(d1 + 1, clen, &cn);
    if (craw == NULL) {
        fail(p, ND_ERR_JWT_CLAIMS, "claims are not base64url");
        goto done;
    }
    json_error_t jerr;
    json_t *claims = json_loadb((const char *)craw, cn, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(claims)) {
        json_decref(claims);
        fail(p, ND_ERR_JWT_CLAIMS, "claims are not a JSON object");
        goto done;
    }
    j = nd_new(nd_jwt_t);
    j->claims = claims;

    /* identifier: a top-level "type" makes a v1 claim; else nats.type and nats.version. */
    json_t *nats;
    char *v1type = NULL, *v2type = NULL;
    int64_t version = 0;
    if (!get_str(p, claims, "", "type", &v1type) || !get_obj(p, claims, "", "nats", &nats) ||
        !get_str(p, nats, "nats.", "type", &v2type) ||
        !get_int(p, nats, "nats.", "version", &version)) {
        nd_free(v1type);
        nd_free(v2type);
        goto done;
    }
    if (v1type != NULL && v1type[0] != '\0') {
        j->version = 1;
        j->type_name = v1type;
        nd_free(v2type);
    } else {
        nd_free(v1type);
        j->version = (int)(version > 2 ? 3 : version < 0 ? 0 : version);
        j->type_name = v2type != NULL ? v2type : nd_xstrdup("");
    }
    if (version > 2) {
        fail(p, ND_ERR_JWT_VERSION, "JWT was generated by a newer version");
        goto done;
    }
    int unsupported;
    j->type = type_of(j->type_name, &unsupported);
    if (unsupported) {
        fail(p, ND_ERR_JWT_CLAIM_TYPE, "%s claims are not supported", j->type_name);
        goto done;
    }
    if (!get_str(p, claims, "", "jti", &j->jti) || !get_str(p, claims, "", "iss", &j->iss) ||
        !get_str(p, claims, "", "sub", &j->sub) || !get_str(p, claims, "", "name", &j->name) ||
        !get_str(p, claims, "", "aud", &j->aud) || !get_int(p, claims, "", "iat", &j->iat) ||
        !get_int(p, claims, "", "exp", &j->exp) || !get_int(p, claims, "", "nbf", &j->nbf) ||
        !get_strlist(p, nats, "nats.", "tags", &j->tags))
        goto done;

    /* The signature, with the key the claims name as issuer (any public role at this point, as
     * ClaimsData.verify; the role is checked right after). */
    size_t sn;
    sig = seg_decode(d2 + 1, slen, &sn);
    if (sig == NULL) {
        fail(p, ND_ERR_JWT_SIG_ENCODING, "signature is not base64url");
        goto done;
    }
    uint8_t ikey[32], irole;
    if (j->iss == NULL ||
        !nd_nkey_decode_public(j->iss, strlen(j->iss), ND_NKEY_PREFIX_ANY, &irole, ikey)) {
        fail(p, ND_ERR_JWT_SIGNATURE, "claim failed V%d signature verification: bad issuer key",
             j->version <= 1 ? 1 : 2);
        goto done;
    }
    const char *signed_part = j->version <= 1 ? d1 + 1 : tok;
    size_t signed_len = j->version <= 1 ? clen : (size_t)(d2 - tok);
    if (!nd_nkey_verify(ikey, signed_part, signed_len, sig, sn)) {
        fail(p, ND_ERR_JWT_SIGNATURE, "claim failed V%d signature verification",
             j->version <= 1 ? 1 : 2);
        goto done;
    }
    if (!issuer_role_ok(j->type, irole)) {
        fail(p, ND_ERR_JWT_ISSUER, "unable to validate expected prefixes of issuer %s", j->iss);
        goto done;
    }
    uint8_t srole;
    if (subject_role(j->type, &srole)) {
        if (j->sub == NULL || !nd_nkey_decode_public(j->sub, strlen(j->sub), srole, NULL, NULL)) {
            fail(p, ND_ERR_JWT_SUBJECT, "subject is not a valid %s key", j->type_name);
            goto done;
        }
    }

    switch (j->type) {
    case ND_JWT_OPERATOR:
        parse_operator(p, nats, &j->u.op);
        break;
    case ND_JWT_ACCOUNT:
        parse_account(p, nats, &j->u.acc);
        break;
    case ND_JWT_USER:
        if (get_user_limits(p, nats, "nats.", &j->u.user.lim))
            get_str(p, nats, "nats.", "issuer_account", &j->u.user.issuer_account);
        break;
    default:
        break;
    }

done:
    nd_free(craw);
    nd_free(sig);
    if (pc.err != ND_OK) {
        nd_jwt_free(j);
        return pc.err;
    }
    *out = j;
    return ND_OK;
}

nd_err_t
nd_jwt_check_times(const nd_jwt_t *jwt, int64_t now)
{
    if (jwt->exp > 0 && now > jwt->exp)
        return ND_ERR_JWT_EXPIRED;
    if (jwt->nbf > 0 && jwt->nbf > now)
        return ND_ERR_JWT_NOT_YET_VALID;
    return ND_OK;
}

bool
nd_jwt_revoked(const nd_jwt_revocation_t *list, size_t n, const char *key, int64_t issued_at)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = list[i].key;
        if ((strcmp(k, "*") == 0 || (key != NULL && strcmp(k, key) == 0)) &&
            list[i].at >= issued_at)
            return true;
    }
    return false;
}

bool
nd_jwt_user_revoked(const nd_jwt_t *account, const nd_jwt_t *user)
{
    if (user == NULL || user->iat == 0 || user->sub == NULL || user->sub[0] == '\0')
        return true;
    if (account == NULL || account->type != ND_JWT_ACCOUNT)
        return false;
    return nd_jwt_revoked(account->u.acc.revocations, account->u.acc.nrevocations, user->sub,
                          user->iat);
}

bool
nd_jwt_account_has_signer(const nd_jwt_t *account, const char *key,
                          const nd_jwt_signing_key_t **scope)
{
    if (scope != NULL)
        *scope = NULL;
    if (account == NULL || key == NULL || account->type != ND_JWT_ACCOUNT)
        return false;
    if (account->sub != NULL && strcmp(account->sub, key) == 0)
        return true;
    for (size_t i = 0; i < account->u.acc.nsigning_keys; i++) {
        if (strcmp(account->u.acc.signing_keys[i].key, key) == 0) {
            if (scope != NULL)
                *scope = &account->u.acc.signing_keys[i];
            return true;
        }
    }
    return false;
}

/* ---- encoding ------------------------------------------------------------------------------- */

/* ClaimsData.hash: SHA-512/256 over the JSON of the standard claims in struct order (aud, exp,
 * jti, iat, iss, name, nbf, sub; empty ones left out, jti always empty here), base32. */
static bool
claims_hash(json_t *c, char out[53])
{
    static const char *const keys[] = {"aud", "exp", "jti", "iat", "iss", "name", "nbf", "sub"};
    json_t *h = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(c, keys[i]);
        if (v == NULL || strcmp(keys[i], "jti") == 0 ||
            (json_is_string(v) && json_string_length(v) == 0) ||
            (json_is_integer(v) && json_integer_value(v) == 0))
            continue;
        json_object_set(h, keys[i], v);
    }
    char *s = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (s == NULL)
        return false;
    uint8_t md[64];
    unsigned int mdlen = 0;
    bool ok = EVP_Digest(s, strlen(s), md, &mdlen, EVP_sha512_256(), NULL) == 1 && mdlen == 32;
    free(s);
    if (ok)
        nd_nkey_base32(md, 32, out);
    return ok;
}

static char *
b64url(const void *p, size_t n)
{
    char *o = nd_xmalloc(nd_b64_encoded_len(ND_B64_RAWURL, n) + 1);
    nd_b64_encode(ND_B64_RAWURL, p, n, o);
    return o;
}

static const char *
claim_type_name(const json_t *c)
{
    json_t *t = json_object_get(c, "type");
    if (json_is_string(t))
        return json_string_value(t);
    t = json_object_get(json_object_get(c, "nats"), "type");
    return json_is_string(t) ? json_string_value(t) : "";
}

nd_err_t
nd_jwt_encode(const json_t *claims, const char *seed, size_t seedlen, unsigned flags, char **out)
{
    *out = NULL;
    if (!json_is_object(claims))
        return ND_ERR_JWT_ENCODE;
    uint8_t sk[32], pk[32], role;
    if (!nd_nkey_decode_seed(seed, seedlen, &role, sk) || !nd_nkey_seed_public(sk, pk)) {
        nd_nkey_wipe(sk, sizeof sk);
        return ND_ERR_JWT_SEED;
    }
    nd_err_t err = ND_OK;
    json_t *c = json_deep_copy(claims);
    char *h = NULL, *body = NULL, *cs = NULL, *signing = NULL;
    if (!(flags & ND_JWT_ENC_RAW)) {
        int unsupported;
        if (!issuer_role_ok(type_of(claim_type_name(c), &unsupported), role)) {
            err = ND_ERR_JWT_SEED_ROLE;
            goto out;
        }
        char iss[ND_NKEY_PUBLIC_LEN + 1], jti[53];
        nd_nkey_encode_public(role, pk, iss);
        json_object_set_new(c, "iss", json_string(iss));
        if (!json_is_integer(json_object_get(c, "iat")))
            json_object_set_new(c, "iat", json_integer((json_int_t)time(NULL)));
        if (!claims_hash(c, jti)) {
            err = ND_ERR_JWT_ENCODE;
            goto out;
        }
        json_object_set_new(c, "jti", json_string(jti));
        /* Claims.updateVersion: a v2 claim says so in nats.version; without it a decoder takes
         * the token for v1 and checks the v1 signature. */
        json_t *nats = json_object_get(c, "nats");
        if (!(flags & ND_JWT_ENC_V1) && json_is_object(nats) && json_object_get(c, "type") == NULL)
            json_object_set_new(nats, "version", json_integer(2));
    }
    static const char hdr_v2[] = "{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}";
    static const char hdr_v1[] = "{\"typ\":\"JWT\",\"alg\":\"ed25519\"}";
    const char *hdr = (flags & ND_JWT_ENC_V1) ? hdr_v1 : hdr_v2;
    h = b64url(hdr, strlen(hdr));
    cs = json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (cs == NULL) {
        err = ND_ERR_JWT_ENCODE;
        goto out;
    }
    body = b64url(cs, strlen(cs));
    size_t hl = strlen(h), bl = strlen(body);
    signing = nd_xmalloc(hl + 1 + bl + 1 + nd_b64_encoded_len(ND_B64_RAWURL, ND_NKEY_SIG_LEN) + 1);
    memcpy(signing, h, hl);
    signing[hl] = '.';
    memcpy(signing + hl + 1, body, bl);
    signing[hl + 1 + bl] = '\0';
    uint8_t sig[ND_NKEY_SIG_LEN];
    bool ok = (flags & ND_JWT_ENC_V1) ? nd_nkey_sign(sk, body, bl, sig)
                                      : nd_nkey_sign(sk, signing, hl + 1 + bl, sig);
    if (!ok) {
        err = ND_ERR_JWT_ENCODE;
        goto out;
    }
    signing[hl + 1 + bl] = '.';
    nd_b64_encode(ND_B64_RAWURL, sig, sizeof sig, signing + hl + 1 + bl + 1);
    *out = signing;
    signing = NULL;
out:
    nd_nkey_wipe(sk, sizeof sk);
    json_decref(c);
    nd_free(h);
    nd_free(body);
    free(cs);
    nd_free(signing);
    return err;
}

/* ---- creds files ---------------------------------------------------------------------------- */

typedef struct line {
    const char *s;
    size_t n;
} line_t;

static bool
ends_with_dashes(line_t l)
{
    return l.n >= 3 && memcmp(l.s + l.n - 3, "---", 3) == 0;
}

/* `[-]{3,}.*[-]{3,}` right before the end of the line, anywhere in it: the line ends with three
 * dashes and has another three before those. */
static bool
open_line(line_t l)
{
    if (!ends_with_dashes(l))
        return false;
    for (size_t i = 0; i + 3 <= l.n - 3; i++)
        if (memcmp(l.s + i, "---", 3) == 0)
            return true;
    return false;
}

/* The same, anchored at the start of the line. */
static bool
close_line(line_t l)
{
    return l.n >= 6 && memcmp(l.s, "---", 3) == 0 && ends_with_dashes(l);
}

/* `[\w\-.=]+`: the whole line. */
static bool
token_line(line_t l)
{
    if (l.n == 0)
        return false;
    for (size_t i = 0; i < l.n; i++) {
        unsigned char c = (unsigned char)l.s[i];
        if (!(isalnum(c) || c == '_' || c == '-' || c == '.' || c == '='))
            return false;
    }
    return true;
}

static line_t
trim(line_t l)
{
    while (l.n > 0 && isspace((unsigned char)l.s[0])) {
        l.s++;
        l.n--;
    }
    while (l.n > 0 && isspace((unsigned char)l.s[l.n - 1]))
        l.n--;
    return l;
}

nd_err_t
nd_jwt_creds_parse(const char *text, size_t len, char **jwt, char **seed)
{
    if (jwt != NULL)
        *jwt = NULL;
    if (seed != NULL)
        *seed = NULL;
    if (text == NULL)
        return ND_ERR_JWT_CREDS;
    /* Split into lines ("\r\n" or "\n"); a creds file is small, but bound the work anyway. */
    if (len > ND_JWT_MAX_TOKEN * 2)
        return ND_ERR_JWT_CREDS;
    size_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += text[i] == '\n';
    line_t *lines = nd_xcalloc(nl, sizeof *lines);
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || text[i] == '\n') {
            line_t l = {text + start, i - start};
            if (l.n > 0 && l.s[l.n - 1] == '\r')
                l.n--;
            lines[k++] = l;
            start = i + 1;
        }
    }
    line_t found[2];
    size_t nfound = 0;
    for (size_t i = 0; i + 2 < k && nfound < 2; i++) {
        if (open_line(lines[i]) && token_line(lines[i + 1]) && close_line(lines[i + 2])) {
            found[nfound++] = lines[i + 1];
            i += 2;
        }
    }
    line_t j = {0}, s = {0};
    if (nfound > 0) {
        j = found[0];
    } else {
        j = trim((line_t){text, len});
    }
    if (nfound > 1) {
        s = found[1];
    } else {
        for (size_t i = 0; i < k; i++) {
            line_t t = trim(lines[i]);
            if (t.n >= 2 && t.s[0] == 'S' && (t.s[1] == 'O' || t.s[1] == 'A' || t.s[1] == 'U')) {
                s = t;
                break;
            }
        }
    }
    nd_free(lines);
    bool want_jwt = jwt != NULL, want_seed = seed != NULL;
    if ((want_jwt && j.n == 0) || (want_seed && s.n == 0))
        return ND_ERR_JWT_CREDS;
    if (want_jwt)
        *jwt = nd_xstrndup(j.s, j.n);
    if (want_seed)
        *seed = nd_xstrndup(s.s, s.n);
    return ND_OK;
}

/* ---- nonces --------------------------------------------------------------------------------- */

bool
nd_jwt_nonce(char out[ND_JWT_NONCE_LEN + 1])
{
    uint8_t raw[11];
    if (!nd_nkey_random(raw, sizeof raw))
        return false;
    nd_b64_encode(ND_B64_RAWURL, raw, sizeof raw, out);
    return true;
}

bool
nd_jwt_verify_nonce(const char *pub, size_t publen, uint8_t role, const void *nonce, size_t nlen,
                    const char *sig, size_t siglen)
{
    uint8_t key[32], raw[ND_NKEY_SIG_LEN + 4];
    size_t n;
    if (pub == NULL || sig == NULL || !nd_nkey_decode_public(pub, publen, role, NULL, key))
        return false;
    /* RawURL first; standard base64 as a fallback (auth.go). A signature is 86 or 88
     * characters; anything longer cannot decode into the 64-byte buffer and is refused. */
    if (!nd_b64_decode(ND_B64_RAWURL, sig, siglen, raw, sizeof raw, &n) &&
        !nd_b64_decode(ND_B64_STD, sig, siglen, raw, sizeof raw, &n))
        return false;
    return nd_nkey_verify(key, nonce, nlen, raw, n);
}

bool
nd_jwt_sign_nonce(const char *seed, size_t seedlen, const void *nonce, size_t nlen, char **out)
{
    uint8_t sk[32], sig[ND_NKEY_SIG_LEN];
    *out = NULL;
    bool ok = nd_nkey_decode_seed(seed, seedlen, NULL, sk) && nd_nkey_sign(sk, nonce, nlen, sig);
    nd_nkey_wipe(sk, sizeof sk);
    if (ok)
        *out = b64url(sig, sizeof sig);
    return ok;
}
