/* A consumer's configuration: nats-server 2.11's ConsumerConfig decoded, defaulted, checked and
 * written back (consumer_cfg.h).
 *
 * As in stream_cfg.c, one table (js/gocfg.h) lists the Go struct's fields (ConsumerConfig, and
 * the request around it, CreateConsumerRequest) in the Go struct's order with their JSON names,
 * kinds and omitempty flags; gocfg.c decodes a body through it as Go's encoding/json does (the
 * policy enums, the action and time.Time have unmarshallers whose errors stop decoding) and
 * encodes the canonical JSON in nats-server's key order with Go's omitempty.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/apijson.h"
#include "js/gocfg.h"
#include "js/gotime.h"
#include "util/timefmt.h"
#include "subj/subject.h"

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

/* ---- The Go structs ---------------------------------------------------------------------- */

typedef struct gcons {
    char *durable, *name, *description;
    int64_t deliver_policy;
    uint64_t opt_start_seq;
    nd_gotime_t opt_start_time;
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
    nd_gotime_t pause_until;
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

/* The enums' texts as their UnmarshalJSON methods read them; the first of a value is the one
 * MarshalJSON writes. */
static const nd_gocfg_enumval_t deliver_v[] = {
    {"all", DP_ALL},
    {"undefined", DP_ALL},
    {"last", DP_LAST},
    {"last_per_subject", DP_LAST_PER},
    {"new", DP_NEW},
    {"by_start_sequence", DP_START_SEQ},
    {"by_start_time", DP_START_TIME},
};
static const nd_gocfg_enumval_t ack_v[] = {
    {"none", AP_NONE}, {"all", AP_ALL}, {"explicit", AP_EXPLICIT}};
static const nd_gocfg_enumval_t replay_v[] = {{"instant", RP_INSTANT}, {"original", RP_ORIGINAL}};
static const nd_gocfg_enumval_t prio_v[] = {
    {"overflow", PP_OVERFLOW}, {"pinned_client", PP_PINNED}, {"none", PP_NONE}};
static const nd_gocfg_enumval_t action_v[] = {
    {"create", ACT_CREATE}, {"update", ACT_UPDATE}, {"", ACT_CREATE_OR_UPDATE}};

#define ENUM(v, text, e, u)                                                                        \
    {                                                                                              \
        .vals = v, .nvals = ND_GOCFG_NF(v), .other = text, .err = e, .unknown = u                  \
    }
static const nd_gocfg_enum_t deliver_e = ENUM(deliver_v, "undefined", ND_GOCFG_ENUM_QUOTED, NULL);
static const nd_gocfg_enum_t ack_e = ENUM(ack_v, "explicit", ND_GOCFG_ENUM_QUOTED, NULL);
static const nd_gocfg_enum_t replay_e = ENUM(replay_v, "instant", ND_GOCFG_ENUM_QUOTED, NULL);
static const nd_gocfg_enum_t prio_e =
    ENUM(prio_v, "none", ND_GOCFG_ENUM_PREFIX, "unknown priority policy: ");
static const nd_gocfg_enum_t action_e =
    ENUM(action_v, "", ND_GOCFG_ENUM_PREFIX, "unknown consumer action: ");

#define F     ND_GOCFG_F
#define FN    ND_GOCFG_FN
#define FENUM ND_GOCFG_FENUM

/* ConsumerConfig in nats-server 2.11's field order. */
static const nd_gocfg_field_t cons_f[] = {
    F(gcons_t, "durable_name", STR, durable, true),
    F(gcons_t, "name", STR, name, true),
    F(gcons_t, "description", STR, description, true),
    FENUM(gcons_t, "deliver_policy", deliver_policy, false, &deliver_e, "server.DeliverPolicy"),
    F(gcons_t, "opt_start_seq", U64, opt_start_seq, true),
    F(gcons_t, "opt_start_time", TIME, opt_start_time, true),
    FENUM(gcons_t, "ack_policy", ack_policy, false, &ack_e, "server.AckPolicy"),
    F(gcons_t, "ack_wait", DUR, ack_wait, true),
    F(gcons_t, "max_deliver", INT, max_deliver, true),
    FN(gcons_t, "backoff", DURS, backoff, nbackoff, true),
    F(gcons_t, "filter_subject", STR, filter_subject, true),
    FN(gcons_t, "filter_subjects", STRS, filter_subjects, nfilter_subjects, true),
    FENUM(gcons_t, "replay_policy", replay_policy, false, &replay_e, "server.ReplayPolicy"),
    F(gcons_t, "rate_limit_bps", U64, rate_limit, true),
    F(gcons_t, "sample_freq", STR, sample_freq, true),
    F(gcons_t, "max_waiting", INT, max_waiting, true),
    F(gcons_t, "max_ack_pending", INT, max_ack_pending, true),
    F(gcons_t, "flow_control", BOOL, flow_control, true),
    F(gcons_t, "headers_only", BOOL, headers_only, true),
    F(gcons_t, "max_batch", INT, max_batch, true),
    F(gcons_t, "max_expires", DUR, max_expires, true),
    F(gcons_t, "max_bytes", INT, max_bytes, true),
    F(gcons_t, "deliver_subject", STR, deliver_subject, true),
    F(gcons_t, "deliver_group", STR, deliver_group, true),
    F(gcons_t, "idle_heartbeat", DUR, heartbeat, true),
    F(gcons_t, "inactive_threshold", DUR, inactive_threshold, true),
    F(gcons_t, "num_replicas", INT, replicas, false),
    F(gcons_t, "mem_storage", BOOL, mem_storage, true),
    F(gcons_t, "direct", BOOL, direct, true),
    F(gcons_t, "metadata", MAP, metadata, true),
    F(gcons_t, "pause_until", TIME, pause_until, true),
    FN(gcons_t, "priority_groups", STRS, priority_groups, npriority_groups, true),
    FENUM(gcons_t, "priority_policy", priority_policy, true, &prio_e, "server.PriorityPolicy"),
    F(gcons_t, "priority_timeout", DUR, pinned_ttl, true),
};
static const nd_gocfg_struct_t cons_d = {"ConsumerConfig", sizeof(gcons_t), cons_f,
                                         ND_GOCFG_NF(cons_f)};

static const nd_gocfg_field_t req_f[] = {
    F(greq_t, "stream_name", STR, stream, false),
    ND_GOCFG_FSUB(greq_t, "config", STRUCT, cfg, false, &cons_d, "server.ConsumerConfig"),
    FENUM(greq_t, "action", action, false, &action_e, "server.ConsumerAction"),
    F(greq_t, "pedantic", BOOL, pedantic, true),
};
static const nd_gocfg_struct_t req_d = {"CreateConsumerRequest", sizeof(greq_t), req_f,
                                        ND_GOCFG_NF(req_f)};

static void
gcons_free(gcons_t *g)
{
    nd_gocfg_free(&cons_d, g);
}

static json_t *
encode_cfg(const gcons_t *g)
{
    return nd_gocfg_encode(&cons_d, g, false);
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
    bool l1 = (g->pause_until.set && !nd_gotime_is_zero(&g->pause_until)) ||
              g->priority_policy != PP_NONE || g->pinned_ttl != 0 || g->npriority_groups > 0;
    nd_gocfg_set_req_level(&g->metadata, l1);
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
        nd_gocfg_quote(s, q, sizeof q);
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
    out->opt_start_time_ns = nd_gotime_ns(&g->opt_start_time);
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
    out->pause_until_ns = nd_gotime_ns(&g->pause_until);
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
    nd_gocfg_dec_t d = {0};
    memset(g, 0, sizeof *g);
    nd_gocfg_decode(&d, &cons_d, g, (json_t *)j);
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
    nd_gocfg_dec_t d = {.aj = aj, .strict = env->strict};
    greq_t r;
    memset(&r, 0, sizeof r);
    bool ok = false;
    gcons_t *c = &r.cfg;
    if (!nd_gocfg_decode(&d, &req_d, &r, root)) {
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
    nd_gocfg_dec_t d = {0};
    gcons_t g;
    memset(&g, 0, sizeof g);
    bool ok;
    if (!nd_gocfg_decode(&d, &cons_d, &g, (json_t *)j))
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
    nd_gotime_t t = {0};
    if (until != NULL && !nd_gotime_parse(until, &t))
        return false;
    gcons_t g;
    decode_canonical(c->json, &g);
    if (until == NULL || nd_gotime_is_zero(&t)) {
        g.pause_until = (nd_gotime_t){0};
    } else {
        t.off_s = 0; /* kept in UTC, as nats-server does */
        g.pause_until = t;
    }
    set_static_metadata(&g);
    json_decref(c->json);
    c->json = encode_cfg(&g);
    c->pause_until_ns = nd_gotime_ns(&g.pause_until);
    gcons_free(&g);
    return true;
}

/* ---- Comparing and updating -------------------------------------------------------------- */

bool
nd_consumer_cfg_equal(const nd_consumer_cfg_t *a, const nd_consumer_cfg_t *b)
{
    return nd_gocfg_equal(a->json, b->json);
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
    nd_gocfg_strs_free(c->filters, c->nfilters);
    nd_free(c->deliver_subject);
    nd_free(c->deliver_group);
    nd_gocfg_strs_free(c->priority_groups, c->npriority_groups);
    memset(c, 0, sizeof *c);
}
