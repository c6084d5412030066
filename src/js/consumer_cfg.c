/* A consumer's configuration: nats-server 2.11's ConsumerConfig decoded, defaulted, checked and
 * written back (consumer_cfg.h).
 *
 * As in stream_cfg.c, one table lists the Go struct's fields (ConsumerConfig, and the request
 * around it, CreateConsumerRequest) in the Go struct's order with their JSON names, kinds and
 * omitempty flags. Decoding walks a body's keys through the table as Go's encoding/json does:
 * keys match names case-insensitively, null leaves a field alone (or sets a pointer, slice or
 * map to nil), a value of the wrong type is remembered as the first error while decoding goes
 * on, an error of a custom unmarshaller (the policy enums, the action, time.Time) stops it, and
 * unknown keys are errors only in strict mode. Encoding walks the same table, so the canonical
 * JSON has nats-server's key order and omits exactly what Go's omitempty omits.
 *
 * Between the two, the create handler's checks (jsConsumerCreateRequest), then
 * setConsumerConfigDefaults and checkConsumerCfg run in nats-server's order with its texts on
 * the decoded Go-like struct (gcons_t). Differences from nats-server, on purpose:
 *   - an ephemeral's inactive_threshold default (5 s) is written into the config when it is
 *     parsed, not when the consumer starts, so that a repeated create compares equal;
 *   - a consumer name is checked for length (10102) and path separators (10127) whether it came
 *     as durable_name, as name or from the subject, since it names a directory here;
 *   - the name checks (10102, 10103) run at the end of the parse, before the caller's checks
 *     against the stream's other consumers (nats-server makes them after those).
 * nats-server 2.11 no longer checks that a filter is a subset of the stream's subjects (10093,
 * as 2.9 did): a filter outside them is accepted.
 *
 * Not checked here, because they need the stream's other consumers or the account's state:
 * an existing consumer (10148, 10149, 10105), the workqueue rules
 * (nd_consumer_cfg_check_workqueue), a deliver subject that is still bound on an update (10013),
 * max_consumers (10026).
 */
#include "js/consumer_cfg.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/apijson.h"
#include "util/timefmt.h"
#include "subj/subject.h"
#include "util/gojson.h"

#define NS_PER_MS            INT64_C(1000000)
#define NS_PER_S             INT64_C(1000000000)
#define MAX_NAME_LEN         255
#define MAX_DESC_LEN         4096
#define MAX_METADATA_LEN     (128 * 1024)
#define DEFAULT_ACK_WAIT     (30 * NS_PER_S)
#define DEFAULT_MAX_WAITING  512
#define DEFAULT_MAX_ACK_PEND 1000
#define DEFAULT_INACTIVE     (5 * NS_PER_S)
#define DEFAULT_PINNED_TTL   (120 * NS_PER_S)
#define REQ_LEVEL_KEY        "_nats.req.level"

/* ---- The Go structs ---------------------------------------------------------------------- */

/* A *time.Time: the instant and the offset it was written with (Go keeps the zone). */
typedef struct gtime {
    bool set;
    int64_t sec; /* Unix seconds (any year Go's RFC 3339 reads) */
    int32_t nsec;
    int off_s;
} gtime_t;

typedef struct gcons {
    char *durable, *name, *description;
    int64_t deliver_policy;
    uint64_t opt_start_seq;
    gtime_t opt_start_time;
    int64_t ack_policy;
    int64_t ack_wait, max_deliver;
    int64_t *backoff;
    size_t nbackoff;
    char *filter_subject;
    char **filter_subjects;
    size_t nfilter_subjects;
    int64_t replay_policy;
    uint64_t rate_limit;
    char *sample_freq;
    int64_t max_waiting, max_ack_pending;
    bool flow_control, headers_only;
    int64_t max_batch, max_expires, max_bytes;
    char *deliver_subject, *deliver_group;
    int64_t heartbeat, inactive_threshold;
    int64_t replicas;
    bool mem_storage, direct;
    json_t *metadata; /* object of strings, or NULL */
    gtime_t pause_until;
    char **priority_groups;
    size_t npriority_groups;
    int64_t priority_policy;
    int64_t pinned_ttl;
} gcons_t;

typedef struct greq {
    char *stream;
    gcons_t cfg;
    int64_t action;
    bool pedantic;
} greq_t;

/* Go's enum values. */
enum { DP_ALL = 0, DP_LAST, DP_NEW, DP_START_SEQ, DP_START_TIME, DP_LAST_PER };
enum { AP_NONE = 0, AP_ALL, AP_EXPLICIT };
enum { RP_INSTANT = 0, RP_ORIGINAL };
enum { PP_NONE = 0, PP_OVERFLOW, PP_PINNED };
enum { ACT_CREATE_OR_UPDATE = 0, ACT_UPDATE, ACT_CREATE };

typedef enum {
    K_STR,
    K_INT, /* Go int (64-bit) */
    K_U64,
    K_DUR, /* time.Duration */
    K_BOOL,
    K_STRS, /* []string */
    K_DURS, /* []time.Duration */
    K_TIME, /* *time.Time */
    K_MAP,  /* map[string]string */
    K_DELIVER,
    K_ACK,
    K_REPLAY,
    K_PRIO,
    K_ACTION,
    K_CFG, /* the request's ConsumerConfig */
} kind_t;

typedef struct field {
    const char *name;
    kind_t kind;
    size_t off, noff;
    bool omitempty;
    const char *gotype; /* for type errors */
} field_t;

typedef struct sdesc {
    const char *goname;
    const field_t *f;
    size_t nf;
} sdesc_t;

#define FLD(T, n, k, m, o, gt)                                                                     \
    {                                                                                              \
        n, k, offsetof(T, m), 0, o, gt                                                             \
    }
#define FLDN(T, n, k, m, cnt, o, gt)                                                               \
    {                                                                                              \
        n, k, offsetof(T, m), offsetof(T, cnt), o, gt                                              \
    }
#define NF(a) (sizeof(a) / sizeof((a)[0]))

/* ConsumerConfig in nats-server 2.11's field order. */
static const field_t cons_f[] = {
    FLD(gcons_t, "durable_name", K_STR, durable, true, "string"),
    FLD(gcons_t, "name", K_STR, name, true, "string"),
    FLD(gcons_t, "description", K_STR, description, true, "string"),
    FLD(gcons_t, "deliver_policy", K_DELIVER, deliver_policy, false, "server.DeliverPolicy"),
    FLD(gcons_t, "opt_start_seq", K_U64, opt_start_seq, true, "uint64"),
    FLD(gcons_t, "opt_start_time", K_TIME, opt_start_time, true, "time.Time"),
    FLD(gcons_t, "ack_policy", K_ACK, ack_policy, false, "server.AckPolicy"),
    FLD(gcons_t, "ack_wait", K_DUR, ack_wait, true, "time.Duration"),
    FLD(gcons_t, "max_deliver", K_INT, max_deliver, true, "int"),
    FLDN(gcons_t, "backoff", K_DURS, backoff, nbackoff, true, "[]time.Duration"),
    FLD(gcons_t, "filter_subject", K_STR, filter_subject, true, "string"),
    FLDN(gcons_t, "filter_subjects", K_STRS, filter_subjects, nfilter_subjects, true, "[]string"),
    FLD(gcons_t, "replay_policy", K_REPLAY, replay_policy, false, "server.ReplayPolicy"),
    FLD(gcons_t, "rate_limit_bps", K_U64, rate_limit, true, "uint64"),
    FLD(gcons_t, "sample_freq", K_STR, sample_freq, true, "string"),
    FLD(gcons_t, "max_waiting", K_INT, max_waiting, true, "int"),
    FLD(gcons_t, "max_ack_pending", K_INT, max_ack_pending, true, "int"),
    FLD(gcons_t, "flow_control", K_BOOL, flow_control, true, "bool"),
    FLD(gcons_t, "headers_only", K_BOOL, headers_only, true, "bool"),
    FLD(gcons_t, "max_batch", K_INT, max_batch, true, "int"),
    FLD(gcons_t, "max_expires", K_DUR, max_expires, true, "time.Duration"),
    FLD(gcons_t, "max_bytes", K_INT, max_bytes, true, "int"),
    FLD(gcons_t, "deliver_subject", K_STR, deliver_subject, true, "string"),
    FLD(gcons_t, "deliver_group", K_STR, deliver_group, true, "string"),
    FLD(gcons_t, "idle_heartbeat", K_DUR, heartbeat, true, "time.Duration"),
    FLD(gcons_t, "inactive_threshold", K_DUR, inactive_threshold, true, "time.Duration"),
    FLD(gcons_t, "num_replicas", K_INT, replicas, false, "int"),
    FLD(gcons_t, "mem_storage", K_BOOL, mem_storage, true, "bool"),
    FLD(gcons_t, "direct", K_BOOL, direct, true, "bool"),
    FLD(gcons_t, "metadata", K_MAP, metadata, true, "map[string]string"),
    FLD(gcons_t, "pause_until", K_TIME, pause_until, true, "time.Time"),
    FLDN(gcons_t, "priority_groups", K_STRS, priority_groups, npriority_groups, true, "[]string"),
    FLD(gcons_t, "priority_policy", K_PRIO, priority_policy, true, "server.PriorityPolicy"),
    FLD(gcons_t, "priority_timeout", K_DUR, pinned_ttl, true, "time.Duration"),
};
static const sdesc_t cons_d = {"ConsumerConfig", cons_f, NF(cons_f)};

static const field_t req_f[] = {
    FLD(greq_t, "stream_name", K_STR, stream, false, "string"),
    FLD(greq_t, "config", K_CFG, cfg, false, "server.ConsumerConfig"),
    FLD(greq_t, "action", K_ACTION, action, false, "server.ConsumerAction"),
    FLD(greq_t, "pedantic", K_BOOL, pedantic, true, "bool"),
};
static const sdesc_t req_d = {"CreateConsumerRequest", req_f, NF(req_f)};

#define AT(base, off, T)  ((T *)((char *)(base) + (off)))
#define CAT(base, off, T) ((const T *)((const char *)(base) + (off)))

/* ---- Freeing ----------------------------------------------------------------------------- */

static void
strs_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nd_free(v[i]);
    nd_free(v);
}

/* Frees one field of base and leaves it zero (Go's nil). */
static void
field_free(const field_t *f, void *base)
{
    switch (f->kind) {
    case K_STR:
        nd_free(*AT(base, f->off, char *));
        *AT(base, f->off, char *) = NULL;
        break;
    case K_STRS:
        strs_free(*AT(base, f->off, char **), *AT(base, f->noff, size_t));
        *AT(base, f->off, char **) = NULL;
        *AT(base, f->noff, size_t) = 0;
        break;
    case K_DURS:
        nd_free(*AT(base, f->off, int64_t *));
        *AT(base, f->off, int64_t *) = NULL;
        *AT(base, f->noff, size_t) = 0;
        break;
    case K_MAP:
        json_decref(*AT(base, f->off, json_t *));
        *AT(base, f->off, json_t *) = NULL;
        break;
    case K_TIME:
        memset(AT(base, f->off, gtime_t), 0, sizeof(gtime_t));
        break;
    default:
        break;
    }
}

static void
gcons_free(gcons_t *g)
{
    for (size_t i = 0; i < cons_d.nf; i++)
        field_free(&cons_d.f[i], g);
}

/* ---- Decoding (Go's encoding/json into the structs) -------------------------------------- */

typedef struct dctx {
    const nd_apijson_t *aj; /* number literals; NULL for an already decoded json_t */
    bool strict;
    bool fatal;    /* an unmarshaller failed: Go stops decoding */
    char err[400]; /* the first error ("" = none) */
} dctx_t;

static void
type_err(dctx_t *d, const char *value, const char *sname, const char *path, const char *type)
{
    if (d->err[0])
        return;
    snprintf(d->err, sizeof d->err,
             "json: cannot unmarshal %s into Go struct field %s.%s of type %s", value, sname, path,
             type);
}

static void fatal_err(dctx_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
fatal_err(dctx_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    d->fatal = true;
}

/* The raw JSON text of v (what an UnmarshalJSON method is handed). */
static void
raw_text(const dctx_t *d, const json_t *v, char *out, size_t cap)
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

/* Go's %q of a byte string: quoted, with \" and \\ and \x.. escapes. */
static void
go_quote(const char *raw, char *out, size_t cap)
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

/* An integer field: Go parses the literal and refuses what does not fit the type. */
static bool
decode_int(dctx_t *d, const json_t *v, const char *sname, const char *path, const char *gotype,
           bool unsig, int64_t *i64, uint64_t *u64)
{
    char nb[128], val[160];
    if (!json_is_number(v)) {
        type_err(d, nd_apijson_kind(v), sname, path, gotype);
        return false;
    }
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (!unsig || x >= 0) {
            if (i64)
                *i64 = x;
            if (u64)
                *u64 = (uint64_t)x;
            return true;
        }
    } else if (unsig) {
        /* A uint64 above INT64_MAX: a plain integer literal that fits. */
        const char *t = nd_apijson_num_text(d->aj, v, nb, sizeof nb);
        if (*t && strspn(t, "0123456789") == strlen(t) && strlen(t) <= 20) {
            char *e;
            unsigned long long x = strtoull(t, &e, 10);
            if (*e == '\0' && !(x == ULLONG_MAX && strcmp(t, "18446744073709551615"))) {
                *u64 = x;
                return true;
            }
        }
    }
    snprintf(val, sizeof val, "number %s", nd_apijson_num_text(d->aj, v, nb, sizeof nb));
    type_err(d, val, sname, path, gotype);
    return false;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int
digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Go's strict RFC 3339 ("2006-01-02T15:04:05[.frac](Z|±07:00)"), as time.Time's UnmarshalJSON
 * reads it: fields of fixed width, real calendar days, no leap second. Returns: success. */
static bool
parse_rfc3339(const char *s, gtime_t *out)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return false;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
        se > 59)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return false;
    const char *p = s + 19;
    int32_t nsec = 0;
    if (*p == '.') {
        int nd = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, nd++)
            if (nd < 9)
                nsec = nsec * 10 + (*p - '0');
        if (nd == 0)
            return false;
        for (; nd < 9; nd++)
            nsec *= 10;
    }
    int off = 0;
    if (*p == 'Z')
        p++;
    else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh = digits(p + 1, 2), om = digits(p + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else
        return false;
    if (*p)
        return false;
    out->set = true;
    out->sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    out->nsec = nsec;
    out->off_s = off;
    return true;
}

/* Unix nanoseconds of t, saturated (years before 1678 or after 2262); 0 for Go's zero time. */
static bool gtime_is_zero(const gtime_t *t);

static int64_t
gtime_ns(const gtime_t *t)
{
    if (!t->set || gtime_is_zero(t))
        return 0;
    if (t->sec >= INT64_MAX / NS_PER_S)
        return INT64_MAX;
    if (t->sec <= INT64_MIN / NS_PER_S)
        return INT64_MIN;
    return t->sec * NS_PER_S + t->nsec;
}

/* Go's IsZero: January 1, year 1, 00:00:00 UTC. */
static bool
gtime_is_zero(const gtime_t *t)
{
    return t->sec == days_from_civil(1, 1, 1) * 86400 && t->nsec == 0;
}

/* time.Time's UnmarshalJSON. */
static void
decode_time(dctx_t *d, const json_t *v, gtime_t *out)
{
    if (!json_is_string(v)) {
        fatal_err(d, "Time.UnmarshalJSON: input is not a JSON string");
        return;
    }
    const char *s = json_string_value(v);
    gtime_t t = {0};
    if (!parse_rfc3339(s, &t)) {
        fatal_err(d,
                  "parsing time \"%s\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"%s\" as "
                  "\"2006\"",
                  s, s);
        return;
    }
    *out = t;
}

typedef struct enumtab {
    const char *text;
    int64_t v;
} enumtab_t;

static const enumtab_t deliver_tab[] = {
    {"all", DP_ALL},
    {"undefined", DP_ALL},
    {"last", DP_LAST},
    {"last_per_subject", DP_LAST_PER},
    {"new", DP_NEW},
    {"by_start_sequence", DP_START_SEQ},
    {"by_start_time", DP_START_TIME},
    {NULL, 0},
};
static const enumtab_t ack_tab[] = {
    {"none", AP_NONE}, {"all", AP_ALL}, {"explicit", AP_EXPLICIT}, {NULL, 0}};
static const enumtab_t replay_tab[] = {
    {"instant", RP_INSTANT}, {"original", RP_ORIGINAL}, {NULL, 0}};
static const enumtab_t prio_tab[] = {
    {"overflow", PP_OVERFLOW}, {"pinned_client", PP_PINNED}, {"none", PP_NONE}, {NULL, 0}};
static const enumtab_t action_tab[] = {
    {"create", ACT_CREATE}, {"update", ACT_UPDATE}, {"", ACT_CREATE_OR_UPDATE}, {NULL, 0}};

/* An enum's UnmarshalJSON: matches the quoted string exactly; anything else (null included,
 * which Go hands to the method) is its error, which ends decoding. */
static void
decode_enum(dctx_t *d, const field_t *f, const json_t *v, int64_t *out)
{
    const enumtab_t *t = f->kind == K_DELIVER  ? deliver_tab
                         : f->kind == K_ACK    ? ack_tab
                         : f->kind == K_REPLAY ? replay_tab
                         : f->kind == K_PRIO   ? prio_tab
                                               : action_tab;
    if (json_is_string(v))
        for (; t->text; t++)
            if (!strcmp(t->text, json_string_value(v))) {
                *out = t->v;
                return;
            }
    char raw[300], q[320];
    raw_text(d, v, raw, sizeof raw);
    if (f->kind == K_PRIO)
        fatal_err(d, "unknown priority policy: %s", raw);
    else if (f->kind == K_ACTION)
        fatal_err(d, "unknown consumer action: %s", raw);
    else {
        go_quote(raw, q, sizeof q);
        fatal_err(d, "can not unmarshal %s", q);
    }
}

static void decode_struct(dctx_t *d, const sdesc_t *sd, void *base, json_t *obj, const char *path);

static void
decode_field(dctx_t *d, const sdesc_t *sd, void *base, const field_t *f, json_t *v,
             const char *path)
{
    if (json_is_null(v)) {
        switch (f->kind) {
        case K_DELIVER:
        case K_ACK:
        case K_REPLAY:
        case K_PRIO:
        case K_ACTION:
            decode_enum(d, f, v, AT(base, f->off, int64_t));
            return;
        case K_STRS:
        case K_DURS:
        case K_MAP:
        case K_TIME:
            field_free(f, base);
            return;
        default:
            return;
        }
    }
    switch (f->kind) {
    case K_STR:
        if (!json_is_string(v)) {
            type_err(d, nd_apijson_kind(v), sd->goname, path, f->gotype);
            return;
        }
        nd_free(*AT(base, f->off, char *));
        *AT(base, f->off, char *) = nd_xstrdup(json_string_value(v));
        return;
    case K_INT:
    case K_DUR:
        decode_int(d, v, sd->goname, path, f->gotype, false, AT(base, f->off, int64_t), NULL);
        return;
    case K_U64:
        decode_int(d, v, sd->goname, path, f->gotype, true, NULL, AT(base, f->off, uint64_t));
        return;
    case K_BOOL:
        if (!json_is_boolean(v)) {
            type_err(d, nd_apijson_kind(v), sd->goname, path, f->gotype);
            return;
        }
        *AT(base, f->off, bool) = json_is_true(v);
        return;
    case K_DELIVER:
    case K_ACK:
    case K_REPLAY:
    case K_PRIO:
    case K_ACTION:
        decode_enum(d, f, v, AT(base, f->off, int64_t));
        return;
    case K_TIME:
        decode_time(d, v, AT(base, f->off, gtime_t));
        return;
    case K_STRS: {
        if (!json_is_array(v)) {
            type_err(d, nd_apijson_kind(v), sd->goname, path, f->gotype);
            return;
        }
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
        return;
    }
    case K_DURS: {
        if (!json_is_array(v)) {
            type_err(d, nd_apijson_kind(v), sd->goname, path, f->gotype);
            return;
        }
        field_free(f, base);
        size_t n = json_array_size(v);
        int64_t *out = nd_xcalloc(n ? n : 1, sizeof *out);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(v, i);
            if (!json_is_null(e))
                decode_int(d, e, sd->goname, path, "time.Duration", false, &out[i], NULL);
        }
        *AT(base, f->off, int64_t *) = out;
        *AT(base, f->noff, size_t) = n;
        return;
    }
    case K_MAP: {
        if (!json_is_object(v)) {
            type_err(d, nd_apijson_kind(v), sd->goname, path, f->gotype);
            return;
        }
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
        return;
    }
    case K_CFG:
        if (!json_is_object(v)) {
            type_err(d, nd_apijson_kind(v), sd->goname, path, f->gotype);
            return;
        }
        decode_struct(d, &cons_d, AT(base, f->off, gcons_t), v, path);
        return;
    }
}

static void
decode_struct(dctx_t *d, const sdesc_t *sd, void *base, json_t *obj, const char *path)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        if (d->fatal)
            return;
        const field_t *f = NULL;
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
        char p[256];
        if (path)
            snprintf(p, sizeof p, "%s.%s", path, f->name);
        else
            snprintf(p, sizeof p, "%s", f->name);
        decode_field(d, sd, base, f, v, p);
    }
}

/* Decodes root (a CreateConsumerRequest when req, else a bare ConsumerConfig) into g/r.
 * Returns: false with d->err. */
static bool
decode_root(dctx_t *d, json_t *root, const sdesc_t *sd, void *base)
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
enum_text(kind_t k, int64_t v)
{
    static const char *const dp[] = {
        "all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"};
    switch (k) {
    case K_DELIVER:
        return v >= 0 && v <= DP_LAST_PER ? dp[v] : "undefined";
    case K_ACK:
        return v == AP_NONE ? "none" : v == AP_ALL ? "all" : "explicit";
    case K_REPLAY:
        return v == RP_ORIGINAL ? "original" : "instant";
    default:
        return v == PP_OVERFLOW ? "overflow" : v == PP_PINNED ? "pinned_client" : "none";
    }
}

/* Go's RFC3339Nano of a time in the zone it was written with (Z for offset 0). */
static json_t *
time_json(const gtime_t *t)
{
    char buf[80], frac[16] = "", zone[8] = "Z";
    int64_t local = t->sec + t->off_s;
    int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
    int64_t sod = local - days * 86400, y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (t->nsec) {
        snprintf(frac, sizeof frac, ".%09d", (int)t->nsec);
        size_t n = strlen(frac);
        while (n > 1 && frac[n - 1] == '0')
            frac[--n] = '\0';
    }
    if (t->off_s) {
        int o = t->off_s < 0 ? -t->off_s : t->off_s;
        snprintf(zone, sizeof zone, "%c%02d:%02d", t->off_s < 0 ? '-' : '+', (o / 3600) % 100,
                 (o % 3600) / 60);
    }
    snprintf(buf, sizeof buf, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d%s%s", y, m, d,
             (int)(sod / 3600), (int)(sod % 3600 / 60), (int)(sod % 60), frac, zone);
    return json_string(buf);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_t *
encode_cfg(const gcons_t *g)
{
    json_t *o = json_object();
    for (size_t i = 0; i < cons_d.nf; i++) {
        const field_t *f = &cons_d.f[i];
        json_t *v = NULL;
        switch (f->kind) {
        case K_STR: {
            const char *s = *CAT(g, f->off, char *);
            if (f->omitempty && (!s || !*s))
                continue;
            v = json_string(s ? s : "");
            break;
        }
        case K_INT:
        case K_DUR: {
            int64_t x = *CAT(g, f->off, int64_t);
            if (f->omitempty && x == 0)
                continue;
            v = json_integer(x);
            break;
        }
        case K_U64: {
            uint64_t x = *CAT(g, f->off, uint64_t);
            if (f->omitempty && x == 0)
                continue;
            v = json_integer((json_int_t)(x > INT64_MAX ? INT64_MAX : x));
            break;
        }
        case K_BOOL: {
            bool b = *CAT(g, f->off, bool);
            if (f->omitempty && !b)
                continue;
            v = json_boolean(b);
            break;
        }
        case K_DELIVER:
        case K_ACK:
        case K_REPLAY:
        case K_PRIO: {
            int64_t x = *CAT(g, f->off, int64_t);
            if (f->omitempty && x == 0)
                continue;
            v = json_string(enum_text(f->kind, x));
            break;
        }
        case K_TIME: {
            const gtime_t *t = CAT(g, f->off, gtime_t);
            if (!t->set)
                continue;
            v = time_json(t);
            break;
        }
        case K_STRS: {
            char *const *s = *(char **const *)((const char *)g + f->off);
            size_t n = *CAT(g, f->noff, size_t);
            if (n == 0)
                continue;
            v = json_array();
            for (size_t j = 0; j < n; j++)
                json_array_append_new(v, json_string(s[j]));
            break;
        }
        case K_DURS: {
            const int64_t *s = *CAT(g, f->off, int64_t *);
            size_t n = *CAT(g, f->noff, size_t);
            if (n == 0)
                continue;
            v = json_array();
            for (size_t j = 0; j < n; j++)
                json_array_append_new(v, json_integer(s[j]));
            break;
        }
        case K_MAP: {
            json_t *m = *(json_t *const *)((const char *)g + f->off);
            if (!m || json_object_size(m) == 0)
                continue;
            /* Go writes a map's keys sorted. */
            size_t n = json_object_size(m), j = 0;
            const char **keys = nd_xcalloc(n, sizeof *keys);
            const char *k;
            json_t *e;
            json_object_foreach(m, k, e) keys[j++] = k;
            qsort(keys, n, sizeof *keys, cmp_str);
            v = json_object();
            for (j = 0; j < n; j++)
                json_object_set(v, keys[j], json_object_get(m, keys[j]));
            nd_free(keys);
            break;
        }
        case K_ACTION:
        case K_CFG:
            continue;
        }
        json_object_set_new(o, f->name, v);
    }
    return o;
}

/* ---- Helpers ----------------------------------------------------------------------------- */

static bool
empty(const char *s)
{
    return !s || !*s;
}

static bool
streq(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

/* nats-server's isValidName. */
static bool
valid_name(const char *s)
{
    return s && *s && !strpbrk(s, " \t\r\n\f.*>");
}

static bool
valid_sub(const char *s)
{
    return s && nd_subj_valid_sub(s, strlen(s));
}


static bool
set0(nd_jserr_t *err, nd_jse_t e)
{
    return nd_jserr_set(err, e, (const char *)NULL);
}

static bool
with_err(nd_jserr_t *err, nd_jse_t e, const char *text)
{
    return nd_jserr_set(err, e, "err", text, (const char *)NULL);
}

static bool
limit_err(nd_jserr_t *err, nd_jse_t e, const char *limit)
{
    return nd_jserr_set(err, e, "limit", limit, (const char *)NULL);
}

/* The stream's consumer_limits (StreamConsumerLimits) from its canonical JSON. */
static void
stream_limits(const nd_consumer_cfg_env_t *env, int64_t *max_ack_pending, int64_t *inactive)
{
    *max_ack_pending = *inactive = 0;
    if (!env->stream || !env->stream->json)
        return;
    json_t *cl = json_object_get(env->stream->json, "consumer_limits");
    *max_ack_pending = json_integer_value(json_object_get(cl, "max_ack_pending"));
    *inactive = json_integer_value(json_object_get(cl, "inactive_threshold"));
}

/* The filters a consumer selects on: filter_subject or filter_subjects. */
static char *const *
gather_filters(const gcons_t *c, size_t *n)
{
    if (!empty(c->filter_subject)) {
        *n = 1;
        return &c->filter_subject;
    }
    *n = c->nfilter_subjects;
    return c->filter_subjects;
}

/* setStaticConsumerMetadata: the API level the config requires, and no dynamic keys. */
static void
set_static_metadata(gcons_t *g)
{
    if (!g->metadata)
        g->metadata = json_object();
    json_object_del(g->metadata, "_nats.ver");
    json_object_del(g->metadata, "_nats.level");
    bool l1 = (g->pause_until.set && !gtime_is_zero(&g->pause_until)) ||
              g->priority_policy != PP_NONE || g->pinned_ttl != 0 || g->npriority_groups > 0;
    json_object_set_new(g->metadata, REQ_LEVEL_KEY, json_string(l1 ? "1" : "0"));
}

/* ---- setConsumerConfigDefaults ----------------------------------------------------------- */

static bool
set_defaults(gcons_t *c, const nd_consumer_cfg_env_t *env, bool pedantic, nd_jserr_t *err)
{
    int64_t sl_map, sl_inactive;
    stream_limits(env, &sl_map, &sl_inactive);
    bool acks = c->ack_policy == AP_EXPLICIT || c->ack_policy == AP_ALL;

    if (empty(c->deliver_subject) && c->max_waiting == 0)
        c->max_waiting = DEFAULT_MAX_WAITING;
    if (c->ack_wait == 0 && acks)
        c->ack_wait = DEFAULT_ACK_WAIT;
    if (c->max_deliver == 0)
        c->max_deliver = -1;
    if (c->nbackoff > 0) {
        if (pedantic && c->ack_wait != c->backoff[0])
            return with_err(err, ND_JSE_PEDANTIC_F,
                            "first backoff value has to equal batch AckWait");
        c->ack_wait = c->backoff[0];
    }
    if (c->max_ack_pending == 0) {
        if (pedantic && sl_map > 0)
            return with_err(err, ND_JSE_PEDANTIC_F,
                            "max_ack_pending must be set if it's configured in stream limits");
        c->max_ack_pending = sl_map;
    }
    if (c->inactive_threshold == 0) {
        if (pedantic && sl_inactive > 0)
            return with_err(err, ND_JSE_PEDANTIC_F,
                            "inactive_threshold must be set if it's configured in stream limits");
        c->inactive_threshold = sl_inactive;
    }
    if (acks && c->max_ack_pending == 0) {
        int64_t p = DEFAULT_MAX_ACK_PEND;
        if (env->max_ack_pending > 0 && env->max_ack_pending < p)
            p = env->max_ack_pending;
        c->max_ack_pending = p;
    }
    if (empty(c->deliver_subject) && c->max_batch == 0 && env->max_request_batch > 0) {
        if (pedantic)
            return with_err(err, ND_JSE_PEDANTIC_F,
                            "max_request_batch must be set if it's JetStream limits are set");
        c->max_batch = env->max_request_batch;
    }
    if (c->priority_policy == PP_PINNED && c->pinned_ttl == 0)
        c->pinned_ttl = DEFAULT_PINNED_TTL;
    return true;
}

/* ---- checkConsumerCfg -------------------------------------------------------------------- */

/* strconv.Atoi's error text for s, or "" when it parses (*out set). */
static void
go_atoi(const char *s, int64_t *out, char *e, size_t elen)
{
    char q[80];
    const char *p = s;
    bool neg = false;
    e[0] = '\0';
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    bool syntax = !*p || strspn(p, "0123456789") != strlen(p);
    uint64_t v = 0;
    bool range = false;
    for (; !syntax && *p; p++) {
        if (v > (UINT64_MAX - 9) / 10) {
            range = true;
            break;
        }
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (!syntax && !range)
        range = neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX;
    if (syntax || range) {
        go_quote(s, q, sizeof q);
        snprintf(e, elen, "strconv.Atoi: parsing %s: %s", q,
                 syntax ? "invalid syntax" : "value out of range");
        return;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
}

static bool
valid_group(const char *g)
{
    size_t n = strlen(g);
    if (n < 1 || n > 16)
        return false;
    for (const char *p = g; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("/_=-", *p)))
            return false;
    return true;
}

static bool
invalid_policy(nd_jserr_t *err, const char *fmt, const char *dp, const char *what)
{
    char t[200];
    snprintf(t, sizeof t, fmt, dp, what);
    return with_err(err, ND_JSE_CONSUMER_INVALID_POLICY_F, t);
}

#define BAD_START "consumer delivery policy is deliver %s, but optional start %s is also set"
#define NOT_SET   "consumer delivery policy is deliver %s, but optional %s is not set"

static bool
check_cfg(const gcons_t *c, const nd_consumer_cfg_env_t *env, bool recovering, nd_jserr_t *err)
{
    const nd_stream_cfg_t *st = env->stream;
    int st_replicas = st ? st->num_replicas : 1;
    nd_retention_t ret = st ? st->retention : ND_RETENTION_LIMITS;
    int64_t sl_map, sl_inactive;
    stream_limits(env, &sl_map, &sl_inactive);
    bool push = !empty(c->deliver_subject);

    if (c->replicas > 0 && c->replicas > st_replicas)
        return set0(err, ND_JSE_CONSUMER_REPLICAS_EXCEEDS_STREAM);
    if (c->replicas < 0)
        return set0(err, ND_JSE_REPLICAS_COUNT_CANNOT_BE_NEGATIVE);
    if ((ret == ND_RETENTION_INTEREST || ret == ND_RETENTION_WORKQUEUE) && !recovering &&
        c->replicas != 0 && c->replicas != st_replicas)
        return set0(err, ND_JSE_CONSUMER_REPLICAS_SHOULD_MATCH_STREAM);
    if (c->nbackoff > 0 && c->max_deliver != -1 && (int64_t)c->nbackoff > c->max_deliver)
        return set0(err, ND_JSE_CONSUMER_MAX_DELIVER_BACKOFF);
    if (c->description && strlen(c->description) > MAX_DESC_LEN)
        return nd_jserr_set(err, ND_JSE_CONSUMER_DESCRIPTION_TOO_LONG_F, "max", "4096",
                            (const char *)NULL);

    if (push) {
        const char *ds = c->deliver_subject;
        size_t dl = strlen(ds);
        if (!nd_subj_is_literal(ds, dl))
            return set0(err, ND_JSE_CONSUMER_DELIVER_TO_WILDCARDS);
        if (!nd_subj_valid_sub(ds, dl))
            return set0(err, ND_JSE_CONSUMER_INVALID_DELIVER_SUBJECT);
        for (size_t i = 0; st && i < st->nsubjects; i++)
            if (nd_subj_subset(ds, dl, st->subjects[i], strlen(st->subjects[i])))
                return set0(err, ND_JSE_CONSUMER_DELIVER_CYCLE);
        if (c->max_waiting != 0)
            return set0(err, ND_JSE_CONSUMER_PUSH_MAX_WAITING);
        if (c->max_ack_pending > 0 && c->ack_policy == AP_NONE)
            return set0(err, ND_JSE_CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED);
        if (c->heartbeat > 0 && c->heartbeat < 100 * NS_PER_MS)
            return set0(err, ND_JSE_CONSUMER_SMALL_HEARTBEAT);
    } else {
        if (c->ack_policy == AP_NONE && ret == ND_RETENTION_WORKQUEUE)
            return set0(err, ND_JSE_CONSUMER_PULL_REQUIRES_ACK);
        if (c->rate_limit > 0)
            return set0(err, ND_JSE_CONSUMER_PULL_WITH_RATE_LIMIT);
        if (c->max_waiting < 0)
            return set0(err, ND_JSE_CONSUMER_MAX_WAITING_NEGATIVE);
        if (c->heartbeat > 0)
            return set0(err, ND_JSE_CONSUMER_HB_REQUIRES_PUSH);
        if (c->flow_control)
            return set0(err, ND_JSE_CONSUMER_FC_REQUIRES_PUSH);
        if (c->max_batch < 0)
            return set0(err, ND_JSE_CONSUMER_MAX_REQUEST_BATCH_NEGATIVE);
        if (c->max_expires != 0 && c->max_expires < NS_PER_MS)
            return set0(err, ND_JSE_CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL);
        if (env->max_request_batch > 0 && c->max_batch > env->max_request_batch) {
            char l[32];
            snprintf(l, sizeof l, "%" PRId64, env->max_request_batch);
            return limit_err(err, ND_JSE_CONSUMER_MAX_REQUEST_BATCH_EXCEEDED_F, l);
        }
    }
    char l[48];
    if (env->max_ack_pending > 0 && c->max_ack_pending > env->max_ack_pending) {
        snprintf(l, sizeof l, "%" PRId64, env->max_ack_pending);
        return limit_err(err, ND_JSE_CONSUMER_MAX_PENDING_ACK_EXCESS_F, l);
    }
    if (sl_map > 0 && c->max_ack_pending > sl_map) {
        snprintf(l, sizeof l, "%" PRId64, sl_map);
        return limit_err(err, ND_JSE_CONSUMER_MAX_PENDING_ACK_EXCESS_F, l);
    }
    if (sl_inactive > 0 && c->inactive_threshold > sl_inactive) {
        nd_time_go_duration(l, sizeof l, sl_inactive);
        return limit_err(err, ND_JSE_CONSUMER_INACTIVE_THRESHOLD_EXCESS, l);
    }
    if (env->inactive_threshold_max > 0 && c->inactive_threshold > env->inactive_threshold_max) {
        nd_time_go_duration(l, sizeof l, env->inactive_threshold_max);
        return limit_err(err, ND_JSE_CONSUMER_INACTIVE_THRESHOLD_EXCESS, l);
    }

    if (c->direct) {
        if (!push)
            return set0(err, ND_JSE_CONSUMER_DIRECT_REQUIRES_PUSH);
        if (!empty(c->durable))
            return set0(err, ND_JSE_CONSUMER_DIRECT_REQUIRES_EPHEMERAL);
    }

    if (!empty(c->filter_subject) && c->nfilter_subjects > 0)
        return set0(err, ND_JSE_CONSUMER_DUPLICATE_FILTER_SUBJECTS);
    if (!empty(c->filter_subject) && !valid_sub(c->filter_subject))
        return with_err(err, ND_JSE_STREAM_INVALID_CONFIG_F, "invalid subject");
    for (size_t i = 0; i < c->nfilter_subjects; i++)
        if (empty(c->filter_subjects[i]))
            return set0(err, ND_JSE_CONSUMER_EMPTY_FILTER);
    size_t nf;
    char *const *fs = gather_filters(c, &nf);
    for (size_t i = 0; i < nf; i++) {
        if (!valid_sub(fs[i]))
            return with_err(err, ND_JSE_STREAM_INVALID_CONFIG_F, "invalid subject");
        for (size_t j = 0; j < nf; j++)
            if (i != j && nd_subjects_overlap(fs[i], fs[j]))
                return set0(err, ND_JSE_CONSUMER_OVERLAPPING_SUBJECT_FILTERS);
    }

    bool seq = c->opt_start_seq > 0, tm = c->opt_start_time.set;
    switch (c->deliver_policy) {
    case DP_ALL:
    case DP_LAST:
    case DP_NEW:
    case DP_LAST_PER: {
        const char *dp = c->deliver_policy == DP_ALL    ? "all"
                         : c->deliver_policy == DP_LAST ? "last"
                         : c->deliver_policy == DP_NEW  ? "new"
                                                        : "last per subject";
        if (seq)
            return invalid_policy(err, BAD_START, dp, "sequence");
        if (tm)
            return invalid_policy(err, BAD_START, dp, "time");
        if (c->deliver_policy == DP_LAST_PER && nf == 0)
            return invalid_policy(err, NOT_SET, dp, "filter subject");
        break;
    }
    case DP_START_SEQ:
        if (!seq)
            return invalid_policy(err, NOT_SET, "by start sequence", "start sequence");
        if (tm)
            return invalid_policy(err, BAD_START, "by start sequence", "time");
        break;
    case DP_START_TIME:
        if (!tm)
            return invalid_policy(err, NOT_SET, "by start time", "start time");
        if (seq)
            return invalid_policy(err, BAD_START, "by start time", "start sequence");
        break;
    }

    if (!empty(c->sample_freq)) {
        char s[256], e[320];
        snprintf(s, sizeof s, "%s", c->sample_freq);
        size_t n = strlen(s);
        if (n > 0 && s[n - 1] == '%')
            s[n - 1] = '\0';
        int64_t v = 0;
        go_atoi(s, &v, e, sizeof e);
        if (e[0])
            return nd_jserr_set(err, ND_JSE_CONSUMER_INVALID_SAMPLING_F, "err", e,
                                (const char *)NULL);
        if (v < 0) /* Go formats the nil error */
            return nd_jserr_set(err, ND_JSE_CONSUMER_INVALID_SAMPLING_F, "err", "<nil>",
                                (const char *)NULL);
    }
    if (c->flow_control && c->heartbeat == 0)
        return set0(err, ND_JSE_CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS);
    if (!empty(c->durable) && !empty(c->name) && strcmp(c->durable, c->name))
        return set0(err, ND_JSE_CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH);

    size_t mdlen = 0;
    if (c->metadata) {
        const char *k;
        json_t *v;
        json_object_foreach(c->metadata, k, v) mdlen += strlen(k) + strlen(json_string_value(v));
    }
    if (mdlen > MAX_METADATA_LEN)
        return limit_err(err, ND_JSE_CONSUMER_METADATA_LENGTH_F, "128KB");

    if (c->priority_policy != PP_NONE) {
        if (push)
            return set0(err, ND_JSE_CONSUMER_PUSH_WITH_PRIORITY_GROUP);
        if (c->npriority_groups == 0)
            return set0(err, ND_JSE_CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP);
        for (size_t i = 0; i < c->npriority_groups; i++) {
            if (empty(c->priority_groups[i]))
                return set0(err, ND_JSE_CONSUMER_EMPTY_GROUP_NAME);
            if (!valid_group(c->priority_groups[i]))
                return set0(err, ND_JSE_CONSUMER_INVALID_GROUP_NAME);
        }
    }
    return true;
}

/* The name checks of addConsumerWithAssignment (plus length and path separators for every
 * name, see the top of the file). An unnamed ephemeral passes: its caller names it. */
static bool
check_name(const gcons_t *c, nd_jserr_t *err)
{
    const char *n = !empty(c->durable) ? c->durable : c->name;
    if (empty(n))
        return true;
    if (strlen(n) > MAX_NAME_LEN)
        return nd_jserr_set(err, ND_JSE_CONSUMER_NAME_TOO_LONG_F, "max", "255", (const char *)NULL);
    if (!valid_name(n))
        return set0(err, ND_JSE_CONSUMER_BAD_DURABLE_NAME);
    if (strpbrk(n, "\\/"))
        return set0(err, ND_JSE_CONSUMER_NAME_CONTAINS_PATH_SEPARATORS);
    return true;
}

/* ---- The public struct ------------------------------------------------------------------- */

static char **
strs_dup(char *const *v, size_t n)
{
    char **o = nd_xcalloc(n ? n : 1, sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = nd_xstrdup(v[i] ? v[i] : "");
    return o;
}

static char *
dup_or_null(const char *s)
{
    return empty(s) ? NULL : nd_xstrdup(s);
}

static void
fill_public(nd_consumer_cfg_t *out, const gcons_t *g)
{
    memset(out, 0, sizeof *out);
    out->json = encode_cfg(g);
    out->durable = !empty(g->durable);
    out->name = dup_or_null(out->durable ? g->durable : g->name);
    out->deliver_policy = (nd_deliver_policy_t)g->deliver_policy;
    out->opt_start_seq = g->opt_start_seq;
    out->opt_start_time_ns = gtime_ns(&g->opt_start_time);
    out->ack_policy = g->ack_policy == AP_ALL        ? ND_ACK_ALL
                      : g->ack_policy == AP_EXPLICIT ? ND_ACK_EXPLICIT
                                                     : ND_ACK_NONE;
    out->ack_wait_ns = g->ack_wait;
    out->max_deliver = g->max_deliver;
    out->nbackoff = g->nbackoff;
    out->backoff_ns = nd_xcalloc(g->nbackoff ? g->nbackoff : 1, sizeof *out->backoff_ns);
    if (g->nbackoff)
        memcpy(out->backoff_ns, g->backoff, g->nbackoff * sizeof *g->backoff);
    size_t nf;
    char *const *fs = gather_filters(g, &nf);
    out->filters = strs_dup(fs, nf);
    out->nfilters = nf;
    out->replay_policy = g->replay_policy == RP_ORIGINAL ? ND_REPLAY_ORIGINAL : ND_REPLAY_INSTANT;
    out->rate_limit_bps = g->rate_limit;
    if (!empty(g->sample_freq)) {
        int64_t v = 0;
        char e[160];
        char s[64];
        snprintf(s, sizeof s, "%s", g->sample_freq);
        size_t n = strlen(s);
        if (n && s[n - 1] == '%')
            s[n - 1] = '\0';
        go_atoi(s, &v, e, sizeof e);
        out->sample_freq = v > 100 ? 100 : v < 0 ? 0 : (int)v;
    }
    out->max_waiting = g->max_waiting;
    out->max_ack_pending = g->max_ack_pending;
    out->flow_control = g->flow_control;
    out->idle_heartbeat_ns = g->heartbeat;
    out->headers_only = g->headers_only;
    out->max_batch = g->max_batch;
    out->max_bytes = g->max_bytes;
    out->max_expires_ns = g->max_expires;
    out->deliver_subject = dup_or_null(g->deliver_subject);
    out->deliver_group = dup_or_null(g->deliver_group);
    out->inactive_threshold_ns = g->inactive_threshold;
    out->num_replicas = (int)g->replicas;
    out->mem_storage = g->mem_storage;
    out->pause_until_ns = gtime_ns(&g->pause_until);
    out->priority_groups = strs_dup(g->priority_groups, g->npriority_groups);
    out->npriority_groups = g->npriority_groups;
    out->priority_policy = g->priority_policy == PP_OVERFLOW ? ND_PRIO_OVERFLOW
                           : g->priority_policy == PP_PINNED ? ND_PRIO_PINNED
                                                             : ND_PRIO_NONE;
    out->priority_timeout_ns = g->pinned_ttl;
}

/* Decodes a canonical config (already checked) back into g, without checks. */
static void
decode_canonical(const json_t *j, gcons_t *g)
{
    dctx_t d = {0};
    memset(g, 0, sizeof *g);
    decode_root(&d, (json_t *)j, &cons_d, g);
}

/* ---- Parsing ----------------------------------------------------------------------------- */

static const nd_consumer_cfg_env_t defenv = {0};

/* Defaults, checks and names common to a create request and a recovered config. */
static bool
finish(gcons_t *g, const nd_consumer_cfg_env_t *env, bool pedantic, bool recovering,
       nd_consumer_cfg_t *out, nd_jserr_t *err)
{
    if (!set_defaults(g, env, pedantic, err))
        return false;
    if (!check_cfg(g, env, recovering, err))
        return false;
    if (!check_name(g, err))
        return false;
    /* Ephemerals always have an inactive threshold (updateInactiveThreshold). */
    if (empty(g->durable) && g->inactive_threshold <= 0)
        g->inactive_threshold = DEFAULT_INACTIVE;
    fill_public(out, g);
    return true;
}

static bool
parse_req(json_t *root, const nd_apijson_t *aj, const char *subj_stream, const char *subj_name,
          const char *subj_filter, bool legacy_durable, const nd_consumer_cfg_env_t *env,
          nd_consumer_req_t *out, nd_jserr_t *err)
{
    dctx_t d = {.aj = aj, .strict = env->strict};
    greq_t r;
    memset(&r, 0, sizeof r);
    bool ok = false;
    gcons_t *c = &r.cfg;
    if (!decode_root(&d, root, &req_d, &r)) {
        with_err(err, ND_JSE_INVALID_JSON, d.err);
        goto done;
    }
    if (subj_stream && !streq(subj_stream, r.stream)) {
        set0(err, ND_JSE_STREAM_MISMATCH);
        goto done;
    }
    if (!empty(subj_name) && strpbrk(subj_name, "\\/")) {
        set0(err, ND_JSE_CONSUMER_NAME_CONTAINS_PATH_SEPARATORS);
        goto done;
    }
    if (legacy_durable) {
        if (empty(subj_name)) {
            set0(err, ND_JSE_CONSUMER_DURABLE_NAME_NOT_IN_SUBJECT);
            goto done;
        }
        if (empty(c->durable)) {
            set0(err, ND_JSE_CONSUMER_DURABLE_NAME_NOT_SET);
            goto done;
        }
        if (strcmp(subj_name, c->durable)) {
            set0(err, ND_JSE_CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT);
            goto done;
        }
    } else if (!empty(subj_name)) {
        if (!empty(c->durable) && strcmp(subj_name, c->durable)) {
            set0(err, ND_JSE_CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT);
            goto done;
        }
        nd_free(c->name);
        c->name = nd_xstrdup(subj_name);
    } else if (!empty(c->durable)) {
        set0(err, ND_JSE_CONSUMER_EPHEMERAL_WITH_DURABLE_NAME);
        goto done;
    }
    if (!empty(subj_filter) && c->nfilter_subjects != 0) {
        set0(err, ND_JSE_CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED);
        goto done;
    }
    if (!empty(subj_filter) && !streq(subj_filter, c->filter_subject)) {
        set0(err, ND_JSE_CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH);
        goto done;
    }
    if (!env->clustered && c->replicas > 1) {
        set0(err, ND_JSE_STREAM_REPLICAS_NOT_SUPPORTED);
        goto done;
    }
    set_static_metadata(c);
    bool pedantic = r.pedantic || env->pedantic;
    if (!finish(c, env, pedantic, false, &out->cfg, err))
        goto done;
    out->action = r.action == ACT_CREATE   ? ND_CACTION_CREATE
                  : r.action == ACT_UPDATE ? ND_CACTION_UPDATE
                                           : ND_CACTION_CREATE_OR_UPDATE;
    out->pedantic = r.pedantic;
    ok = true;
done:
    nd_free(r.stream);
    gcons_free(c);
    return ok;
}

bool
nd_consumer_req_parse(const char *body, size_t len, const char *subj_stream, const char *subj_name,
                      const char *subj_filter, bool legacy_durable,
                      const nd_consumer_cfg_env_t *env, nd_consumer_req_t *out, nd_jserr_t *err)
{
    nd_apijson_t aj;
    char e[300];
    if (!env)
        env = &defenv;
    memset(out, 0, sizeof *out);
    size_t blank = 0;
    while (body != NULL && blank < len && (body[blank] == ' ' || body[blank] == '\t' ||
                                           body[blank] == '\r' || body[blank] == '\n'))
        blank++;
    if (body == NULL || blank == len) /* Go's json.Unmarshal of nothing */
        return with_err(err, ND_JSE_INVALID_JSON, "unexpected end of JSON input");
    if (!nd_apijson_parse(body, len, env->strict, &aj, e, sizeof e))
        return with_err(err, ND_JSE_INVALID_JSON, e);
    bool ok =
        parse_req(aj.root, &aj, subj_stream, subj_name, subj_filter, legacy_durable, env, out, err);
    nd_apijson_free(&aj);
    return ok;
}

void
nd_consumer_req_free(nd_consumer_req_t *r)
{
    if (r)
        nd_consumer_cfg_free(&r->cfg);
}

bool
nd_consumer_cfg_from_json(const json_t *j, const nd_consumer_cfg_env_t *env, nd_consumer_cfg_t *out,
                          nd_jserr_t *err)
{
    if (!env)
        env = &defenv;
    memset(out, 0, sizeof *out);
    dctx_t d = {0};
    gcons_t g;
    memset(&g, 0, sizeof g);
    bool ok;
    if (!decode_root(&d, (json_t *)j, &cons_d, &g))
        ok = with_err(err, ND_JSE_INVALID_JSON, d.err);
    else
        ok = finish(&g, env, false, true, out, err);
    gcons_free(&g);
    return ok;
}

void
nd_consumer_cfg_set_name(nd_consumer_cfg_t *c, const char *name)
{
    gcons_t g;
    decode_canonical(c->json, &g);
    nd_free(g.name);
    g.name = nd_xstrdup(name ? name : "");
    json_decref(c->json);
    c->json = encode_cfg(&g);
    gcons_free(&g);
    if (!c->durable) {
        nd_free(c->name);
        c->name = dup_or_null(name);
    }
}

bool
nd_consumer_cfg_set_pause(nd_consumer_cfg_t *c, const char *until)
{
    gtime_t t = {0};
    if (until != NULL && !parse_rfc3339(until, &t))
        return false;
    gcons_t g;
    decode_canonical(c->json, &g);
    if (until == NULL || gtime_is_zero(&t)) {
        g.pause_until = (gtime_t){0};
    } else {
        t.off_s = 0; /* kept in UTC, as nats-server does */
        g.pause_until = t;
    }
    set_static_metadata(&g);
    json_decref(c->json);
    c->json = encode_cfg(&g);
    c->pause_until_ns = gtime_ns(&g.pause_until);
    gcons_free(&g);
    return true;
}

/* ---- Comparing and updating -------------------------------------------------------------- */

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
nd_consumer_cfg_equal(const nd_consumer_cfg_t *a, const nd_consumer_cfg_t *b)
{
    json_t *x = without_nats_metadata(a->json), *y = without_nats_metadata(b->json);
    bool eq = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return eq;
}

static bool
update_err(nd_jserr_t *err, const char *text)
{
    return with_err(err, ND_JSE_CONSUMER_CREATE_F, text);
}

bool
nd_consumer_cfg_check_update(const nd_consumer_cfg_t *old, const nd_consumer_cfg_t *upd,
                             nd_jserr_t *err)
{
    if (json_equal(old->json, upd->json))
        return true;
    if (old->deliver_policy != upd->deliver_policy)
        return update_err(err, "deliver policy can not be updated");
    if (old->opt_start_seq != upd->opt_start_seq)
        return update_err(err, "start sequence can not be updated");
    bool ot = json_object_get(old->json, "opt_start_time") != NULL;
    bool nt = json_object_get(upd->json, "opt_start_time") != NULL;
    if (ot != nt || (ot && old->opt_start_time_ns != upd->opt_start_time_ns))
        return update_err(err, "start time can not be updated");
    if (old->ack_policy != upd->ack_policy)
        return update_err(err, "ack policy can not be updated");
    if (old->replay_policy != upd->replay_policy)
        return update_err(err, "replay policy can not be updated");
    if (old->idle_heartbeat_ns != upd->idle_heartbeat_ns)
        return update_err(err, "heart beats can not be updated");
    if (old->flow_control != upd->flow_control)
        return update_err(err, "flow control can not be updated");
    if (!streq(old->deliver_subject, upd->deliver_subject)) {
        if (empty(old->deliver_subject))
            return update_err(err, "can not update pull consumer to push based");
        if (empty(upd->deliver_subject))
            return update_err(err, "can not update push consumer to pull based");
        /* A deliver subject that still has interest (10013) is the caller's check. */
    }
    if (old->max_waiting != upd->max_waiting)
        return update_err(err, "max waiting can not be updated");
    if (upd->nbackoff > 0 && upd->max_deliver != -1 && (int64_t)upd->nbackoff > upd->max_deliver)
        return set0(err, ND_JSE_CONSUMER_MAX_DELIVER_BACKOFF);
    return true;
}

/* Whether a filter of one consumer collides with a filter of another (partitionUnique). */
static bool
partition_unique(const nd_consumer_cfg_t *c, const nd_consumer_cfg_t *const *others, size_t n)
{
    for (size_t i = 0; i < c->nfilters; i++)
        for (size_t k = 0; k < n; k++) {
            const nd_consumer_cfg_t *o = others[k];
            if (!o || o == c)
                continue;
            if (o->nfilters == 0)
                return false;
            for (size_t j = 0; j < o->nfilters; j++)
                if (nd_subjects_overlap(c->filters[i], o->filters[j]))
                    return false;
        }
    return true;
}

bool
nd_consumer_cfg_check_workqueue(const nd_consumer_cfg_t *c, const nd_consumer_cfg_t *const *others,
                                size_t n, nd_jserr_t *err)
{
    if (json_is_true(json_object_get(c->json, "direct")))
        return true;
    if (c->ack_policy != ND_ACK_EXPLICIT)
        return set0(err, ND_JSE_CONSUMER_WQ_REQUIRES_EXPLICIT_ACK);
    if (n > 0) {
        if (c->nfilters == 0)
            return set0(err, ND_JSE_CONSUMER_WQ_MULTIPLE_UNFILTERED);
        if (!partition_unique(c, others, n))
            return set0(err, ND_JSE_CONSUMER_WQ_CONSUMER_NOT_UNIQUE);
    }
    if (c->deliver_policy != ND_DELIVER_ALL)
        return set0(err, ND_JSE_CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL);
    return true;
}

bool
nd_consumer_cfg_matches(const nd_consumer_cfg_t *c, const char *subj, size_t len)
{
    if (c->nfilters == 0)
        return true;
    for (size_t i = 0; i < c->nfilters; i++)
        if (nd_subj_match(c->filters[i], strlen(c->filters[i]), subj, len))
            return true;
    return false;
}

/* ---- The rest ---------------------------------------------------------------------------- */

void
nd_consumer_cfg_copy(nd_consumer_cfg_t *dst, const nd_consumer_cfg_t *src)
{
    gcons_t g;
    decode_canonical(src->json, &g);
    fill_public(dst, &g);
    gcons_free(&g);
    /* A config's JSON is never changed once built (every change builds a new tree), so copies
     * share it: a consumer holds three (its actor's, its stream's, its listings'). */
    json_decref(dst->json);
    dst->json = json_incref((json_t *)src->json);
}

void
nd_consumer_cfg_free(nd_consumer_cfg_t *c)
{
    if (!c)
        return;
    json_decref(c->json);
    nd_free(c->name);
    nd_free(c->backoff_ns);
    strs_free(c->filters, c->nfilters);
    nd_free(c->deliver_subject);
    nd_free(c->deliver_group);
    strs_free(c->priority_groups, c->npriority_groups);
    memset(c, 0, sizeof *c);
}
