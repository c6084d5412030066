/* See jsreq.h. Reference: Go's encoding/json (Unmarshal into a struct), nats-server
 * server/jetstream_api.go (unmarshalRequest, isEmptyRequest). */
#include "js/jsreq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/gojson.h"

static const char *const gotypes[] = {
    [JS_RT_U64] = "uint64",   [JS_RT_INT] = "int",        [JS_RT_STR] = "string",
    [JS_RT_BOOL] = "bool",    [JS_RT_TIME] = "time.Time", [JS_RT_STRS] = "[]string",
};

static bool
type_err(nd_jserr_t *err, const char *what, const char *goname, const char *field, js_rtype_t t)
{
    return nd_jserr_setf(err, ND_JSE_INVALID_JSON,
                         "json: cannot unmarshal %s into Go struct field %s.%s of type %s", what,
                         goname, field, gotypes[t]);
}

/* Decodes one value. Returns: false with err. */
static bool
decode(const nd_apijson_t *aj, const char *goname, const js_rfield_t *f, const json_t *v,
       js_rval_t *out, nd_jserr_t *err)
{
    char nb[128], what[160];
    switch (f->type) {
    case JS_RT_U64:
    case JS_RT_INT:
        if (!json_is_number(v))
            return type_err(err, nd_apijson_kind(v), goname, f->name, f->type);
        if (json_is_integer(v) && (f->type == JS_RT_INT || json_integer_value(v) >= 0)) {
            out->i = json_integer_value(v);
            out->u = (uint64_t)out->i;
            break;
        }
        if (f->type == JS_RT_U64) {
            /* a uint64 above INT64_MAX: an integer literal only */
            const char *t = nd_apijson_num_text(aj, v, nb, sizeof nb);
            if (*t != '-' && strspn(t, "0123456789") == strlen(t) && strlen(t) <= 20) {
                char *e;
                unsigned long long x = strtoull(t, &e, 10);
                if (*e == '\0') {
                    out->u = x;
                    break;
                }
            }
        }
        snprintf(what, sizeof what, "number %s", nd_apijson_num_text(aj, v, nb, sizeof nb));
        return type_err(err, what, goname, f->name, f->type);
    case JS_RT_STR:
        if (!json_is_string(v))
            return type_err(err, nd_apijson_kind(v), goname, f->name, f->type);
        out->s = json_string_value(v);
        break;
    case JS_RT_TIME:
        if (!json_is_string(v))
            return type_err(err, nd_apijson_kind(v), goname, f->name, f->type);
        out->s = json_string_value(v);
        break;
    case JS_RT_BOOL:
        if (!json_is_boolean(v))
            return type_err(err, nd_apijson_kind(v), goname, f->name, f->type);
        out->b = json_is_true(v);
        break;
    case JS_RT_STRS: {
        if (!json_is_array(v))
            return type_err(err, nd_apijson_kind(v), goname, f->name, f->type);
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            if (!json_is_string(e) && !json_is_null(e))
                return type_err(err, nd_apijson_kind(e), goname, f->name, JS_RT_STR);
        }
        out->arr = v;
        break;
    }
    }
    out->set = true;
    return true;
}

bool
js_req_decode(const char *body, size_t len, bool strict, const char *goname,
              const js_rfield_t *fields, size_t n, js_req_t *r, nd_jserr_t *err)
{
    memset(r, 0, sizeof *r);
    char why[256];
    if (!nd_apijson_parse(body, len, strict, &r->aj, why, sizeof why))
        return nd_jserr_setf(err, ND_JSE_INVALID_JSON, "%s", why);
    json_t *root = r->aj.root;
    bool ok = true;
    if (json_is_null(root)) {
        /* "null" decodes to nothing */
    } else if (!json_is_object(root)) {
        ok = nd_jserr_setf(err, ND_JSE_INVALID_JSON,
                           "json: cannot unmarshal %s into Go value of type server.%s",
                           nd_apijson_kind(root), goname);
    } else {
        const char *key;
        json_t *v;
        json_object_foreach(root, key, v)
        {
            const js_rfield_t *f = NULL;
            size_t k = 0;
            for (; k < n && k < JS_REQ_MAX_FIELDS && f == NULL; k++)
                if (nd_gojson_key_is(key, fields[k].name))
                    f = &fields[k];
            if (f == NULL) {
                if (strict) {
                    ok = nd_jserr_setf(err, ND_JSE_INVALID_JSON, "json: unknown field \"%s\"",
                                       key);
                    break;
                }
                continue;
            }
            if (json_is_null(v))
                continue;
            if (!decode(&r->aj, goname, f, v, &r->v[k - 1], err)) {
                ok = false;
                break;
            }
        }
    }
    if (!ok)
        js_req_free(r);
    return ok;
}

void
js_req_free(js_req_t *r)
{
    nd_apijson_free(&r->aj);
    memset(r, 0, sizeof *r);
}

bool
js_req_empty(const char *body, size_t len)
{
    /* nats-server's isEmptyRequest: nothing, or a JSON object without keys ("{}", "{ }") */
    if (len == 0)
        return true;
    json_t *v = json_loadb(body, len, 0, NULL);
    bool empty = v != NULL && json_is_object(v) && json_object_size(v) == 0;
    json_decref(v);
    return empty;
}
