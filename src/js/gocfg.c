/* Go-shaped JetStream configs decoded and encoded from their field tables (gocfg.h).
 *
 * Fields are reached through their offsets in the C struct (AT/CAT). Decoding keeps Go's order
 * of errors: a type error is only remembered (the first one wins) and decoding goes on, as
 * encoding/json does; an unmarshaller's error (enums, time.Time, custom fields) overwrites it and
 * stops the walk at the next key. Numbers are read from their literal text (nd_apijson_num_text)
 * so that a type error quotes the number as the client wrote it.
 */
#include "js/gocfg.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "js/gotime.h"
#include "util/gojson.h"

#define AT(base, off, T)  ((T *)((char *)(base) + (off)))
#define CAT(base, off, T) ((const T *)((const char *)(base) + (off)))

static const char *
gotype(const nd_gocfg_field_t *f)
{
    if (f->gotype)
        return f->gotype;
    switch (f->kind) {
    case ND_GOCFG_STR:
        return "string";
    case ND_GOCFG_INT:
        return "int";
    case ND_GOCFG_I32:
        return "int32";
    case ND_GOCFG_I64:
        return "int64";
    case ND_GOCFG_U64:
    case ND_GOCFG_SEQ:
        return "uint64";
    case ND_GOCFG_DUR:
        return "time.Duration";
    case ND_GOCFG_BOOL:
        return "bool";
    case ND_GOCFG_STRS:
        return "[]string";
    case ND_GOCFG_DURS:
        return "[]time.Duration";
    case ND_GOCFG_MAP:
        return "map[string]string";
    case ND_GOCFG_TIME:
        return "time.Time";
    default:
        return "";
    }
}

/* ---- Freeing ----------------------------------------------------------------------------- */

void
nd_gocfg_strs_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nd_free(v[i]);
    nd_free(v);
}

/* Frees one field of base and leaves it zero (Go's nil). */
static void
field_free(const nd_gocfg_field_t *f, void *base)
{
    switch (f->kind) {
    case ND_GOCFG_STR:
        nd_free(*AT(base, f->off, char *));
        *AT(base, f->off, char *) = NULL;
        break;
    case ND_GOCFG_STRS:
        nd_gocfg_strs_free(*AT(base, f->off, char **), *AT(base, f->noff, size_t));
        *AT(base, f->off, char **) = NULL;
        *AT(base, f->noff, size_t) = 0;
        break;
    case ND_GOCFG_DURS:
        nd_free(*AT(base, f->off, int64_t *));
        *AT(base, f->off, int64_t *) = NULL;
        *AT(base, f->noff, size_t) = 0;
        break;
    case ND_GOCFG_MAP:
        json_decref(*AT(base, f->off, json_t *));
        *AT(base, f->off, json_t *) = NULL;
        break;
    case ND_GOCFG_TIME:
        memset(AT(base, f->off, nd_gotime_t), 0, sizeof(nd_gotime_t));
        break;
    case ND_GOCFG_PTR: {
        void *p = *AT(base, f->off, void *);
        if (p) {
            nd_gocfg_free(f->sub, p);
            nd_free(p);
        }
        *AT(base, f->off, void *) = NULL;
        break;
    }
    case ND_GOCFG_STRUCT:
        nd_gocfg_free(f->sub, AT(base, f->off, char));
        break;
    case ND_GOCFG_LIST: {
        void **v = *AT(base, f->off, void **);
        size_t n = *AT(base, f->noff, size_t);
        for (size_t j = 0; j < n; j++)
            if (v[j]) {
                nd_gocfg_free(f->sub, v[j]);
                nd_free(v[j]);
            }
        nd_free(v);
        *AT(base, f->off, void **) = NULL;
        *AT(base, f->noff, size_t) = 0;
        break;
    }
    case ND_GOCFG_CUSTOM:
        f->custom->free(AT(base, f->off, char));
        break;
    default:
        break;
    }
}

void
nd_gocfg_free(const nd_gocfg_struct_t *sd, void *base)
{
    for (size_t i = 0; i < sd->nf; i++)
        field_free(&sd->f[i], base);
}

/* ---- Decoding ---------------------------------------------------------------------------- */

static void
type_err(nd_gocfg_dec_t *d, const char *value, const char *sname, const char *path,
         const char *type)
{
    if (d->err[0])
        return;
    snprintf(d->err, sizeof d->err,
             "json: cannot unmarshal %s into Go struct field %s.%s of type %s", value, sname, path,
             type);
}

void
nd_gocfg_fail(nd_gocfg_dec_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    d->fatal = true;
}

void
nd_gocfg_quote(const char *raw, char *out, size_t cap)
{
    size_t o = 0;
    if (cap < 8)
        return;
    out[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)raw; *p && o + 6 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p < 0x20)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p);
        else
            out[o++] = (char)*p;
    }
    out[o++] = '"';
    out[o] = '\0';
}

/* The raw JSON text of v (what an UnmarshalJSON method is handed). */
static void
raw_text(const nd_gocfg_dec_t *d, const json_t *v, char *out, size_t cap)
{
    char nb[64];
    if (json_is_number(v)) {
        snprintf(out, cap, "%s", nd_apijson_num_text(d->aj, v, nb, sizeof nb));
        return;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(out, cap, "%s", s ? s : "");
    free(s);
}

/* An integer of kind k: Go parses the literal and refuses what does not fit the type. */
static void
decode_int(nd_gocfg_dec_t *d, const json_t *v, const char *sname, const char *path,
           nd_gocfg_kind_t k, const char *type, int64_t *i64, uint64_t *u64)
{
    char nb[128], val[160];
    if (!json_is_number(v)) {
        type_err(d, nd_apijson_kind(v), sname, path, type);
        return;
    }
    bool unsig = k == ND_GOCFG_U64 || k == ND_GOCFG_SEQ;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        bool ok = unsig ? x >= 0 : k != ND_GOCFG_I32 || (x >= INT32_MIN && x <= INT32_MAX);
        if (ok) {
            if (i64)
                *i64 = x;
            if (u64)
                *u64 = (uint64_t)x;
            return;
        }
    } else if (unsig) {
        /* A real whose text is a plain integer literal that fits: a uint64 above INT64_MAX, or
         * a json_t built without the literals (a real printed as "%g"). */
        const char *t = nd_apijson_num_text(d->aj, v, nb, sizeof nb);
        if (*t && strspn(t, "0123456789") == strlen(t) && strlen(t) <= 20) {
            char *e;
            unsigned long long x = strtoull(t, &e, 10);
            if (*e == '\0' && !(x == ULLONG_MAX && strcmp(t, "18446744073709551615")) &&
                (k == ND_GOCFG_U64 || x <= INT64_MAX)) {
                *u64 = x;
                return;
            }
        }
    }
    snprintf(val, sizeof val, "number %s", nd_apijson_num_text(d->aj, v, nb, sizeof nb));
    type_err(d, val, sname, path, type);
}

/* time.Time's UnmarshalJSON. */
static void
decode_time(nd_gocfg_dec_t *d, const json_t *v, nd_gotime_t *out)
{
    if (!json_is_string(v)) {
        nd_gocfg_fail(d, "Time.UnmarshalJSON: input is not a JSON string");
        return;
    }
    const char *s = json_string_value(v);
    nd_gotime_t t = {0};
    if (!nd_gotime_parse(s, &t)) {
        nd_gocfg_fail(d,
                      "parsing time \"%s\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"%s\" "
                      "as \"2006\"",
                      s, s);
        return;
    }
    *out = t;
}

/* An enum's UnmarshalJSON: matches the quoted string; anything else (null included, which Go
 * hands to the method) is its error, which ends decoding. */
static void
decode_enum(nd_gocfg_dec_t *d, const nd_gocfg_enum_t *en, const json_t *v, int64_t *out)
{
    if (en->err == ND_GOCFG_ENUM_STRING && !json_is_string(v) && !json_is_null(v)) {
        nd_gocfg_fail(d, "json: cannot unmarshal %s into Go value of type string",
                      nd_apijson_kind(v));
        return;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        for (size_t i = 0; i < en->nvals; i++)
            if (en->nocase ? !strcasecmp(s, en->vals[i].text) : !strcmp(s, en->vals[i].text)) {
                *out = en->vals[i].v;
                return;
            }
    }
    char raw[300], q[320];
    switch (en->err) {
    case ND_GOCFG_ENUM_QUOTED:
        raw_text(d, v, raw, sizeof raw);
        nd_gocfg_quote(raw, q, sizeof q);
        nd_gocfg_fail(d, "can not unmarshal %s", q);
        return;
    case ND_GOCFG_ENUM_PREFIX:
        raw_text(d, v, raw, sizeof raw);
        nd_gocfg_fail(d, "%s%s", en->unknown, raw);
        return;
    case ND_GOCFG_ENUM_STRING:
        nd_gocfg_fail(d, "%s", en->unknown);
        return;
    }
}

static void decode_struct(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, json_t *obj,
                          const char *path);

/* A JSON array into a slice of strings (null elements are ""). */
static void
decode_strs(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, const nd_gocfg_field_t *f,
            json_t *v, const char *path)
{
    field_free(f, base);
    size_t n = json_array_size(v);
    char **out = nd_xcalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (json_is_string(e))
            out[i] = nd_xstrdup(json_string_value(e));
        else {
            if (!json_is_null(e))
                type_err(d, nd_apijson_kind(e), sd->goname, path, "string");
            out[i] = nd_xstrdup("");
        }
    }
    *AT(base, f->off, char **) = out;
    *AT(base, f->noff, size_t) = n;
}

/* A JSON array into a slice of durations (null elements are 0). */
static void
decode_durs(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, const nd_gocfg_field_t *f,
            json_t *v, const char *path)
{
    field_free(f, base);
    size_t n = json_array_size(v);
    int64_t *out = nd_xcalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_null(e))
            decode_int(d, e, sd->goname, path, ND_GOCFG_DUR, "time.Duration", &out[i], NULL);
    }
    *AT(base, f->off, int64_t *) = out;
    *AT(base, f->noff, size_t) = n;
}

/* A JSON array into a slice of structs; []*T keeps a null element nil. */
static void
decode_list(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, const nd_gocfg_field_t *f,
            json_t *v, const char *path)
{
    field_free(f, base);
    size_t n = json_array_size(v);
    void **out = nd_xcalloc(n ? n : 1, sizeof *out);
    *AT(base, f->off, void **) = out;
    *AT(base, f->noff, size_t) = n;
    bool ptr_elems = f->gotype[2] == '*';
    char etype[64];
    snprintf(etype, sizeof etype, "server.%s", f->sub->goname);
    for (size_t i = 0; i < n && !d->fatal; i++) {
        json_t *e = json_array_get(v, i);
        if (json_is_null(e)) {
            if (!ptr_elems)
                out[i] = nd_xcalloc(1, f->sub->size);
            continue;
        }
        out[i] = nd_xcalloc(1, f->sub->size);
        if (!json_is_object(e)) {
            type_err(d, nd_apijson_kind(e), sd->goname, path, etype);
            continue;
        }
        decode_struct(d, f->sub, out[i], e, path);
    }
}

/* A JSON object into a map of strings, merged into what the field holds (as Go does). */
static void
decode_map(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, const nd_gocfg_field_t *f,
           json_t *v, const char *path)
{
    json_t **mp = AT(base, f->off, json_t *);
    if (!*mp)
        *mp = json_object();
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e)
    {
        if (json_is_string(e))
            json_object_set(*mp, k, e);
        else {
            if (!json_is_null(e))
                type_err(d, nd_apijson_kind(e), sd->goname, path, "string");
            json_object_set_new(*mp, k, json_string(""));
        }
    }
}

/* Whether v has the JSON type field f needs; if not, the type error is remembered. */
static bool
json_type_ok(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, const nd_gocfg_field_t *f,
             const json_t *v, const char *path)
{
    bool ok;
    switch (f->kind) {
    case ND_GOCFG_STR:
        ok = json_is_string(v);
        break;
    case ND_GOCFG_BOOL:
        ok = json_is_boolean(v);
        break;
    case ND_GOCFG_STRS:
    case ND_GOCFG_DURS:
    case ND_GOCFG_LIST:
        ok = json_is_array(v);
        break;
    case ND_GOCFG_MAP:
    case ND_GOCFG_PTR:
    case ND_GOCFG_STRUCT:
        ok = json_is_object(v);
        break;
    default:
        return true;
    }
    if (!ok)
        type_err(d, nd_apijson_kind(v), sd->goname, path, gotype(f));
    return ok;
}

static void
decode_field(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, const nd_gocfg_field_t *f,
             json_t *v, const char *path)
{
    if (json_is_null(v)) {
        /* null: a no-op for Go, except for unmarshallers, which see "null", and for pointers,
         * slices and maps, which it sets to nil. */
        switch (f->kind) {
        case ND_GOCFG_ENUM:
            decode_enum(d, f->en, v, AT(base, f->off, int64_t));
            return;
        case ND_GOCFG_CUSTOM:
            f->custom->decode(d, AT(base, f->off, char), v);
            return;
        case ND_GOCFG_STRS:
        case ND_GOCFG_DURS:
        case ND_GOCFG_MAP:
        case ND_GOCFG_TIME:
        case ND_GOCFG_PTR:
        case ND_GOCFG_LIST:
            field_free(f, base);
            return;
        default:
            return;
        }
    }
    if (!json_type_ok(d, sd, f, v, path))
        return;
    switch (f->kind) {
    case ND_GOCFG_STR:
        nd_free(*AT(base, f->off, char *));
        *AT(base, f->off, char *) = nd_xstrdup(json_string_value(v));
        return;
    case ND_GOCFG_INT:
    case ND_GOCFG_I32:
    case ND_GOCFG_I64:
    case ND_GOCFG_DUR:
        decode_int(d, v, sd->goname, path, f->kind, gotype(f), AT(base, f->off, int64_t), NULL);
        return;
    case ND_GOCFG_U64:
    case ND_GOCFG_SEQ:
        decode_int(d, v, sd->goname, path, f->kind, gotype(f), NULL, AT(base, f->off, uint64_t));
        return;
    case ND_GOCFG_BOOL:
        *AT(base, f->off, bool) = json_is_true(v);
        return;
    case ND_GOCFG_STRS:
        decode_strs(d, sd, base, f, v, path);
        return;
    case ND_GOCFG_DURS:
        decode_durs(d, sd, base, f, v, path);
        return;
    case ND_GOCFG_MAP:
        decode_map(d, sd, base, f, v, path);
        return;
    case ND_GOCFG_TIME:
        decode_time(d, v, AT(base, f->off, nd_gotime_t));
        return;
    case ND_GOCFG_ENUM:
        decode_enum(d, f->en, v, AT(base, f->off, int64_t));
        return;
    case ND_GOCFG_PTR: {
        void **pp = AT(base, f->off, void *);
        if (!*pp)
            *pp = nd_xcalloc(1, f->sub->size);
        decode_struct(d, f->sub, *pp, v, path);
        return;
    }
    case ND_GOCFG_STRUCT:
        decode_struct(d, f->sub, AT(base, f->off, char), v, path);
        return;
    case ND_GOCFG_LIST:
        decode_list(d, sd, base, f, v, path);
        return;
    case ND_GOCFG_CUSTOM:
        f->custom->decode(d, AT(base, f->off, char), v);
        return;
    }
}

static char *
join_path(const char *path, const char *name)
{
    size_t n = (path ? strlen(path) + 1 : 0) + strlen(name) + 1;
    char *p = nd_xmalloc(n);
    if (path)
        snprintf(p, n, "%s.%s", path, name);
    else
        snprintf(p, n, "%s", name);
    return p;
}

static void
decode_struct(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, json_t *obj,
              const char *path)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        if (d->fatal)
            return;
        const nd_gocfg_field_t *f = NULL;
        for (size_t i = 0; i < sd->nf && !f; i++)
            if (!strcmp(key, sd->f[i].name))
                f = &sd->f[i];
        for (size_t i = 0; i < sd->nf && !f; i++)
            if (nd_gojson_key_is(key, sd->f[i].name))
                f = &sd->f[i];
        if (!f) {
            if (d->strict && !d->err[0])
                snprintf(d->err, sizeof d->err, "json: unknown field \"%s\"", key);
            continue;
        }
        char *p = join_path(path, f->name);
        decode_field(d, sd, base, f, v, p);
        nd_free(p);
    }
}

bool
nd_gocfg_decode(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, json_t *root)
{
    if (!json_is_object(root)) {
        if (json_is_null(root))
            return true;
        snprintf(d->err, sizeof d->err, "json: cannot unmarshal %s into Go value of type server.%s",
                 nd_apijson_kind(root), sd->goname);
        return false;
    }
    decode_struct(d, sd, base, root, NULL);
    return d->err[0] == '\0';
}

/* ---- Encoding ---------------------------------------------------------------------------- */

static const char *
enum_text(const nd_gocfg_enum_t *en, int64_t v)
{
    for (size_t i = 0; i < en->nvals; i++)
        if (en->vals[i].v == v)
            return en->vals[i].text;
    return en->other;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go writes a map's keys sorted. */
static json_t *
map_json(const json_t *m)
{
    size_t n = m ? json_object_size(m) : 0, j = 0;
    const char **keys = nd_xcalloc(n ? n : 1, sizeof *keys);
    const char *k;
    json_t *e;
    if (m)
        json_object_foreach((json_t *)m, k, e) keys[j++] = k;
    qsort(keys, n, sizeof *keys, cmp_str);
    json_t *v = json_object();
    for (j = 0; j < n; j++)
        json_object_set(v, keys[j], json_object_get(m, keys[j]));
    nd_free(keys);
    return v;
}

/* The JSON of one field, or NULL when omitempty (or a nil *time.Time) leaves it out. */
static json_t *
encode_field(const nd_gocfg_field_t *f, const void *base, bool config_only)
{
    switch (f->kind) {
    case ND_GOCFG_STR: {
        const char *s = *CAT(base, f->off, char *);
        if (f->omitempty && (!s || !*s))
            return NULL;
        return json_string(s ? s : "");
    }
    case ND_GOCFG_INT:
    case ND_GOCFG_I32:
    case ND_GOCFG_I64:
    case ND_GOCFG_DUR: {
        int64_t x = *CAT(base, f->off, int64_t);
        return f->omitempty && x == 0 ? NULL : json_integer(x);
    }
    case ND_GOCFG_U64:
    case ND_GOCFG_SEQ: {
        uint64_t x = *CAT(base, f->off, uint64_t);
        if (f->omitempty && x == 0)
            return NULL;
        return json_integer((json_int_t)(x > INT64_MAX ? INT64_MAX : x));
    }
    case ND_GOCFG_BOOL: {
        bool b = *CAT(base, f->off, bool);
        return f->omitempty && !b ? NULL : json_boolean(b);
    }
    case ND_GOCFG_ENUM: {
        int64_t x = *CAT(base, f->off, int64_t);
        return f->omitempty && x == 0 ? NULL : json_string(enum_text(f->en, x));
    }
    case ND_GOCFG_TIME: {
        const nd_gotime_t *t = CAT(base, f->off, nd_gotime_t);
        if (!t->set)
            return f->omitempty ? NULL : json_null();
        return nd_gotime_json(t);
    }
    case ND_GOCFG_STRS: {
        char *const *s = *(char **const *)((const char *)base + f->off);
        size_t n = *CAT(base, f->noff, size_t);
        if (f->omitempty && n == 0)
            return NULL;
        if (!s)
            return json_null();
        json_t *v = json_array();
        for (size_t j = 0; j < n; j++)
            json_array_append_new(v, json_string(s[j]));
        return v;
    }
    case ND_GOCFG_DURS: {
        const int64_t *s = *CAT(base, f->off, int64_t *);
        size_t n = *CAT(base, f->noff, size_t);
        if (f->omitempty && n == 0)
            return NULL;
        if (!s)
            return json_null();
        json_t *v = json_array();
        for (size_t j = 0; j < n; j++)
            json_array_append_new(v, json_integer(s[j]));
        return v;
    }
    case ND_GOCFG_MAP: {
        const json_t *m = *CAT(base, f->off, json_t *);
        if (f->omitempty && (!m || json_object_size(m) == 0))
            return NULL;
        return map_json(m);
    }
    case ND_GOCFG_PTR: {
        const void *p = *CAT(base, f->off, void *);
        if (!p)
            return f->omitempty ? NULL : json_null();
        return nd_gocfg_encode(f->sub, p, config_only);
    }
    case ND_GOCFG_STRUCT:
        return nd_gocfg_encode(f->sub, CAT(base, f->off, char), config_only);
    case ND_GOCFG_LIST: {
        void *const *l = *(void **const *)((const char *)base + f->off);
        size_t n = *CAT(base, f->noff, size_t);
        if (f->omitempty && n == 0)
            return NULL;
        json_t *v = json_array();
        for (size_t j = 0; j < n; j++)
            json_array_append_new(v,
                                  l[j] ? nd_gocfg_encode(f->sub, l[j], config_only) : json_null());
        return v;
    }
    case ND_GOCFG_CUSTOM:
        return f->custom->encode(CAT(base, f->off, char), f->omitempty);
    }
    return NULL;
}

json_t *
nd_gocfg_encode(const nd_gocfg_struct_t *sd, const void *base, bool config_only)
{
    json_t *o = json_object();
    for (size_t i = 0; i < sd->nf; i++) {
        const nd_gocfg_field_t *f = &sd->f[i];
        if (config_only && f->request_only)
            continue;
        json_t *v = encode_field(f, base, config_only);
        if (v)
            json_object_set_new(o, f->name, v);
    }
    return o;
}

/* ---- Metadata ---------------------------------------------------------------------------- */

static json_t *
without_nats_metadata(const json_t *j)
{
    json_t *c = json_deep_copy(j);
    json_t *md = json_object_get(c, "metadata");
    if (md) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(md, tmp, k, v)
        {
            if (!strncmp(k, "_nats.", 6))
                json_object_del(md, k);
        }
        if (json_object_size(md) == 0)
            json_object_del(c, "metadata");
    }
    return c;
}

bool
nd_gocfg_equal(const json_t *a, const json_t *b)
{
    json_t *x = without_nats_metadata(a), *y = without_nats_metadata(b);
    bool eq = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return eq;
}

void
nd_gocfg_set_req_level(json_t **metadata, bool level1)
{
    if (!*metadata)
        *metadata = json_object();
    json_object_del(*metadata, "_nats.ver");
    json_object_del(*metadata, "_nats.level");
    json_object_set_new(*metadata, "_nats.req.level", json_string(level1 ? "1" : "0"));
}
