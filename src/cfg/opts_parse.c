/* Typed readers for config option values (see opts_parse.h for positions and error texts).
 *
 * Durations follow Go's time.ParseDuration exactly enough for nats-server's texts: a sequence of
 * decimal numbers, each with an optional fraction and a unit (ns, us, µs, ms, s, m, h), with an
 * optional sign; "0" alone needs no unit. URLs are checked the way Go's url.Parse rejects them
 * (control characters, bad %-escapes, a missing scheme before ':', a non-numeric port).
 * References: nats-server 2.9.10 server/opts.go (parseDuration, parseListen, parseURL,
 * parseStringArray), Go's time/format.go and net/url/url.go.
 */
#include "cfg/opts_parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"

nd_cfg_at_t
nd_cfg_at_entry(const nd_cfg_entry_t *e)
{
    /* nats-server's key item starts inside the quotes of a quoted key. */
    return (nd_cfg_at_t){
        .file = e->val ? e->val->file : "", .line = e->line, .col = e->col + (e->quoted ? 1 : 0)};
}

nd_cfg_at_t
nd_cfg_at_node(const nd_cfg_node_t *n)
{
    /* Its value items: a quoted string starts inside the quotes; a map is the map-end item,
     * just after its closing brace. */
    if (n->type == ND_CFG_MAP && n->end_line > 0)
        return (nd_cfg_at_t){.file = n->file, .line = n->end_line, .col = n->end_col};
    return (nd_cfg_at_t){.file = n->file, .line = n->line, .col = n->col + (n->quoted ? 1 : 0)};
}

static int
print_col(int line, int col)
{
    return line == 1 && col > 0 ? col - 1 : col;
}

int
nd_cfg_fail(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *fmt, ...)
{
    if (a->errlen == 0)
        return -1;
    /* Without a file the text stands alone, as nats-server's token-less errors do. */
    int n = at.file ? snprintf(a->err, a->errlen, "%s:%d:%d: ", at.file, at.line,
                               print_col(at.line, at.col))
                    : 0;
    if (n < 0 || (size_t)n >= a->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->err + n, a->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

void
nd_cfg_warn(nd_cfg_apply_t *a, bool strict, nd_cfg_at_t at, const char *fmt, ...)
{
    char buf[512];
    int n = at.file ? snprintf(buf, sizeof buf, "%s:%d:%d: ", at.file, at.line,
                               print_col(at.line, at.col))
                    : 0;
    if (n < 0 || (size_t)n >= sizeof buf)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (strict && a->first_strict[0] == '\0')
        snprintf(a->first_strict, sizeof a->first_strict, "%s", buf);
    if (strict && a->stricts_len + strlen(buf) + 2 < sizeof a->stricts) {
        /* nats-server prints its warnings before its errors. */
        a->stricts_len += (size_t)snprintf(a->stricts + a->stricts_len,
                                           sizeof a->stricts - a->stricts_len, "%s\n", buf);
    }
    size_t add = strlen(buf);
    if (a->warns_len + add + 2 > a->warns_cap) {
        a->warns_cap = (a->warns_len + add + 2) * 2;
        a->warns = nd_xrealloc(a->warns, a->warns_cap);
    }
    if (a->warns_len)
        a->warns[a->warns_len++] = '\n';
    memcpy(a->warns + a->warns_len, buf, add + 1);
    a->warns_len += add;
    a->nwarns++;
}

static const char *
go_type_name(nd_cfg_type_t t)
{
    switch (t) {
    case ND_CFG_MAP:
        return "map[string]interface {}";
    case ND_CFG_ARRAY:
        return "[]interface {}";
    case ND_CFG_STRING:
        return "string";
    case ND_CFG_INT:
        return "int64";
    case ND_CFG_FLOAT:
        return "float64";
    case ND_CFG_BOOL:
        return "bool";
    case ND_CFG_DATETIME:
        return "time.Time";
    }
    return "?";
}

const char *
nd_cfg_go_type(const nd_cfg_node_t *v)
{
    return go_type_name(v->type);
}

int
nd_cfg_type_err(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, nd_cfg_type_t want)
{
    return nd_cfg_fail(a, at, "interface conversion: interface {} is %s, not %s",
                       go_type_name(v->type), go_type_name(want));
}

/* Go's %v of a float64: the shortest 'g' form, with Go's exponent spelling (e+06). */
static void
go_float(double f, char *buf, size_t len)
{
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* C prints e+06 like Go, but Go switches to exponents only below 1e-4 or from 1e21. */
    char *e = strchr(tmp, 'e');
    if (e != NULL) {
        int exp = atoi(e + 1);
        if (exp >= -4 && exp < 21) {
            snprintf(tmp, sizeof tmp, "%.*f", exp < 0 ? -exp + 17 : 0, f);
            if (strchr(tmp, '.')) {
                size_t l = strlen(tmp);
                while (l > 0 && tmp[l - 1] == '0')
                    tmp[--l] = '\0';
                if (l > 0 && tmp[l - 1] == '.')
                    tmp[--l] = '\0';
            }
        }
    }
    snprintf(buf, len, "%s", tmp);
}

void
nd_cfg_go_value(const nd_cfg_node_t *v, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    switch (v->type) {
    case ND_CFG_STRING:
        snprintf(buf, len, "%s", v->u.str.s);
        break;
    case ND_CFG_INT:
        snprintf(buf, len, "%lld", (long long)v->u.i);
        break;
    case ND_CFG_FLOAT:
        go_float(v->u.f, buf, len);
        break;
    case ND_CFG_BOOL:
        snprintf(buf, len, "%s", v->u.b ? "true" : "false");
        break;
    case ND_CFG_DATETIME:
        snprintf(buf, len, "%lld", (long long)v->u.i);
        break;
    case ND_CFG_ARRAY:
    case ND_CFG_MAP: {
        /* Containers hold *conf.token pointers in nats-server, printed as addresses: only the
         * shape can match. */
        size_t n = 0;
        int w = snprintf(buf, len, "%s", v->type == ND_CFG_MAP ? "map[" : "[");
        n = w > 0 ? (size_t)w : 0;
        size_t cnt = v->type == ND_CFG_MAP ? v->u.map.n : v->u.arr.n;
        for (size_t i = 0; i < cnt && n + 1 < len; i++) {
            char sub[128];
            const nd_cfg_node_t *c = v->type == ND_CFG_MAP ? v->u.map.e[i].val : v->u.arr.v[i];
            nd_cfg_go_value(c, sub, sizeof sub);
            if (v->type == ND_CFG_MAP)
                w = snprintf(buf + n, len - n, "%s%s:%s", i ? " " : "", v->u.map.e[i].key, sub);
            else
                w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", sub);
            if (w > 0)
                n += (size_t)w;
        }
        if (n + 1 < len)
            snprintf(buf + n, len - n, "]");
        break;
    }
    }
}

int
nd_cfg_unknown(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    if (e->used_as_var)
        return 0;
    return nd_cfg_fail(a, nd_cfg_at_entry(e), "unknown field \"%s\"", e->key);
}

void
nd_set_str(char **dst, const char *s)
{
    char *c = s ? nd_xstrdup(s) : NULL;
    nd_free(*dst);
    *dst = c;
}

int
nd_cfg_str(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, char **dst)
{
    if (v->type != ND_CFG_STRING)
        return nd_cfg_type_err(a, at, v, ND_CFG_STRING);
    nd_set_str(dst, v->u.str.s);
    return 0;
}

int
nd_cfg_bool(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, bool *dst)
{
    if (v->type != ND_CFG_BOOL)
        return nd_cfg_type_err(a, at, v, ND_CFG_BOOL);
    *dst = v->u.b;
    return 0;
}

int
nd_cfg_i64(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, int64_t *dst)
{
    if (v->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, v, ND_CFG_INT);
    *dst = v->u.i;
    return 0;
}

int
nd_cfg_int(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, int *dst)
{
    int64_t i = 0;
    if (nd_cfg_i64(a, at, v, &i) < 0)
        return -1;
    *dst = i > INT32_MAX ? INT32_MAX : i < INT32_MIN ? INT32_MIN : (int)i;
    return 0;
}

void
nd_cfg_seconds(const nd_cfg_node_t *v, double dflt, double *dst)
{
    if (v->type == ND_CFG_INT)
        *dst = (double)v->u.i;
    else if (v->type == ND_CFG_FLOAT)
        *dst = v->u.f;
    else
        *dst = dflt;
}

/* Go's leadingInt: [0-9]* as an integer. Returns: false on overflow past 1<<63. */
static bool
leading_int(const char **p, uint64_t *x)
{
    *x = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (*x > (UINT64_C(1) << 63) / 10)
            return false;
        *x = *x * 10 + (uint64_t)(**p - '0');
        if (*x > UINT64_C(1) << 63)
            return false;
    }
    return true;
}

/* Go's leadingFraction: [0-9]* as an integer and its scale (10^digits kept); digits past
 * what fits are skipped, as Go does. */
static uint64_t
leading_fraction(const char **p, double *scale)
{
    uint64_t x = 0;
    bool overflow = false;
    *scale = 1;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (overflow)
            continue;
        if (x > (uint64_t)INT64_MAX / 10) {
            overflow = true;
            continue;
        }
        uint64_t y = x * 10 + (uint64_t)(**p - '0');
        if (y > UINT64_C(1) << 63) {
            overflow = true;
            continue;
        }
        x = y;
        *scale *= 10;
    }
    return x;
}

/* Go's time.ParseDuration, in integers as Go does (a fraction goes through a float64 scaled to
 * the unit, so "1.001s" is exactly 1001ms). */
int
nd_cfg_go_duration(const char *s, int64_t *out_ns, char *why, size_t whylen)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        {"ns", 1},
        {"us", 1000},
        {"\xc2\xb5s", 1000},
        {"\xce\xbcs", 1000},
        {"ms", 1000000},
        {"s", 1000000000},
        {"m", UINT64_C(60000000000)},
        {"h", UINT64_C(3600000000000)},
    };
    const uint64_t lim = UINT64_C(1) << 63;
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (strcmp(p, "0") == 0) {
        *out_ns = 0;
        return 0;
    }
    if (*p == '\0')
        goto invalid;
    uint64_t d = 0;
    while (*p) {
        if (!(*p == '.' || (*p >= '0' && *p <= '9')))
            goto invalid;
        const char *start = p;
        uint64_t v, f = 0;
        double scale = 1;
        if (!leading_int(&p, &v))
            goto invalid;
        bool pre = p != start, post = false;
        if (*p == '.') {
            const char *fs = ++p;
            f = leading_fraction(&p, &scale);
            post = p != fs;
        }
        if (!pre && !post)
            goto invalid;
        const char *u = p;
        while (*p && *p != '.' && (*p < '0' || *p > '9'))
            p++;
        size_t ul = (size_t)(p - u);
        if (ul == 0) {
            snprintf(why, whylen, "time: missing unit in duration \"%s\"", s);
            return -1;
        }
        uint64_t unit = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].name) == ul && strncmp(units[i].name, u, ul) == 0)
                unit = units[i].ns;
        if (unit == 0) {
            snprintf(why, whylen, "time: unknown unit \"%.*s\" in duration \"%s\"", (int)ul, u, s);
            return -1;
        }
        if (v > lim / unit)
            goto invalid;
        v *= unit;
        if (f > 0) {
            /* A float64, as in Go: it is nanosecond-accurate for fractions of an hour. */
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > lim)
                goto invalid;
        }
        d += v;
        if (d > lim)
            goto invalid;
    }
    if (neg) {
        *out_ns = d == lim ? INT64_MIN : -(int64_t)d;
        return 0;
    }
    if (d > lim - 1)
        goto invalid;
    *out_ns = (int64_t)d;
    return 0;
invalid:
    snprintf(why, whylen, "time: invalid duration \"%s\"", s);
    return -1;
}

int
nd_cfg_duration(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *field, const nd_cfg_node_t *v,
                int64_t *ms)
{
    if (v->type == ND_CFG_STRING) {
        int64_t ns;
        char why[512];
        if (nd_cfg_go_duration(v->u.str.s, &ns, why, sizeof why) < 0)
            return nd_cfg_fail(a, at, "error parsing %s: %s", field, why);
        *ms = ns / 1000000;
        return 0;
    }
    /* Backward compatible with old configs: seconds, with nats-server's warning, which it adds
     * before asserting the integer type (so a wrong type gets both). */
    nd_cfg_warn(a, true, at, "invalid use of field \"%s\": %s should be converted to a duration",
                field, field);
    if (v->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, v, ND_CFG_INT);
    if (v->u.i > INT64_MAX / 1000 || v->u.i < INT64_MIN / 1000)
        return nd_cfg_fail(a, at, "error parsing %s: value out of range", field);
    *ms = v->u.i * 1000;
    return 0;
}

int
nd_cfg_duration_str(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *prefix, const nd_cfg_node_t *v,
                    int64_t *ms)
{
    if (v->type != ND_CFG_STRING)
        return nd_cfg_type_err(a, at, v, ND_CFG_STRING);
    int64_t ns;
    char why[512];
    if (nd_cfg_go_duration(v->u.str.s, &ns, why, sizeof why) < 0)
        return prefix ? nd_cfg_fail(a, at, "%s: %s", prefix, why) : nd_cfg_fail(a, at, "%s", why);
    *ms = ns / 1000000;
    return 0;
}

/* Go's time.Duration.String() of ms milliseconds ("0s", "500ms", "1.5s", "1m30s", "1h0m0s"). */
void
nd_cfg_go_dur_string(int64_t ms, char *buf, size_t len)
{
    if (ms == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    const char *sign = ms < 0 ? "-" : "";
    uint64_t u = ms < 0 ? (uint64_t)(-(ms + 1)) + 1 : (uint64_t)ms;
    if (u < 1000) {
        snprintf(buf, len, "%s%llums", sign, (unsigned long long)u);
        return;
    }
    uint64_t h = u / 3600000, m = (u / 60000) % 60, s = (u / 1000) % 60, frac = u % 1000;
    char secs[32];
    if (frac) {
        /* Go prints the shortest fraction: trailing zeros go (frac != 0 keeps one digit). */
        snprintf(secs, sizeof secs, "%llu.%03llu", (unsigned long long)s, (unsigned long long)frac);
        size_t l = strlen(secs);
        while (secs[l - 1] == '0')
            secs[--l] = '\0';
    } else {
        snprintf(secs, sizeof secs, "%llu", (unsigned long long)s);
    }
    if (h)
        snprintf(buf, len, "%s%lluh%llum%ss", sign, (unsigned long long)h, (unsigned long long)m,
                 secs);
    else if (m)
        snprintf(buf, len, "%s%llum%ss", sign, (unsigned long long)m, secs);
    else
        snprintf(buf, len, "%s%ss", sign, secs);
}

/* Splits "host:port" as Go's net.SplitHostPort does ("[v6]:port" included), then the port with
 * strconv.Atoi. */
int
nd_cfg_listen(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, char **host, int *port)
{
    if (v->type == ND_CFG_INT) {
        /* Only a port: the host is cleared, as nats-server's zero-valued hostPort does. */
        nd_set_str(host, "");
        *port = v->u.i > INT32_MAX ? INT32_MAX : v->u.i < INT32_MIN ? INT32_MIN : (int)v->u.i;
        return 0;
    }
    if (v->type != ND_CFG_STRING)
        return nd_cfg_fail(a, at, "expected port or host:port, got %s", nd_cfg_go_type(v));
    const char *s = v->u.str.s, *colon = strrchr(s, ':');
    char h[256];
    if (colon == NULL || (size_t)(colon - s) >= sizeof h)
        return nd_cfg_fail(a, at, "could not parse address string \"%s\"", s);
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hl < 2 || s[hl - 1] != ']' || memchr(s + 1, ']', hl - 2) != NULL)
            return nd_cfg_fail(a, at, "could not parse address string \"%s\"", s);
        memcpy(h, s + 1, hl - 2);
        h[hl - 2] = '\0';
    } else {
        if (memchr(s, ':', hl) != NULL || memchr(s, '[', hl) != NULL || memchr(s, ']', hl) != NULL)
            return nd_cfg_fail(a, at, "could not parse address string \"%s\"", s);
        memcpy(h, s, hl);
        h[hl] = '\0';
    }
    const char *ps = colon + 1;
    char *end;
    errno = 0;
    long long p = strtoll(ps, &end, 10);
    bool ok = *ps != '\0' && *end == '\0' && errno == 0 && !isspace((unsigned char)*ps);
    if (!ok || p > INT32_MAX || p < INT32_MIN)
        return nd_cfg_fail(a, at, "could not parse port \"%s\"", ps);
    nd_set_str(host, h);
    *port = (int)p;
    return 0;
}

int
nd_cfg_listener(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, char **host, int *port)
{
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    if (nd_cfg_key_is(e->key, "listen"))
        return nd_cfg_listen(a, at, e->val, host, port);
    if (nd_cfg_key_is(e->key, "port"))
        return nd_cfg_int(a, at, e->val, port);
    return nd_cfg_str(a, at, e->val, host); /* host, net */
}

int
nd_cfg_strs(const nd_cfg_node_t *v, nd_strlist_t *out, const nd_cfg_node_t **bad)
{
    nd_strlist_t l = {0};
    if (v->type == ND_CFG_STRING) {
        nd_strlist_add(&l, v->u.str.s);
    } else if (v->type == ND_CFG_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++) {
            const nd_cfg_node_t *e = v->u.arr.v[i];
            if (e->type != ND_CFG_STRING) {
                nd_strlist_free(&l);
                *bad = e;
                return -1;
            }
            nd_strlist_add(&l, e->u.str.s);
        }
    } else {
        *bad = v;
        return -1;
    }
    *out = l;
    return 0;
}

int
nd_cfg_strarray(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *field, const nd_cfg_node_t *v,
                nd_strlist_t *dst)
{
    nd_strlist_t l;
    const nd_cfg_node_t *bad;
    if (nd_cfg_strs(v, &l, &bad) < 0) {
        if (bad == v)
            return nd_cfg_fail(a, at, "error parsing %s: unsupported type %s", field,
                               nd_cfg_go_type(v));
        return nd_cfg_fail(a, nd_cfg_at_node(bad), "error parsing %s: unsupported type in array %s",
                           field, nd_cfg_go_type(bad));
    }
    nd_strlist_free(dst);
    *dst = l;
    return 0;
}

static bool
is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The subset of Go's url.Parse failures that a config can plausibly contain. */
static bool
url_ok(const char *u)
{
    for (const char *p = u; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return false;
        if (*p == '%' && !(is_hex(p[1]) && is_hex(p[2])))
            return false;
    }
    /* A scheme is letters, digits, '+', '-', '.' starting with a letter, ended by ':'; a ':'
     * before any '/' that does not end a valid scheme is "missing protocol scheme". */
    const char *colon = strchr(u, ':'), *slash = strchr(u, '/');
    if (colon && (!slash || colon < slash)) {
        if (colon == u)
            return false;
        bool scheme = isalpha((unsigned char)u[0]);
        for (const char *p = u; p < colon && scheme; p++)
            scheme = isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.';
        if (!scheme)
            return false;
        /* With an authority, the port after the host must be numeric. */
        if (colon[1] == '/' && colon[2] == '/') {
            const char *auth = colon + 3, *end = auth + strcspn(auth, "/?#");
            const char *at = NULL;
            for (const char *p = auth; p < end; p++)
                if (*p == '@')
                    at = p;
            const char *host = at ? at + 1 : auth;
            const char *pc = NULL;
            if (*host == '[') {
                const char *rb = memchr(host, ']', (size_t)(end - host));
                if (!rb)
                    return false;
                if (rb + 1 < end && rb[1] != ':')
                    return false;
                pc = rb + 1 < end ? rb + 1 : NULL;
            } else {
                for (const char *p = host; p < end; p++)
                    if (*p == ':')
                        pc = p;
            }
            if (pc)
                for (const char *p = pc + 1; p < end; p++)
                    if (!isdigit((unsigned char)*p))
                        return false;
        }
    }
    return true;
}

int
nd_cfg_url(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *typ, const char *u, char **dst)
{
    /* strings.TrimSpace */
    while (*u && isspace((unsigned char)*u))
        u++;
    size_t n = strlen(u);
    while (n > 0 && isspace((unsigned char)u[n - 1]))
        n--;
    char *t = nd_xmalloc(n + 1);
    memcpy(t, u, n);
    t[n] = '\0';
    if (!url_ok(t)) {
        nd_cfg_fail(a, at, "error parsing %s url [\"%s\"]", typ, t);
        nd_free(t);
        return -1;
    }
    nd_free(*dst);
    *dst = t;
    return 0;
}

int
nd_cfg_urls(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *typ, const nd_cfg_node_t *v,
            nd_strlist_t *dst)
{
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_type_err(a, at, v, ND_CFG_ARRAY);
    nd_strlist_t l = {0};
    nd_cfg_strset_t seen = {0};
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *e = v->u.arr.v[i];
        nd_cfg_at_t eat = nd_cfg_at_node(e);
        if (e->type != ND_CFG_STRING) {
            nd_strlist_free(&l);
            nd_cfg_strset_free(&seen);
            return nd_cfg_type_err(a, eat, e, ND_CFG_STRING);
        }
        if (!nd_cfg_strset_add(&seen, e->u.str.s, i, NULL)) {
            nd_cfg_warn(a, true, eat, "invalid use of field \"%s\": Duplicate %s entry detected",
                        e->u.str.s, typ);
            continue;
        }
        char *u = NULL;
        if (nd_cfg_url(a, eat, typ, e->u.str.s, &u) < 0) {
            nd_strlist_free(&l);
            nd_cfg_strset_free(&seen);
            return -1;
        }
        nd_strlist_add(&l, u);
        nd_free(u);
    }
    nd_cfg_strset_free(&seen);
    nd_strlist_free(dst);
    *dst = l;
    return 0;
}

static uint64_t
fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static size_t
strset_find(const nd_cfg_strset_t *set, const char *s)
{
    size_t i = (size_t)fnv1a(s) & (set->cap - 1);
    while (set->slot[i] != NULL && strcmp(set->slot[i], s) != 0)
        i = (i + 1) & (set->cap - 1);
    return i;
}

bool
nd_cfg_strset_get(const nd_cfg_strset_t *set, const char *s, size_t *v)
{
    if (set->cap == 0)
        return false;
    size_t i = strset_find(set, s);
    if (set->slot[i] == NULL)
        return false;
    if (v)
        *v = set->val[i];
    return true;
}

bool
nd_cfg_strset_add(nd_cfg_strset_t *set, const char *s, size_t v, size_t *old)
{
    if (nd_cfg_strset_get(set, s, old))
        return false;
    if ((set->n + 1) * 2 > set->cap) {
        nd_cfg_strset_t g = {.cap = set->cap ? set->cap * 2 : 16};
        g.slot = nd_xcalloc(g.cap, sizeof(*g.slot));
        g.val = nd_xcalloc(g.cap, sizeof(*g.val));
        for (size_t i = 0; i < set->cap; i++)
            if (set->slot[i] != NULL) {
                size_t j = strset_find(&g, set->slot[i]);
                g.slot[j] = set->slot[i];
                g.val[j] = set->val[i];
                g.n++;
            }
        nd_cfg_strset_free(set);
        *set = g;
    }
    size_t i = strset_find(set, s);
    set->slot[i] = s;
    set->val[i] = v;
    set->n++;
    return true;
}

void
nd_cfg_strset_free(nd_cfg_strset_t *set)
{
    nd_free(set->slot);
    nd_free(set->val);
    memset(set, 0, sizeof(*set));
}

bool
nd_cfg_key_is(const char *key, const char *names)
{
    const char *p = names;
    size_t kl = strlen(key);
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == kl && strncasecmp(p, key, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

bool
nd_cfg_valid_subject(const char *s)
{
    if (*s == '\0')
        return false;
    bool fwc = false;
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n == 0 || fwc)
            return false;
        if (n > 1) {
            for (size_t i = 0; i < n; i++)
                if (strchr("\t\n\f\r ", p[i]))
                    return false;
        } else if (p[0] == '>') {
            fwc = true;
        } else if (strchr(" \t\n\r\f", p[0])) {
            return false;
        }
        if (!dot)
            break;
        p = dot + 1;
    }
    return true;
}
