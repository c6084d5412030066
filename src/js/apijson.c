/* JSON request bodies parsed with Go's encoding/json rules (apijson.h).
 *
 * A recursive-descent parser builds jansson values. Its error texts follow Go's scanner
 * (encoding/json/scanner.go): the byte that broke the grammar, quoted as Go's quoteChar does,
 * and the state the scanner was in ("looking for beginning of value", "after object key",
 * "after object key:value pair", "after array element", "in string literal", ...). Go checks
 * the whole text before it decodes anything, so a syntax error always wins over a type error;
 * decoding here also starts only once the parse succeeded. The syntax error offset of Go's
 * SyntaxError counts the bytes read up to and including the bad one.
 */
#include "js/apijson.h"
#include "util/hex.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"

#define MAX_DEPTH 10000 /* Go's maxNestingDepth */

typedef struct parser {
    const unsigned char *p, *start, *end;
    nd_apijson_t *out;
    char *err;
    size_t errlen;
    bool failed, eof;
    int depth;
} parser_t;

static void
quote_char(unsigned char c, char *buf, size_t cap)
{
    if (c == '\'')
        snprintf(buf, cap, "'\\''");
    else if (c == '"')
        snprintf(buf, cap, "'\"'");
    else if (c == '\n')
        snprintf(buf, cap, "'\\n'");
    else if (c == '\r')
        snprintf(buf, cap, "'\\r'");
    else if (c == '\t')
        snprintf(buf, cap, "'\\t'");
    else if (c == '\\')
        snprintf(buf, cap, "'\\\\'");
    else if (c < 0x20 || c >= 0x7f)
        snprintf(buf, cap, "'\\x%02x'", c);
    else
        snprintf(buf, cap, "'%c'", c);
}

/* A syntax error at the current byte; at the end of the input it is Go's EOF error. */
static json_t *
fail(parser_t *ps, const char *context)
{
    if (ps->failed)
        return NULL;
    ps->failed = true;
    if (ps->p >= ps->end) {
        ps->eof = true;
        snprintf(ps->err, ps->errlen, "unexpected end of JSON input");
        return NULL;
    }
    char q[16];
    quote_char(*ps->p, q, sizeof q);
    snprintf(ps->err, ps->errlen, "invalid character %s %s", q, context);
    return NULL;
}

static void
skip_ws(parser_t *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r' || *ps->p == '\n'))
        ps->p++;
}

typedef struct buf {
    char *b;
    size_t n, cap;
} buf_t;

static void
buf_put(buf_t *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->b = nd_xrealloc(b->b, b->cap);
    }
    memcpy(b->b + b->n, p, n);
    b->n += n;
    b->b[b->n] = '\0';
}

static void
buf_rune(buf_t *b, uint32_t r)
{
    unsigned char u[4];
    size_t n;
    if (r == 0)
        r = 0xFFFD; /* a C string cannot carry a NUL (util/gojson.h does the same) */
    if (r < 0x80) {
        u[0] = (unsigned char)r;
        n = 1;
    } else if (r < 0x800) {
        u[0] = (unsigned char)(0xC0 | (r >> 6));
        u[1] = (unsigned char)(0x80 | (r & 0x3F));
        n = 2;
    } else if (r < 0x10000) {
        u[0] = (unsigned char)(0xE0 | (r >> 12));
        u[1] = (unsigned char)(0x80 | ((r >> 6) & 0x3F));
        u[2] = (unsigned char)(0x80 | (r & 0x3F));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xF0 | (r >> 18));
        u[1] = (unsigned char)(0x80 | ((r >> 12) & 0x3F));
        u[2] = (unsigned char)(0x80 | ((r >> 6) & 0x3F));
        u[3] = (unsigned char)(0x80 | (r & 0x3F));
        n = 4;
    }
    buf_put(b, u, n);
}

/* The length of a valid UTF-8 sequence at p (Go's utf8.DecodeRune rules), 0 when invalid. */
static size_t
utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (b >= 0xC2 && b <= 0xDF)
        n = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

static int
hex4(const unsigned char *p, const unsigned char *end)
{
    if (end - p < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int d = nd_hex_value(p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string literal at ps->p (on the opening quote); returns its decoded bytes, owned. */
static char *
parse_string(parser_t *ps, size_t *outlen)
{
    buf_t b = {0};
    buf_put(&b, "", 0);
    ps->p++;
    for (;;) {
        if (ps->p >= ps->end) {
            fail(ps, "");
            nd_free(b.b);
            return NULL;
        }
        unsigned char c = *ps->p;
        if (c == '"') {
            ps->p++;
            *outlen = b.n;
            return b.b;
        }
        if (c < 0x20) {
            fail(ps, "in string literal");
            nd_free(b.b);
            return NULL;
        }
        if (c == '\\') {
            ps->p++;
            if (ps->p >= ps->end) {
                fail(ps, "");
                nd_free(b.b);
                return NULL;
            }
            c = *ps->p;
            const char *simple = NULL;
            switch (c) {
            case '"':
                simple = "\"";
                break;
            case '\\':
                simple = "\\";
                break;
            case '/':
                simple = "/";
                break;
            case 'b':
                simple = "\b";
                break;
            case 'f':
                simple = "\f";
                break;
            case 'n':
                simple = "\n";
                break;
            case 'r':
                simple = "\r";
                break;
            case 't':
                simple = "\t";
                break;
            case 'u':
                break;
            default:
                fail(ps, "in string escape code");
                nd_free(b.b);
                return NULL;
            }
            if (simple) {
                buf_put(&b, simple, 1);
                ps->p++;
                continue;
            }
            ps->p++;
            for (int i = 0; i < 4; i++) {
                if (ps->p + i >= ps->end || nd_hex_value(ps->p[i]) < 0) {
                    ps->p += i;
                    fail(ps, "in \\u hexadecimal character escape");
                    nd_free(b.b);
                    return NULL;
                }
            }
            uint32_t r = (uint32_t)hex4(ps->p, ps->end);
            ps->p += 4;
            if (r >= 0xD800 && r < 0xDC00) {
                /* A high surrogate needs an escaped low one right after it. */
                int lo = -1;
                if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u')
                    lo = hex4(ps->p + 2, ps->end);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    r = 0x10000 + ((r - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                    ps->p += 6;
                } else
                    r = 0xFFFD;
            } else if (r >= 0xDC00 && r < 0xE000)
                r = 0xFFFD;
            buf_rune(&b, r);
            continue;
        }
        if (c < 0x80) {
            buf_put(&b, &c, 1);
            ps->p++;
            continue;
        }
        size_t n = utf8_seq(ps->p, ps->end);
        if (n == 0) {
            buf_rune(&b, 0xFFFD);
            ps->p++;
        } else {
            buf_put(&b, ps->p, n);
            ps->p += n;
        }
    }
}

static json_t *
parse_number(parser_t *ps)
{
    const unsigned char *s = ps->p;
    bool integer = true;
    if (*ps->p == '-') {
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "in numeric literal");
    }
    if (*ps->p == '0')
        ps->p++;
    else
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    if (ps->p < ps->end && *ps->p == '.') {
        integer = false;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "after decimal point in numeric literal");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        integer = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "in exponent of numeric literal");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    char *text = nd_xstrndup((const char *)s, (size_t)(ps->p - s));
    if (integer) {
        errno = 0;
        char *e;
        long long v = strtoll(text, &e, 10);
        if (errno == 0 && *e == '\0') {
            nd_free(text);
            return json_integer(v);
        }
    }
    /* jansson has no infinity: an out-of-range literal keeps its sign at the largest double, and
     * its text (below) is what an "cannot unmarshal number" error shows, as Go's */
    double d = strtod(text, NULL);
    if (isinf(d))
        d = d > 0 ? DBL_MAX : -DBL_MAX;
    json_t *r = json_real(d);
    nd_apijson_t *o = ps->out;
    o->nums = nd_xrealloc(o->nums, (o->nnums + 1) * sizeof *o->nums);
    o->nums[o->nnums].v = r;
    o->nums[o->nnums].text = text;
    o->nnums++;
    return r;
}

static json_t *
parse_literal(parser_t *ps, const char *word, json_t *v)
{
    /* Go's scanner reports the first byte that differs, naming the literal and the byte it
     * expected ("in literal true (expecting 'r')"). */
    for (size_t i = 1; word[i]; i++) {
        ps->p++;
        if (ps->p >= ps->end || *ps->p != (unsigned char)word[i]) {
            char ctx[64], q[16];
            quote_char((unsigned char)word[i], q, sizeof q);
            snprintf(ctx, sizeof ctx, "in literal %s (expecting %s)", word, q);
            json_decref(v);
            return fail(ps, ctx);
        }
    }
    ps->p++;
    return v;
}

static json_t *parse_value(parser_t *ps);

static json_t *
parse_object(parser_t *ps)
{
    json_t *o = json_object();
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return o;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            json_decref(o);
            return fail(ps, "looking for beginning of object key string");
        }
        size_t klen;
        char *key = parse_string(ps, &klen);
        if (!key) {
            json_decref(o);
            return NULL;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            nd_free(key);
            json_decref(o);
            return fail(ps, "after object key");
        }
        ps->p++;
        json_t *v = parse_value(ps);
        if (!v) {
            nd_free(key);
            json_decref(o);
            return NULL;
        }
        /* Keys are valid UTF-8 (parse_string replaced what was not) without NULs. */
        json_object_set_new(o, key, v);
        nd_free(key);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return o;
        }
        json_decref(o);
        return fail(ps, "after object key:value pair");
    }
}

static json_t *
parse_array(parser_t *ps)
{
    json_t *a = json_array();
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return a;
    }
    for (;;) {
        json_t *v = parse_value(ps);
        if (!v) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, v);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return a;
        }
        json_decref(a);
        return fail(ps, "after array element");
    }
}

static json_t *
parse_value(parser_t *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "");
    json_t *r;
    switch (*ps->p) {
    case '{':
    case '[':
        if (++ps->depth > MAX_DEPTH) {
            ps->failed = true;
            snprintf(ps->err, ps->errlen, "exceeded max depth");
            return NULL;
        }
        r = *ps->p == '{' ? parse_object(ps) : parse_array(ps);
        ps->depth--;
        return r;
    case '"': {
        size_t n;
        char *s = parse_string(ps, &n);
        if (!s)
            return NULL;
        r = json_stringn_nocheck(s, n);
        nd_free(s);
        return r;
    }
    case 't':
        return parse_literal(ps, "true", json_true());
    case 'f':
        return parse_literal(ps, "false", json_false());
    case 'n':
        return parse_literal(ps, "null", json_null());
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return parse_number(ps);
        return fail(ps, "looking for beginning of value");
    }
}

void
nd_apijson_free(nd_apijson_t *j)
{
    json_decref(j->root);
    for (size_t i = 0; i < j->nnums; i++)
        nd_free(j->nums[i].text);
    nd_free(j->nums);
    memset(j, 0, sizeof *j);
}

bool
nd_apijson_parse(const char *text, size_t len, bool strict, nd_apijson_t *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    parser_t ps = {.p = (const unsigned char *)text,
                   .start = (const unsigned char *)text,
                   .end = (const unsigned char *)text + len,
                   .out = out,
                   .err = err,
                   .errlen = errlen};
    skip_ws(&ps);
    if (ps.p >= ps.end) {
        /* nats-server's request decoder stops at EOF before any value: nothing is set. */
        out->root = json_object();
        return true;
    }
    json_t *v = parse_value(&ps);
    if (v) {
        skip_ws(&ps);
        if (ps.p < ps.end) {
            json_decref(v);
            v = NULL;
            fail(&ps, "after top-level value");
        }
    }
    if (!v) {
        if (strict) {
            if (ps.eof)
                snprintf(err, errlen, "unexpected EOF");
            else {
                size_t n = strlen(err);
                snprintf(err + n, errlen - n, " at offset %zu", (size_t)(ps.p - ps.start) + 1);
            }
        }
        nd_apijson_free(out);
        return false;
    }
    out->root = v;
    return true;
}

const char *
nd_apijson_num_text(const nd_apijson_t *j, const json_t *v, char *buf, size_t cap)
{
    if (json_is_integer(v)) {
        snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    }
    for (size_t i = 0; j && i < j->nnums; i++)
        if (j->nums[i].v == v) {
            snprintf(buf, cap, "%s", j->nums[i].text);
            return buf;
        }
    snprintf(buf, cap, "%g", json_real_value(v));
    return buf;
}

const char *
nd_apijson_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "bool";
    default:
        return "null";
    }
}
