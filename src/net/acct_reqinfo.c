/* The Nats-Request-Info header of requests through service imports; see acct_reqinfo.h. */
#include "net/acct_reqinfo.h"
#include "util/timefmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "net/conn_int.h"
#include "actors/alloc.h"

/* A growing output buffer. */
typedef struct out {
    char *p;
    size_t len, cap;
} out_t;

static void
put(out_t *o, const char *s, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = nd_grow_cap(o->cap, o->len + n, 256);
        o->p = nd_xrealloc(o->p, o->cap);
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void
puts_(out_t *o, const char *s)
{
    put(o, s, strlen(s));
}

/* Returns: the length of the valid UTF-8 sequence at s (n bytes left), or 0 if it is invalid
 * (overlong, a surrogate, past U+10FFFF, or cut short). */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    unsigned min, cp;
    if (c < 0xC2)
        return 0; /* a continuation byte or an overlong two-byte lead */
    if (c < 0xE0) {
        k = 2, min = 0x80, cp = c & 0x1F;
    } else if (c < 0xF0) {
        k = 3, min = 0x800, cp = c & 0x0F;
    } else if (c < 0xF5) {
        k = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

/* A JSON string as Go's encoding/json writes it: <, > and & as \u00XX, U+2028 and U+2029
 * escaped, and each invalid UTF-8 byte replaced by U+FFFD. */
static void
put_json_str(out_t *o, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    put(o, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c >= 0x80) {
            size_t k = utf8_len(s + i, n - i);
            if (k == 0) {
                puts_(o, "\\ufffd");
                i++;
            } else if (k == 3 && c == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] & 0xFE) == 0xA8) {
                puts_(o, s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
                i += 3;
            } else {
                put(o, str + i, k);
                i += k;
            }
            continue;
        }
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(o, e, 2);
        } else if (c == '\n') {
            puts_(o, "\\n");
        } else if (c == '\r') {
            puts_(o, "\\r");
        } else if (c == '\t') {
            puts_(o, "\\t");
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(o, e, 6);
        } else {
            put(o, str + i, 1);
        }
        i++;
    }
    put(o, "\"", 1);
}

/* ,"key":"value" (the first field writes no comma); nothing for NULL or "" (Go's omitempty). */
static void
field_str(out_t *o, const char *key, const char *v)
{
    if (v == NULL || v[0] == '\0')
        return;
    if (o->p[o->len - 1] != '{')
        put(o, ",", 1);
    put(o, "\"", 1);
    puts_(o, key);
    put(o, "\":", 2);
    put_json_str(o, v);
}

static void
field_int(out_t *o, const char *key, int64_t v)
{
    if (v == 0)
        return; /* omitempty */
    char b[32];
    int n = snprintf(b, sizeof b, "%s\"%s\":%" PRId64, o->p[o->len - 1] != '{' ? "," : "", key, v);
    put(o, b, (size_t)n);
}

/* The ClientInfo JSON of c, fields in the order of nats-server's struct. */
static void
client_info(out_t *o, const nd_conn_t *c, const char *acct_name, const nd_acct_reqinfo_t *ri)
{
    const nd_server_t *s = c->srv;
    put(o, "{", 1);
    if (ri->detailed) {
        char t[48];
        nd_time_rfc3339(c->mon.start_ns, t);
        field_str(o, "start", t);
        field_str(o, "host", c->ip);
        field_int(o, "id", (int64_t)c->cid);
    }
    /* "acc" has no omitempty: always there. */
    if (o->p[o->len - 1] != '{')
        put(o, ",", 1);
    puts_(o, "\"acc\":");
    put_json_str(o, acct_name);
    field_str(o, "svc", ri->svc);
    if (ri->detailed) {
        /* getRawAuthUser: the CONNECT's nkey, else its user, else the user JWT's key. A token
         * is a secret and is never passed on (nats-server passes it). The owner is the only
         * writer of its registry strings, so it reads them unlocked. */
        const char *user = c->cr_nkey != NULL ? c->cr_nkey : c->cr_user;
        if (user == NULL && c->mon.meta != NULL && c->cr_jwt != NULL)
            user = c->mon.meta->user;
        field_str(o, "user", user);
        field_str(o, "name", c->name);
        field_str(o, "lang", c->lang);
        field_str(o, "ver", c->version);
    }
    /* relaxed: a monitoring figure the owner itself stores. */
    field_int(o, "rtt", atomic_load_explicit(&c->mon.rtt_ns, memory_order_relaxed));
    if (ri->detailed || ri->server)
        field_str(o, "server", s->opts.server_name ? s->opts.server_name : s->server_id);
    if (ri->detailed) {
        field_str(o, "jwt", c->cr_jwt);
        /* issuerForClient: an nkey user's account (nats-server keeps no issuer for a plain
         * user); a user JWT's signing key is not kept here. */
        if (c->cr_jwt == NULL && c->cr_nkey != NULL && c->mon.meta != NULL &&
            c->mon.meta->user != NULL && strcmp(c->mon.meta->user, c->cr_nkey) == 0)
            field_str(o, "issuer_key", acct_name);
        field_str(o, "kind", "Client");
        field_str(o, "client_type", "nats");
    }
    put(o, "}", 1);
}

/* Returns: whether the header line [p, p + n) is a Nats-Request-Info one (any case; blanks
 * before the colon tolerated). */
static bool
is_reqinfo_line(const char *p, size_t n)
{
    size_t k = sizeof ND_ACCT_REQINFO_HDR - 1;
    if (n < k + 1 || strncasecmp(p, ND_ACCT_REQINFO_HDR, k) != 0)
        return false;
    while (k < n && (p[k] == ' ' || p[k] == '\t'))
        k++;
    return k < n && p[k] == ':';
}

char *
nd_acct_reqinfo_apply(const nd_conn_t *c, const char *acct_name, const nd_acct_reqinfo_t *ri,
                      const char *payload, size_t len, size_t hdr_len, size_t *out_len,
                      size_t *out_hdr_len)
{
    out_t o = {0};
    const char *body = payload + hdr_len;
    size_t body_len = len - hdr_len;
    const char *eol = hdr_len > 0 ? memmem(payload, hdr_len, "\r\n", 2) : NULL;
    if (eol == NULL) {
        puts_(&o, "NATS/1.0\r\n");
    } else {
        /* The status line as it was, then every header but ours, in order, up to the blank line;
         * a folded continuation of one of ours goes with it. */
        put(&o, payload, (size_t)(eol - payload) + 2);
        const char *p = eol + 2, *end = payload + hdr_len;
        bool dropping = false;
        while (p < end) {
            const char *e = memmem(p, (size_t)(end - p), "\r\n", 2);
            size_t n = e != NULL ? (size_t)(e - p) : (size_t)(end - p);
            if (n == 0)
                break;
            bool cont = p[0] == ' ' || p[0] == '\t';
            if (!cont)
                dropping = is_reqinfo_line(p, n);
            if (!dropping)
                put(&o, p, n), put(&o, "\r\n", 2);
            p += n + (e != NULL ? 2 : 0);
        }
    }
    puts_(&o, ND_ACCT_REQINFO_HDR ": ");
    client_info(&o, c, acct_name, ri);
    put(&o, "\r\n\r\n", 4);
    *out_hdr_len = o.len;
    put(&o, body, body_len);
    *out_len = o.len;
    return o.p;
}
