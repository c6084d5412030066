/* A consumer's wire formats other than its JSON config (consumer_proto.h): ack reply subjects,
 * ack bodies, pull requests, status headers and Go's duration text.
 *
 * What nats-server 2.11 does, and what this file keeps from it (server/consumer.go):
 *  - processAck classifies a body by exact match ("", "+ACK", "+OK", "+WPI") or by prefix
 *    ("+NXT", "-NAK", "+TERM", checked in that order); any other body does nothing but still
 *    gets the empty ack reply. The NAK argument is trimmed, then read as {"delay":ns} when it
 *    starts with '{' and as a Go duration otherwise; one that does not parse is a plain NAK.
 *  - ackReplyInfo splits on '.', wants exactly 9 tokens led by "$JS.ACK" and reads the numbers
 *    with no overflow check, a bad one as -1. We refuse such subjects instead: both ways the ack
 *    matches no pending message. The 12-token domain form (clients parse it) is read too.
 *  - nextReqFromMsg trims the body (bytes.TrimSpace, which knows Unicode spaces), then: empty is
 *    batch 1; '{' is json.Unmarshal into JSApiConsumerGetNextRequest (first type error wins,
 *    keys match case-insensitively, null leaves a field alone), followed by the heartbeat rule;
 *    else strconv.Atoi, falling back to batch 1. processNextMsgRequest then checks the caps in
 *    the order batch, expires, max_bytes, printing MaxRequestExpires with Duration.String().
 *
 * The ack paths run once per acked message, so they never allocate: numbers are read in place,
 * and a NAK's JSON goes through jansson only when it is not the plain {"delay":<int>} shape.
 */
#include "js/consumer_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cfg/opts_parse.h"
#include "js/apijson.h"
#include "util/gojson.h"
#include "util/timefmt.h"

/* ---- helpers ---- */

/* The length of the Unicode space (unicode.IsSpace, UTF-8) at p[0..n), or 0. */
static size_t
space_at(const unsigned char *p, size_t n)
{
    if (n >= 1 && (p[0] == ' ' || (p[0] >= '\t' && p[0] <= '\r')))
        return 1;
    if (n >= 2 && p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
        return 2;
    if (n >= 3) {
        if (p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) /* U+1680 */
            return 3;
        if (p[0] == 0xe2 && p[1] == 0x80 &&
            ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf))
            return 3; /* U+2000..U+200A, U+2028, U+2029, U+202F */
        if (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) /* U+205F */
            return 3;
        if (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80) /* U+3000 */
            return 3;
    }
    return 0;
}

/* Go's bytes.TrimSpace on s[0..*n): moves s forward and shortens *n. */
static const char *
go_trim(const char *s, size_t *n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = *n, k;
    while (len > 0 && (k = space_at(p, len)) > 0) {
        p += k;
        len -= k;
    }
    for (;;) {
        /* A space ends the text when one of the last 1..3 bytes starts exactly it. */
        size_t cut = 0;
        for (k = 1; k <= 3 && k <= len && cut == 0; k++)
            if (space_at(p + len - k, k) == k)
                cut = k;
        if (cut == 0)
            break;
        len -= cut;
    }
    *n = len;
    return (const char *)p;
}

/* An unsigned decimal token: non-empty, digits only, within max. */
static bool
parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* strconv.Atoi (ParseInt base 10, 64 bits): an optional sign, then digits. */
static bool
go_atoi(const char *s, size_t n, int64_t *out)
{
    bool neg = false;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s++;
        n--;
    }
    uint64_t v;
    if (!parse_u64(s, n, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &v))
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* Writes v's decimal digits ending at end. Returns: where they start. */
static char *
put_u64_rev(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    return end;
}

static char *
put_u64(char *p, uint64_t v)
{
    char tmp[20];
    char *s = put_u64_rev(tmp + sizeof tmp, v);
    size_t n = (size_t)(tmp + sizeof tmp - s);
    memcpy(p, s, n);
    return p + n;
}

/* ---- $JS.ACK reply subjects ---- */

#define ACK_MAX_TOKENS 16 /* the 12-token form may grow; later tokens are ignored */

bool
js_ack_subj_parse(const char *subj, size_t len, js_ack_subj_t *out)
{
    const char *tok[ACK_MAX_TOKENS];
    size_t tlen[ACK_MAX_TOKENS];
    size_t nt = 0, start = 0;
    memset(out, 0, sizeof *out);
    if (subj == NULL)
        return false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || subj[i] == '.') {
            if (nt < ACK_MAX_TOKENS) {
                tok[nt] = subj + start;
                tlen[nt] = i - start;
            }
            nt++;
            start = i + 1;
        }
    }
    if (nt != 9 && nt < 12)
        return false;
    if (tlen[0] != 3 || memcmp(tok[0], "$JS", 3) != 0 || tlen[1] != 3 ||
        memcmp(tok[1], "ACK", 3) != 0)
        return false;
    size_t b = 2; /* the stream's token */
    if (nt >= 12) {
        /* $JS.ACK.<domain>.<acc hash>.<stream>... ; "_" is the empty domain */
        if (tlen[2] == 0 || tlen[3] == 0)
            return false;
        out->domain = tok[2];
        out->domain_len = tlen[2] == 1 && tok[2][0] == '_' ? 0 : tlen[2];
        b = 4;
    }
    if (tlen[b] == 0 || tlen[b + 1] == 0)
        return false;
    uint64_t ts;
    if (!parse_u64(tok[b + 2], tlen[b + 2], UINT64_MAX, &out->delivered) ||
        !parse_u64(tok[b + 3], tlen[b + 3], UINT64_MAX, &out->sseq) ||
        !parse_u64(tok[b + 4], tlen[b + 4], UINT64_MAX, &out->dseq) ||
        !parse_u64(tok[b + 5], tlen[b + 5], INT64_MAX, &ts) ||
        !parse_u64(tok[b + 6], tlen[b + 6], UINT64_MAX, &out->pending)) {
        memset(out, 0, sizeof *out);
        return false;
    }
    out->ts = (int64_t)ts;
    out->stream = tok[b];
    out->stream_len = tlen[b];
    out->consumer = tok[b + 1];
    out->consumer_len = tlen[b + 1];
    return true;
}

size_t
js_ack_subj_format(char *buf, const char *stream, const char *consumer, uint64_t delivered,
                   uint64_t sseq, uint64_t dseq, int64_t ts, uint64_t pending)
{
    size_t sl = strlen(stream), cl = strlen(consumer);
    char *p = buf;
    memcpy(p, "$JS.ACK.", 8);
    p += 8;
    memcpy(p, stream, sl);
    p += sl;
    *p++ = '.';
    memcpy(p, consumer, cl);
    p += cl;
    *p++ = '.';
    p = put_u64(p, delivered);
    *p++ = '.';
    p = put_u64(p, sseq);
    *p++ = '.';
    p = put_u64(p, dseq);
    *p++ = '.';
    if (ts < 0) {
        *p++ = '-';
        p = put_u64(p, 0 - (uint64_t)ts);
    } else {
        p = put_u64(p, (uint64_t)ts);
    }
    *p++ = '.';
    p = put_u64(p, pending);
    *p = '\0';
    return (size_t)(p - buf);
}

/* ---- ack bodies ---- */

static bool
has_prefix(const char *s, size_t n, const char *pre, size_t pn)
{
    return n >= pn && memcmp(s, pre, pn) == 0;
}

static bool
is_exact(const char *s, size_t n, const char *w)
{
    size_t wn = strlen(w);
    return n == wn && memcmp(s, w, wn) == 0;
}

static bool
json_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The plain shape {"delay":<int>} with JSON blanks, an integer literal JSON allows that fits
 * easily in int64. Returns: whether a matched it (then *ns is set). */
static bool
nak_json_fast(const char *a, size_t n, int64_t *ns)
{
    size_t i = 0;
#define SKIP_WS()                                                                                  \
    while (i < n && json_ws(a[i]))                                                                 \
    i++
    if (i >= n || a[i++] != '{')
        return false;
    SKIP_WS();
    if (n - i < 7 || memcmp(a + i, "\"delay\"", 7) != 0)
        return false;
    i += 7;
    SKIP_WS();
    if (i >= n || a[i++] != ':')
        return false;
    SKIP_WS();
    bool neg = i < n && a[i] == '-';
    if (neg)
        i++;
    size_t d0 = i;
    while (i < n && a[i] >= '0' && a[i] <= '9')
        i++;
    size_t nd = i - d0;
    if (nd == 0 || nd > 18 || (nd > 1 && a[d0] == '0'))
        return false;
    int64_t v = 0;
    for (size_t k = d0; k < i; k++)
        v = v * 10 + (a[k] - '0');
    SKIP_WS();
    if (i >= n || a[i++] != '}' || i != n)
        return false;
#undef SKIP_WS
    *ns = neg ? -v : v;
    return true;
}

/* json.Unmarshal into ConsumerNakOptions{Delay time.Duration `json:"delay"`}. Returns: whether
 * it decoded without error (then *ns is the delay, 0 when absent or null). */
static bool
nak_json_slow(const char *a, size_t n, int64_t *ns)
{
    nd_apijson_t aj;
    char why[256];
    if (!nd_apijson_parse(a, n, false, &aj, why, sizeof why))
        return false;
    bool ok = json_is_object(aj.root);
    int64_t d = 0;
    const char *key;
    json_t *v;
    if (ok) {
        json_object_foreach(aj.root, key, v)
        {
            if (!nd_gojson_key_is(key, "delay") || json_is_null(v))
                continue;
            if (!json_is_integer(v)) {
                ok = false; /* a type error: Go returns it, nats-server warns, a plain NAK */
                break;
            }
            d = json_integer_value(v);
        }
    }
    nd_apijson_free(&aj);
    if (ok)
        *ns = d;
    return ok;
}

/* The NAK argument after "-NAK": Returns: whether nats-server takes it as a delay. */
static bool
nak_delay(const char *a, size_t n, int64_t *ns)
{
    a = go_trim(a, &n);
    if (n == 0)
        return false;
    if (a[0] == '{')
        return nak_json_fast(a, n, ns) || nak_json_slow(a, n, ns);
    /* A Go duration; the longest sensible one ("2562047h47m16.854775807s") is far shorter. */
    char tmp[128], why[192];
    if (n >= sizeof tmp || memchr(a, '\0', n) != NULL)
        return false;
    memcpy(tmp, a, n);
    tmp[n] = '\0';
    return nd_cfg_go_duration(tmp, ns, why, sizeof why) == 0;
}

void
js_ack_body_parse(const char *body, size_t len, js_ack_body_t *out)
{
    memset(out, 0, sizeof *out);
    if (len == 0 || is_exact(body, len, "+ACK") || is_exact(body, len, "+OK")) {
        out->kind = JS_ACK_ACK;
    } else if (has_prefix(body, len, "+NXT", 4)) {
        out->kind = JS_ACK_NEXT;
        out->arg = body + 4;
        out->arg_len = len - 4;
    } else if (has_prefix(body, len, "-NAK", 4)) {
        out->kind = JS_ACK_NAK;
        int64_t ns = 0;
        if (nak_delay(body + 4, len - 4, &ns)) {
            out->has_delay = true;
            out->delay_ns = ns;
        }
    } else if (is_exact(body, len, "+WPI")) {
        out->kind = JS_ACK_PROGRESS;
    } else if (has_prefix(body, len, "+TERM", 5)) {
        out->kind = JS_ACK_TERM;
        size_t n = len - 5;
        const char *r = go_trim(body + 5, &n);
        if (n > 0) {
            out->arg = r;
            out->arg_len = n;
        }
    } else {
        out->kind = JS_ACK_NONE;
    }
}

/* ---- pull requests ---- */

typedef enum { PF_INT, PF_INT64, PF_DUR, PF_BOOL, PF_STR } pf_type_t;

static const char *const pf_gotype[] = {
    [PF_INT] = "int",   [PF_INT64] = "int64", [PF_DUR] = "time.Duration",
    [PF_BOOL] = "bool", [PF_STR] = "string",
};

/* JSApiConsumerGetNextRequest's fields with their JSON names, and the path Go 1.24 prints in
 * a type error (it names the embedded PriorityGroup struct). */
static const struct {
    const char *name, *path;
    pf_type_t type;
} pull_fields[] = {
    {"expires", "expires", PF_DUR},
    {"batch", "batch", PF_INT},
    {"max_bytes", "max_bytes", PF_INT},
    {"no_wait", "no_wait", PF_BOOL},
    {"idle_heartbeat", "idle_heartbeat", PF_DUR},
    {"group", "PriorityGroup.group", PF_STR},
    {"min_pending", "PriorityGroup.min_pending", PF_INT64},
    {"min_ack_pending", "PriorityGroup.min_ack_pending", PF_INT64},
    {"id", "PriorityGroup.id", PF_STR},
};
#define NPULL_FIELDS (sizeof pull_fields / sizeof pull_fields[0])

static void
set_str(char *dst, size_t room, bool *too_long, const char *s)
{
    size_t n = strlen(s);
    *too_long = n >= room;
    if (n >= room)
        n = room - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* Stores v into field k of r. Returns: false with Go's type error text in why. */
static bool
pull_store(const nd_apijson_t *aj, size_t k, const json_t *v, js_pull_req_t *r, char *why,
           size_t wn)
{
    const char *what = nd_apijson_kind(v);
    char lit[160], nb[128];
    switch (pull_fields[k].type) {
    case PF_INT:
    case PF_INT64:
    case PF_DUR: {
        if (!json_is_number(v))
            break;
        if (!json_is_integer(v)) {
            snprintf(lit, sizeof lit, "number %s", nd_apijson_num_text(aj, v, nb, sizeof nb));
            what = lit;
            break;
        }
        int64_t x = json_integer_value(v);
        switch (k) {
        case 0:
            r->expires_ns = x;
            break;
        case 1:
            r->batch = x;
            break;
        case 2:
            r->max_bytes = x;
            break;
        case 4:
            r->heartbeat_ns = x;
            break;
        case 6:
            r->min_pending = x;
            break;
        default:
            r->min_ack_pending = x;
            break;
        }
        return true;
    }
    case PF_BOOL:
        if (!json_is_boolean(v))
            break;
        r->no_wait = json_is_true(v);
        return true;
    case PF_STR:
        if (!json_is_string(v))
            break;
        if (k == 5)
            set_str(r->group, sizeof r->group, &r->group_long, json_string_value(v));
        else
            set_str(r->id, sizeof r->id, &r->id_long, json_string_value(v));
        return true;
    }
    snprintf(why, wn, "json: cannot unmarshal %s into Go struct field %s.%s of type %s", what,
             "JSApiConsumerGetNextRequest", pull_fields[k].path, pf_gotype[pull_fields[k].type]);
    return false;
}

/* json.Unmarshal of the request. Returns: false with Go's error text in why. */
static bool
pull_json(const char *s, size_t n, js_pull_req_t *r, char *why, size_t wn)
{
    nd_apijson_t aj;
    if (!nd_apijson_parse(s, n, false, &aj, why, wn))
        return false;
    bool ok = true;
    const char *key;
    json_t *v;
    /* The text starts with '{' and parsed, so the root is an object. */
    json_object_foreach(aj.root, key, v)
    {
        if (json_is_null(v))
            continue;
        for (size_t k = 0; k < NPULL_FIELDS; k++) {
            if (nd_gojson_key_is(key, pull_fields[k].name)) {
                ok = pull_store(&aj, k, v, r, why, wn);
                break;
            }
        }
        if (!ok)
            break; /* Go goes on but reports the first type error, which this is */
    }
    nd_apijson_free(&aj);
    return ok;
}

bool
js_pull_req_parse(const char *body, size_t len, const js_pull_caps_t *caps, js_pull_req_t *out,
                  char *status, size_t status_room)
{
    memset(out, 0, sizeof *out);
    out->batch = 1;
    if (status_room > 0)
        status[0] = '\0';
    size_t n = len;
    const char *s = body != NULL ? go_trim(body, &n) : "";
    if (body == NULL)
        n = 0;
    if (n > 0 && s[0] == '{') {
        char why[300];
        out->batch = 0;
        if (!pull_json(s, n, out, why, sizeof why)) {
            js_pull_req_t z = {.batch = 1};
            *out = z;
            snprintf(status, status_room, "400 Bad Request - %s", why);
            return false;
        }
        /* The heartbeat must fit twice in expires (Go's product wraps like ours). */
        if (out->heartbeat_ns > 0 && (int64_t)((uint64_t)out->heartbeat_ns * 2) > out->expires_ns) {
            js_pull_req_t z = {.batch = 1};
            *out = z;
            snprintf(status, status_room, "400 Bad Request - heartbeat value too large");
            return false;
        }
    } else if (n > 0) {
        int64_t b;
        if (go_atoi(s, n, &b))
            out->batch = b;
    }
    if (caps == NULL)
        return true;
    if (caps->max_batch > 0 && out->batch > caps->max_batch) {
        snprintf(status, status_room, "409 Exceeded MaxRequestBatch of %" PRId64, caps->max_batch);
        return false;
    }
    /* nats-server compares deadlines (now + expires against now + max), which is this. */
    if (out->expires_ns != 0 && caps->max_expires_ns > 0 &&
        out->expires_ns > caps->max_expires_ns) {
        char d[40];
        nd_time_go_duration(d, sizeof d, caps->max_expires_ns);
        snprintf(status, status_room, "409 Exceeded MaxRequestExpires of %s", d);
        return false;
    }
    if (out->max_bytes > 0 && caps->max_bytes > 0 && out->max_bytes > caps->max_bytes) {
        snprintf(status, status_room, "409 Exceeded MaxRequestMaxBytes of %" PRId64,
                 caps->max_bytes);
        return false;
    }
    return true;
}

/* ---- status messages ---- */

size_t
js_status_hdr(char *buf, size_t room, const char *status, const char *extra)
{
    size_t sl = strlen(status), el = extra != NULL ? strlen(extra) : 0;
    size_t n = 9 + sl + 2 + el + 2;
    if (n + 1 > room)
        return 0;
    char *p = buf;
    memcpy(p, "NATS/1.0 ", 9);
    p += 9;
    memcpy(p, status, sl);
    p += sl;
    memcpy(p, "\r\n", 2);
    p += 2;
    if (el > 0)
        memcpy(p, extra, el);
    p += el;
    memcpy(p, "\r\n", 3);
    return n;
}

size_t
js_pending_hdrs(char *buf, size_t room, uint64_t msgs, uint64_t bytes)
{
    int n = snprintf(buf, room,
                     "Nats-Pending-Messages: %" PRIu64 "\r\nNats-Pending-Bytes: %" PRIu64 "\r\n",
                     msgs, bytes);
    if (n < 0 || (size_t)n >= room) {
        if (room > 0)
            buf[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

