/* A stream's configuration: nats-server 2.11's StreamConfig decoded, defaulted, checked and
 * written back (stream_cfg.h).
 *
 * One table per Go struct (StreamConfigRequest, StreamSource, ExternalStream,
 * SubjectTransformConfig, RePublish, Placement, StreamConsumerLimits; js/gocfg.h) lists its
 * fields in the Go struct's order with their JSON names, kinds and omitempty flags; gocfg.c
 * decodes a request through them as Go's encoding/json does (the policy enums and time.Time have
 * unmarshallers whose errors stop decoding) and encodes the canonical JSON in nats-server's key
 * order with Go's omitempty. Between the two, the checks of nats-server's checkStreamCfg run in its
 * order with its texts, on the decoded Go-like struct (gcfg_t). Version: nats-server v2.11; fields
 * of 2.12 (allow_msg_counter, allow_atomic, allow_msg_schedules, persist_mode, allow_batched) are
 * unknown fields, as in 2.11: dropped, or refused in strict mode.
 *
 * Not checked here, because they need the account's other streams: the origin's max_msg_size
 * against a mirror's/source's, a mirror's inherited mirror_direct, source/mirror cycles,
 * subjects overlapping another stream (10065) and the account's limits (10027, 10053, ...).
 */
#include "js/stream_cfg.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/apijson.h"
#include "js/gocfg.h"
#include "util/timefmt.h"
#include "subj/subject.h"
#include "subj/transform.h"

#define NS_PER_MS          INT64_C(1000000)
#define NS_PER_S           INT64_C(1000000000)
#define MAX_NAME_LEN       255
#define MAX_DESC_LEN       4096
#define MAX_METADATA_LEN   (128 * 1024)
#define MAX_REPLICAS       5
#define DEFAULT_DUP_WINDOW (120 * NS_PER_S)
#define JS_API_PREFIX      "$JS.API"

/* ---- The Go structs ---------------------------------------------------------------------- */

typedef struct xform {
    char *src, *dest;
} xform_t;

typedef struct ext {
    char *api, *deliver;
} ext_t;

typedef struct ssrc {
    char *name;
    uint64_t opt_start_seq;
    char *opt_start_time;
    char *filter_subject;
    xform_t **xforms;
    size_t nxforms;
    ext_t *external;
} ssrc_t;

typedef struct place {
    char *cluster;
    char **tags;
    size_t ntags;
    char *preferred;
} place_t;

typedef struct repub {
    char *src, *dest;
    bool headers_only;
} repub_t;

typedef struct climits {
    int64_t inactive_threshold, max_ack_pending;
} climits_t;

typedef struct gcfg {
    char *name, *description;
    char **subjects;
    size_t nsubjects;
    int64_t retention;
    int64_t max_consumers, max_msgs, max_bytes, max_age, max_msgs_per, max_msg_size;
    int64_t discard, storage, replicas;
    bool no_ack;
    char *template_owner;
    int64_t duplicates;
    place_t *placement;
    ssrc_t *mirror;
    ssrc_t **sources;
    size_t nsources;
    int64_t compression;
    uint64_t first_seq;
    xform_t *subject_transform;
    repub_t *republish;
    bool allow_direct, mirror_direct, discard_new_per, sealed, deny_delete, deny_purge,
        allow_rollup;
    climits_t consumer_limits;
    bool allow_msg_ttl;
    int64_t sdm_ttl;
    json_t *metadata; /* object of strings, or NULL */
    bool pedantic;    /* the request's, not the config's */
} gcfg_t;

/* Go's RetentionPolicy, DiscardPolicy and StorageType values as we keep them. */
enum { RET_LIMITS = 0, RET_INTEREST, RET_WORKQUEUE };
enum { DISC_OLD = 0, DISC_NEW };
enum { ST_NONE = 0, ST_FILE, ST_MEMORY, ST_ANY };
enum { COMP_NONE = 0, COMP_S2 };

/* The enums' texts as their UnmarshalJSON methods read them (DiscardPolicy compares
 * lower-cased; StoreCompression decodes a Go string first); a value not listed is written as
 * `other`. */
static const nd_gocfg_enumval_t ret_v[] = {
    {"limits", RET_LIMITS}, {"interest", RET_INTEREST}, {"workqueue", RET_WORKQUEUE}};
static const nd_gocfg_enumval_t disc_v[] = {{"old", DISC_OLD}, {"new", DISC_NEW}};
static const nd_gocfg_enumval_t storage_v[] = {
    {"file", ST_FILE}, {"memory", ST_MEMORY}, {"any", ST_ANY}};
static const nd_gocfg_enumval_t compr_v[] = {{"s2", COMP_S2}, {"none", COMP_NONE}};

static const nd_gocfg_enum_t ret_e = {
    .vals = ret_v, .nvals = ND_GOCFG_NF(ret_v), .other = "limits", .err = ND_GOCFG_ENUM_QUOTED};
static const nd_gocfg_enum_t disc_e = {.vals = disc_v,
                                       .nvals = ND_GOCFG_NF(disc_v),
                                       .other = "old",
                                       .nocase = true,
                                       .err = ND_GOCFG_ENUM_QUOTED};
static const nd_gocfg_enum_t storage_e = {.vals = storage_v,
                                          .nvals = ND_GOCFG_NF(storage_v),
                                          .other = "file",
                                          .err = ND_GOCFG_ENUM_QUOTED};
static const nd_gocfg_enum_t compr_e = {.vals = compr_v,
                                        .nvals = ND_GOCFG_NF(compr_v),
                                        .other = "none",
                                        .err = ND_GOCFG_ENUM_STRING,
                                        .unknown = "unknown compression algorithm"};

/* A StreamSource's *time.Time, kept as the text it came as (char *): checked for RFC 3339's
 * shape only, with the error text of Go's quoted-string parse. */
static void
time_text_decode(nd_gocfg_dec_t *d, void *field, const json_t *v)
{
    if (json_is_null(v))
        return;
    if (!json_is_string(v)) {
        nd_gocfg_fail(d, "Time.UnmarshalJSON: input is not a JSON string");
        return;
    }
    /* RFC 3339 as time.Time reads it: 2006-01-02T15:04:05[.frac](Z|+hh:mm). */
    const char *s = json_string_value(v);
    int y, mo, dd, h, mi, se, n = 0;
    bool ok = sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &dd, &h, &mi, &se, &n) == 6 &&
              n == 19 && mo >= 1 && mo <= 12 && dd >= 1 && dd <= 31 && h < 24 && mi < 60 && se < 60;
    if (ok) {
        const char *p = s + n;
        if (*p == '.') {
            p++;
            size_t k = strspn(p, "0123456789");
            ok = k > 0;
            p += k;
        }
        if (ok && *p == 'Z')
            ok = p[1] == '\0';
        else if (ok && (*p == '+' || *p == '-'))
            ok = strlen(p) == 6 && p[3] == ':';
        else
            ok = false;
    }
    if (!ok) {
        nd_gocfg_fail(d,
                      "parsing time \"\\\"%s\\\"\" as \"\\\"2006-01-02T15:04:05Z07:00\\\"\": "
                      "cannot parse \"%s\\\"\" as \"2006\"",
                      s, s);
        return;
    }
    nd_free(*(char **)field);
    *(char **)field = nd_xstrdup(s);
}

static json_t *
time_text_encode(const void *field, bool omitempty)
{
    const char *s = *(char *const *)field;
    if (!s || (omitempty && !*s))
        return NULL;
    return json_string(s);
}

static void
time_text_free(void *field)
{
    nd_free(*(char **)field);
    *(char **)field = NULL;
}

static const nd_gocfg_custom_t time_text = {time_text_decode, time_text_encode, time_text_free};

#define F    ND_GOCFG_F
#define FN   ND_GOCFG_FN
#define FSUB ND_GOCFG_FSUB

static const nd_gocfg_field_t xform_f[] = {
    F(xform_t, "src", STR, src, false),
    F(xform_t, "dest", STR, dest, false),
};
static const nd_gocfg_struct_t xform_d = {"SubjectTransformConfig", sizeof(xform_t), xform_f,
                                          ND_GOCFG_NF(xform_f)};

static const nd_gocfg_field_t ext_f[] = {
    F(ext_t, "api", STR, api, false),
    F(ext_t, "deliver", STR, deliver, false),
};
static const nd_gocfg_struct_t ext_d = {"ExternalStream", sizeof(ext_t), ext_f, ND_GOCFG_NF(ext_f)};

static const nd_gocfg_field_t ssrc_f[] = {
    F(ssrc_t, "name", STR, name, false),
    F(ssrc_t, "opt_start_seq", SEQ, opt_start_seq, true),
    ND_GOCFG_FCUSTOM(ssrc_t, "opt_start_time", opt_start_time, true, &time_text, "time.Time"),
    F(ssrc_t, "filter_subject", STR, filter_subject, true),
    ND_GOCFG_FLIST(ssrc_t, "subject_transforms", xforms, nxforms, true, &xform_d,
                   "[]server.SubjectTransformConfig"),
    FSUB(ssrc_t, "external", PTR, external, true, &ext_d, "server.ExternalStream"),
};
static const nd_gocfg_struct_t ssrc_d = {"StreamSource", sizeof(ssrc_t), ssrc_f,
                                         ND_GOCFG_NF(ssrc_f)};

static const nd_gocfg_field_t place_f[] = {
    F(place_t, "cluster", STR, cluster, true),
    FN(place_t, "tags", STRS, tags, ntags, true),
    F(place_t, "preferred", STR, preferred, true),
};
static const nd_gocfg_struct_t place_d = {"Placement", sizeof(place_t), place_f,
                                          ND_GOCFG_NF(place_f)};

static const nd_gocfg_field_t repub_f[] = {
    F(repub_t, "src", STR, src, true),
    F(repub_t, "dest", STR, dest, false),
    F(repub_t, "headers_only", BOOL, headers_only, true),
};
static const nd_gocfg_struct_t repub_d = {"RePublish", sizeof(repub_t), repub_f,
                                          ND_GOCFG_NF(repub_f)};

static const nd_gocfg_field_t climits_f[] = {
    F(climits_t, "inactive_threshold", DUR, inactive_threshold, true),
    F(climits_t, "max_ack_pending", INT, max_ack_pending, true),
};
static const nd_gocfg_struct_t climits_d = {"StreamConsumerLimits", sizeof(climits_t), climits_f,
                                            ND_GOCFG_NF(climits_f)};

/* StreamConfig in nats-server 2.11's field order, then StreamConfigRequest's "pedantic". */
static const nd_gocfg_field_t cfg_f[] = {
    F(gcfg_t, "name", STR, name, false),
    F(gcfg_t, "description", STR, description, true),
    FN(gcfg_t, "subjects", STRS, subjects, nsubjects, true),
    ND_GOCFG_FENUM(gcfg_t, "retention", retention, false, &ret_e, "server.RetentionPolicy"),
    F(gcfg_t, "max_consumers", INT, max_consumers, false),
    F(gcfg_t, "max_msgs", I64, max_msgs, false),
    F(gcfg_t, "max_bytes", I64, max_bytes, false),
    F(gcfg_t, "max_age", DUR, max_age, false),
    F(gcfg_t, "max_msgs_per_subject", I64, max_msgs_per, false),
    F(gcfg_t, "max_msg_size", I32, max_msg_size, true),
    ND_GOCFG_FENUM(gcfg_t, "discard", discard, false, &disc_e, "server.DiscardPolicy"),
    ND_GOCFG_FENUM(gcfg_t, "storage", storage, false, &storage_e, "server.StorageType"),
    F(gcfg_t, "num_replicas", INT, replicas, false),
    F(gcfg_t, "no_ack", BOOL, no_ack, true),
    F(gcfg_t, "template_owner", STR, template_owner, true),
    F(gcfg_t, "duplicate_window", DUR, duplicates, true),
    FSUB(gcfg_t, "placement", PTR, placement, true, &place_d, "server.Placement"),
    FSUB(gcfg_t, "mirror", PTR, mirror, true, &ssrc_d, "server.StreamSource"),
    ND_GOCFG_FLIST(gcfg_t, "sources", sources, nsources, true, &ssrc_d, "[]*server.StreamSource"),
    ND_GOCFG_FENUM(gcfg_t, "compression", compression, false, &compr_e, "server.StoreCompression"),
    F(gcfg_t, "first_seq", SEQ, first_seq, true),
    FSUB(gcfg_t, "subject_transform", PTR, subject_transform, true, &xform_d,
         "server.SubjectTransformConfig"),
    FSUB(gcfg_t, "republish", PTR, republish, true, &repub_d, "server.RePublish"),
    F(gcfg_t, "allow_direct", BOOL, allow_direct, false),
    F(gcfg_t, "mirror_direct", BOOL, mirror_direct, false),
    F(gcfg_t, "discard_new_per_subject", BOOL, discard_new_per, true),
    F(gcfg_t, "sealed", BOOL, sealed, false),
    F(gcfg_t, "deny_delete", BOOL, deny_delete, false),
    F(gcfg_t, "deny_purge", BOOL, deny_purge, false),
    F(gcfg_t, "allow_rollup_hdrs", BOOL, allow_rollup, false),
    FSUB(gcfg_t, "consumer_limits", STRUCT, consumer_limits, false, &climits_d,
         "server.StreamConsumerLimits"),
    F(gcfg_t, "allow_msg_ttl", BOOL, allow_msg_ttl, false),
    F(gcfg_t, "subject_delete_marker_ttl", DUR, sdm_ttl, true),
    F(gcfg_t, "metadata", MAP, metadata, true),
    {.name = "pedantic",
     .kind = ND_GOCFG_BOOL,
     .off = offsetof(gcfg_t, pedantic),
     .omitempty = true,
     .request_only = true},
};
static const nd_gocfg_struct_t cfg_d = {"StreamConfigRequest", sizeof(gcfg_t), cfg_f,
                                        ND_GOCFG_NF(cfg_f)};

static void
gcfg_free(gcfg_t *g)
{
    nd_gocfg_free(&cfg_d, g);
}

/* Decodes root into g. Returns: false with d->err. */
static bool
decode_cfg(nd_gocfg_dec_t *d, json_t *root, gcfg_t *g)
{
    memset(g, 0, sizeof *g);
    return nd_gocfg_decode(d, &cfg_d, g, root);
}

/* ---- Helpers ----------------------------------------------------------------------------- */

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
valid_pub(const char *s)
{
    return s && nd_subj_valid_pub(s, strlen(s));
}

static bool
is_subset(const char *sub, const char *super)
{
    return nd_subj_subset(sub, strlen(sub), super, strlen(super));
}

static bool
streq(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static bool
empty(const char *s)
{
    return !s || !*s;
}

bool
nd_subjects_overlap(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    if (!strcmp(a, b))
        return true;
    /* Token by token: a '>' covers one or more remaining tokens, so the other subject must still
     * have one here; '*' covers one; literals must be equal. */
    const char *pa = a, *pb = b;
    for (;;) {
        const char *ea = strchr(pa, '.'), *eb = strchr(pb, '.');
        size_t la = ea ? (size_t)(ea - pa) : strlen(pa);
        size_t lb = eb ? (size_t)(eb - pb) : strlen(pb);
        bool fa = la == 1 && *pa == '>', fb = lb == 1 && *pb == '>';
        if (fa || fb)
            return true;
        bool wa = la == 1 && *pa == '*', wb = lb == 1 && *pb == '*';
        if (!wa && !wb && (la != lb || memcmp(pa, pb, la) != 0))
            return false;
        if (!ea || !eb)
            return !ea && !eb;
        pa = ea + 1;
        pb = eb + 1;
    }
}

static int
cmp_strp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether two of v[0..n) are the same subject: sorted, in O(n log n), so that a config of
 * 10,000 subjects is checked at once. */
static bool
has_duplicates(char *const *v, size_t n)
{
    const char **s = nd_xmalloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_strp);
    bool dup = false;
    for (size_t i = 1; i < n && !dup; i++)
        dup = strcmp(s[i - 1], s[i]) == 0;
    nd_free(s);
    return dup;
}

/* The first pair (i, j) in nats-server's order (i, then j, ascending) of distinct subjects of
 * v[0..n) that overlap. Two distinct literal subjects never overlap, so a literal i is compared
 * with the wildcard subjects only: O(n x wildcards), not O(n^2). */
static bool
overlap_within(char *const *v, size_t n, size_t *oi, size_t *oj)
{
    size_t *wild = nd_xmalloc(n * sizeof *wild), nw = 0;
    bool *lit = nd_xmalloc(n * sizeof *lit);
    for (size_t k = 0; k < n; k++) {
        lit[k] = nd_subj_is_literal(v[k], strlen(v[k]));
        if (!lit[k])
            wild[nw++] = k;
    }
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) {
        size_t m = lit[i] ? nw : n;
        for (size_t x = 0; x < m && !found; x++) {
            size_t j = lit[i] ? wild[x] : x;
            if (strcmp(v[i], v[j]) != 0 && nd_subjects_overlap(v[j], v[i])) {
                *oi = i;
                *oj = j;
                found = true;
            }
        }
    }
    nd_free(wild);
    nd_free(lit);
    return found;
}


static bool invalid(nd_jserr_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool
invalid(nd_jserr_t *err, const char *fmt, ...)
{
    char buf[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return nd_jserr_set(err, ND_JSE_STREAM_INVALID_CONFIG_F, "err", buf, (const char *)NULL);
}

static bool
pedantic_err(nd_jserr_t *err, const char *text)
{
    return nd_jserr_set(err, ND_JSE_PEDANTIC_F, "err", text, (const char *)NULL);
}

static bool
with_err(nd_jserr_t *err, nd_jse_t e, const char *text)
{
    return nd_jserr_set(err, e, "err", text, (const char *)NULL);
}

/* ValidateMapping (mode MAPPING) or NewSubjectTransform (mode TRANSFORM): error text or NULL. */
static bool
xform_ok(const char *src, const char *dest, nd_xf_mode_t mode, char *e, size_t elen)
{
    nd_xf_t *xf = NULL;
    nd_xf_err_t rc = nd_xf_new(src ? src : "", dest ? dest : "", mode, &xf, e, elen);
    nd_xf_free(xf);
    return rc == ND_XF_OK;
}

/* setStaticStreamMetadata: the required API level, and no dynamic keys. */
static void
set_static_metadata(gcfg_t *g)
{
    nd_gocfg_set_req_level(&g->metadata, g->allow_msg_ttl || g->sdm_ttl > 0);
}

/* ---- checkStreamCfg ---------------------------------------------------------------------- */

static bool
check_cfg(gcfg_t *c, const nd_stream_cfg_env_t *env, bool pedantic, nd_jserr_t *err)
{
    if (!valid_name(c->name))
        return invalid(err, "stream name is required and can not contain '.', '*', '>'");
    if (strlen(c->name) > MAX_NAME_LEN)
        return invalid(err, "stream name is too long, maximum allowed is %d", MAX_NAME_LEN);
    if (c->description && strlen(c->description) > MAX_DESC_LEN)
        return invalid(err, "stream description is too long, maximum allowed is %d", MAX_DESC_LEN);
    size_t mdlen = 0;
    if (c->metadata) {
        const char *k;
        json_t *v;
        json_object_foreach(c->metadata, k, v) mdlen += strlen(k) + strlen(json_string_value(v));
    }
    if (mdlen > MAX_METADATA_LEN)
        return invalid(err, "stream metadata exceeds maximum size of %d bytes", MAX_METADATA_LEN);

    if (c->storage == ST_NONE)
        c->storage = ST_FILE;
    /* "any" decodes in nats-server (it is for consumers' internals) but no store backs it;
     * refused here with a text of our own rather than a stream without a store. */
    if (c->storage == ST_ANY)
        return invalid(err, "storage type \"any\" is not supported for streams");
    if (c->replicas == 0)
        c->replicas = 1;
    if (c->replicas > MAX_REPLICAS)
        return invalid(err, "maximum replicas is %d", MAX_REPLICAS);
    if (c->replicas < 0)
        return nd_jserr_set(err, ND_JSE_REPLICAS_COUNT_CANNOT_BE_NEGATIVE, (const char *)NULL);
    if (c->max_msgs == 0)
        c->max_msgs = -1;
    if (c->max_msgs_per == 0)
        c->max_msgs_per = -1;
    if (c->max_bytes == 0)
        c->max_bytes = -1;
    if (c->max_msg_size == 0)
        c->max_msg_size = -1;
    if (c->max_consumers == 0)
        c->max_consumers = -1;

    int64_t lim_dup = env ? env->max_dup_window_ns : 0;
    if (c->duplicates == 0 && !c->mirror) {
        int64_t maxw = DEFAULT_DUP_WINDOW;
        if (lim_dup > 0 && maxw > lim_dup) {
            if (pedantic)
                return pedantic_err(
                    err, "pedantic mode: duplicate window limits are higher than current limits");
            maxw = lim_dup;
        }
        if (c->max_age != 0 && c->max_age < maxw) {
            if (pedantic)
                return pedantic_err(
                    err, "pedantic mode: duplicate window cannot be bigger than max age");
            c->duplicates = c->max_age;
        } else
            c->duplicates = maxw;
    }
    if (c->max_age > 0 && c->max_age < 100 * NS_PER_MS)
        return invalid(err, "max age needs to be >= 100ms");
    if (c->duplicates < 0)
        return invalid(err, "duplicates window can not be negative");
    if (c->max_age != 0 && c->duplicates > c->max_age)
        return invalid(err, "duplicates window can not be larger then max age");
    if (lim_dup > 0 && c->duplicates > lim_dup) {
        char ds[40];
        nd_time_go_duration(ds, sizeof ds, lim_dup);
        return invalid(err, "duplicates window can not be larger then server limit of %s", ds);
    }
    if (c->duplicates > 0 && c->duplicates < 100 * NS_PER_MS)
        return invalid(err, "duplicates window needs to be >= 100ms");

    if (c->deny_purge && c->allow_rollup)
        return invalid(err, "roll-ups require the purge permission");
    if (c->discard_new_per) {
        if (c->discard != DISC_NEW)
            return invalid(err, "discard new per subject requires discard new policy to be set");
        if (c->max_msgs_per <= 0)
            return invalid(err, "discard new per subject requires max msgs per subject > 0");
    }

    if (c->sdm_ttl > 0) {
        if (c->sdm_ttl < NS_PER_S)
            return invalid(err, "subject delete marker TTL must be at least 1 second");
        if (!c->allow_msg_ttl) {
            if (pedantic)
                return invalid(err,
                               "subject delete marker cannot be set if message TTLs are disabled");
            c->allow_msg_ttl = true;
        }
        if (!c->allow_rollup) {
            if (pedantic)
                return invalid(err, "subject delete marker cannot be set if roll-ups are disabled");
            c->allow_rollup = true;
            c->deny_purge = false;
        }
    } else if (c->sdm_ttl < 0)
        return invalid(err, "subject delete marker TTL must not be negative");

    /* External prefixes of the mirror and the sources, checked after them. */
    const char *dpfx[64], *apfx[64];
    size_t ndp = 0, nap = 0;
    char e[300], t[360];

    if (c->mirror) {
        ssrc_t *m = c->mirror;
        if (c->first_seq > 0)
            return nd_jserr_set(err, ND_JSE_MIRROR_WITH_FIRST_SEQ, (const char *)NULL);
        if (c->nsubjects > 0)
            return nd_jserr_set(err, ND_JSE_MIRROR_WITH_SUBJECTS, (const char *)NULL);
        if (c->nsources > 0)
            return nd_jserr_set(err, ND_JSE_MIRROR_WITH_SOURCES, (const char *)NULL);
        if (!empty(m->filter_subject) && m->nxforms != 0)
            return nd_jserr_set(err, ND_JSE_MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED,
                                (const char *)NULL);
        if (c->sdm_ttl > 0)
            return invalid(err, "subject delete markers forbidden on mirrors");
        for (size_t i = 0; i < m->nxforms; i++) {
            const xform_t *tr = m->xforms[i];
            if (!empty(tr->src) && !valid_sub(tr->src)) {
                snprintf(t, sizeof t, "invalid subject %s", tr->src);
                return with_err(err, ND_JSE_MIRROR_INVALID_SUBJECT_FILTER, t);
            }
            if (!empty(tr->dest) && !xform_ok(tr->src, tr->dest, ND_XF_MODE_MAPPING, e, sizeof e))
                return with_err(err, ND_JSE_MIRROR_INVALID_TRANSFORM_DESTINATION, e);
            for (size_t j = 0; j < m->nxforms; j++)
                if (j != i && nd_subjects_overlap(tr->src ? tr->src : "",
                                                  m->xforms[j]->src ? m->xforms[j]->src : ""))
                    return nd_jserr_set(err, ND_JSE_MIRROR_OVERLAPPING_SUBJECT_FILTERS,
                                        (const char *)NULL);
        }
        if (!m->external) {
            if (!valid_name(m->name))
                return nd_jserr_set(err, ND_JSE_MIRROR_INVALID_STREAM_NAME, (const char *)NULL);
        } else {
            if (!empty(m->external->deliver) && ndp < 64)
                dpfx[ndp++] = m->external->deliver;
            if (!empty(m->external->api) && nap < 64)
                apfx[nap++] = m->external->api;
        }
    }

    for (size_t i = 0; i < c->nsources; i++) {
        const ssrc_t *s = c->sources[i];
        if (!s || !valid_name(s->name))
            return nd_jserr_set(err, ND_JSE_SOURCE_INVALID_STREAM_NAME, (const char *)NULL);
        /* composeIName: name, then the external api prefix, then the filters and transforms;
         * two sources with the same one are duplicates. */
        for (size_t j = 0; j < i; j++) {
            const ssrc_t *o = c->sources[j];
            bool same =
                streq(o->name, s->name) &&
                streq(o->external ? o->external->api : "", s->external ? s->external->api : "") &&
                streq(o->filter_subject, s->filter_subject) && o->nxforms == s->nxforms;
            for (size_t k = 0; same && k < s->nxforms; k++)
                same = streq(o->xforms[k]->src, s->xforms[k]->src) &&
                       streq(o->xforms[k]->dest, s->xforms[k]->dest);
            if (same)
                return nd_jserr_set(err, ND_JSE_SOURCE_DUPLICATE_DETECTED, (const char *)NULL);
        }
        if (!s->external) {
            if (!empty(s->filter_subject) && s->nxforms != 0)
                return nd_jserr_set(err, ND_JSE_SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED,
                                    (const char *)NULL);
            for (size_t k = 0; k < s->nxforms; k++) {
                const xform_t *tr = s->xforms[k];
                if (!empty(tr->src) && !valid_sub(tr->src)) {
                    snprintf(t, sizeof t, "invalid subject %s", tr->src);
                    return with_err(err, ND_JSE_SOURCE_INVALID_SUBJECT_FILTER, t);
                }
                if (!empty(tr->dest) &&
                    !xform_ok(tr->src, tr->dest, ND_XF_MODE_MAPPING, e, sizeof e))
                    return with_err(err, ND_JSE_SOURCE_INVALID_TRANSFORM_DESTINATION, e);
            }
            for (size_t k = 0; k < s->nxforms; k++)
                for (size_t j = 0; j < s->nxforms; j++) {
                    const char *a = s->xforms[k]->src ? s->xforms[k]->src : "";
                    const char *b = s->xforms[j]->src ? s->xforms[j]->src : "";
                    /* An empty filter is no filter here (Go's subset match on "" fails). */
                    if (k != j && *a && *b && is_subset(a, b))
                        return nd_jserr_set(err, ND_JSE_SOURCE_OVERLAPPING_SUBJECT_FILTERS,
                                            (const char *)NULL);
                }
        } else {
            if (!empty(s->external->deliver) && ndp < 64)
                dpfx[ndp++] = s->external->deliver;
            if (!empty(s->external->api) && nap < 64)
                apfx[nap++] = s->external->api;
        }
    }
    for (size_t i = 0; i < ndp; i++)
        if (!valid_pub(dpfx[i]))
            return nd_jserr_set(err, ND_JSE_STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ_F, "prefix",
                                dpfx[i], (const char *)NULL);
    for (size_t i = 0; i < nap; i++) {
        if (!valid_pub(apfx[i]))
            return invalid(err,
                           "stream external api prefix \"%s\" must be a valid subject without "
                           "wildcards",
                           apfx[i]);
        if (nd_subjects_overlap(apfx[i], JS_API_PREFIX))
            return nd_jserr_set(err, ND_JSE_STREAM_EXTERNAL_API_OVERLAP_F, "prefix", apfx[i],
                                "subject", JS_API_PREFIX, (const char *)NULL);
    }

    if (c->nsubjects == 0) {
        if (!c->mirror && c->nsources == 0) {
            nd_gocfg_strs_free(c->subjects, 0);
            c->subjects = nd_xcalloc(1, sizeof *c->subjects);
            c->subjects[0] = nd_xstrdup(c->name);
            c->nsubjects = 1;
        }
    } else {
        if (c->mirror)
            return nd_jserr_set(err, ND_JSE_MIRROR_WITH_SUBJECTS, (const char *)NULL);
        static const char *const api_ns[] = {"$JS.>", "$JSC.>", "$NRG.>"};
        for (size_t i = 0; i < c->nsubjects; i++) {
            const char *s = c->subjects[i];
            if (!valid_sub(s))
                return invalid(err, "invalid subject");
            if (!strcmp(s, ">")) {
                if (!c->no_ack)
                    return invalid(err, "capturing all subjects requires no-ack to be true");
                if (c->replicas != 1)
                    return invalid(err, "capturing all subjects requires replicas of 1");
            }
            if (!c->no_ack) {
                for (size_t k = 0; k < 3; k++)
                    if (nd_subjects_overlap(s, api_ns[k]) && !is_subset(s, "$JS.EVENT.>"))
                        return invalid(
                            err,
                            "subjects that overlap with jetstream api require no-ack to be true");
                if (nd_subjects_overlap(s, "$SYS.>") && !is_subset(s, "$SYS.ACCOUNT.>"))
                    return invalid(
                        err, "subjects that overlap with system api require no-ack to be true");
            }
        }
    }

    if (c->nsubjects > 1 && has_duplicates(c->subjects, c->nsubjects))
        return invalid(err, "duplicate subjects detected");

    if (c->nsubjects == 0 && c->nsources == 0 && !c->mirror)
        return invalid(err, "stream needs at least one configured subject or be a source/mirror");

    bool mb_required = env && env->max_bytes_required;
    int64_t mb_limit = env ? env->max_stream_bytes : -1;
    if (env && env->max_bytes_limits)
        env->max_bytes_limits(env->limits_arg, (int)c->replicas, c->storage == ST_MEMORY,
                              &mb_required, &mb_limit);
    if (mb_required && c->max_bytes <= 0)
        return nd_jserr_set(err, ND_JSE_STREAM_MAX_BYTES_REQUIRED, (const char *)NULL);
    if (mb_limit > 0 && c->max_bytes > mb_limit)
        return nd_jserr_set(err, ND_JSE_STREAM_MAX_STREAM_BYTES_EXCEEDED, (const char *)NULL);

    if (c->nsubjects > 1) {
        size_t i, j;
        if (overlap_within(c->subjects, c->nsubjects, &i, &j))
            return invalid(err, "subject \"%s\" overlaps with \"%s\"", c->subjects[i],
                           c->subjects[j]);
    }

    if (c->subject_transform) {
        const xform_t *x = c->subject_transform;
        if (!empty(x->src) && !valid_sub(x->src)) {
            snprintf(t, sizeof t, "invalid subject %s", x->src);
            return with_err(err, ND_JSE_STREAM_TRANSFORM_INVALID_SOURCE, t);
        }
        if (!empty(x->dest) && !xform_ok(x->src, x->dest, ND_XF_MODE_MAPPING, e, sizeof e))
            return with_err(err, ND_JSE_STREAM_TRANSFORM_INVALID_DESTINATION, e);
    }

    if (c->republish) {
        repub_t *r = c->republish;
        if (empty(r->src)) {
            if (pedantic)
                return pedantic_err(err, "pedantic mode: republish source can not be empty");
            nd_free(r->src);
            r->src = nd_xstrdup(">");
        }
        const xform_t *x = c->subject_transform;
        if (streq(r->dest, ">") && streq(r->src, ">") && x && c->nsubjects == 1 &&
            streq(x->src, c->subjects[0])) {
            if (pedantic)
                return pedantic_err(err, "implicit republish based on subject transform");
            nd_free(r->src);
            nd_free(r->dest);
            r->src = nd_xstrdup(x->dest ? x->dest : "");
            r->dest = nd_xstrdup(x->dest ? x->dest : "");
        }
        for (size_t i = 0; i < c->nsubjects; i++)
            if (nd_subjects_overlap(r->dest ? r->dest : "", c->subjects[i]))
                return invalid(err, "stream configuration for republish destination forms a cycle");
        /* NewSubjectTransform: an empty destination is not a valid republish either. */
        if (empty(r->dest) || !xform_ok(r->src, r->dest, ND_XF_MODE_TRANSFORM, e, sizeof e))
            return invalid(err,
                           "stream configuration for republish with transform from '%s' to '%s' "
                           "not valid",
                           r->src ? r->src : "", r->dest ? r->dest : "");
    }

    if (c->placement && empty(c->placement->cluster) && c->placement->ntags == 0 &&
        !c->placement->tags && empty(c->placement->preferred)) {
        nd_gocfg_free(&place_d, c->placement);
        nd_free(c->placement);
        c->placement = NULL;
    }
    if (c->placement && !empty(c->placement->preferred))
        return invalid(err, "preferred server not permitted in placement");
    return true;
}

/* addStream's checks of the mirror's and the sources' filters (create only: 10049). */
static bool
check_filters(const gcfg_t *c, nd_jserr_t *err)
{
    char t[480], e[300];
    if (c->mirror) {
        const ssrc_t *m = c->mirror;
        if (m->nxforms == 0) {
            if (!empty(m->filter_subject) && !valid_sub(m->filter_subject)) {
                snprintf(t, sizeof t, "subject filter '%s' for the mirror invalid subject",
                         m->filter_subject);
                return with_err(err, ND_JSE_STREAM_CREATE_F, t);
            }
        } else
            for (size_t i = 0; i < m->nxforms; i++) {
                const xform_t *x = m->xforms[i];
                if (!empty(x->src) && !valid_sub(x->src)) {
                    snprintf(
                        t, sizeof t,
                        "invalid subject transform source '%s' for the mirror: invalid subject",
                        x->src);
                    return with_err(err, ND_JSE_STREAM_CREATE_F, t);
                }
                if (!empty(x->dest) &&
                    !xform_ok(x->src, x->dest, ND_XF_MODE_TRANSFORM, e, sizeof e)) {
                    snprintf(t, sizeof t, "subject transform from '%s' to '%s' for the mirror: %s",
                             x->src ? x->src : "", x->dest, e);
                    return with_err(err, ND_JSE_STREAM_CREATE_F, t);
                }
            }
    }
    for (size_t i = 0; i < c->nsources; i++) {
        const ssrc_t *s = c->sources[i];
        if (s->nxforms == 0) {
            if (!empty(s->filter_subject) && !valid_sub(s->filter_subject)) {
                snprintf(t, sizeof t, "subject filter '%s' for the source: invalid subject",
                         s->filter_subject);
                return with_err(err, ND_JSE_STREAM_CREATE_F, t);
            }
        } else
            for (size_t k = 0; k < s->nxforms; k++) {
                const xform_t *x = s->xforms[k];
                if (!empty(x->src) && !valid_sub(x->src)) {
                    snprintf(t, sizeof t, "subject filter '%s' for the source: invalid subject",
                             x->src);
                    return with_err(err, ND_JSE_STREAM_CREATE_F, t);
                }
                if (!empty(x->dest) &&
                    !xform_ok(x->src, x->dest, ND_XF_MODE_TRANSFORM, e, sizeof e)) {
                    snprintf(t, sizeof t, "subject transform from '%s' to '%s' for the source: %s",
                             x->src ? x->src : "", x->dest, e);
                    return with_err(err, ND_JSE_STREAM_CREATE_F, t);
                }
            }
    }
    return true;
}

/* ---- The public struct ------------------------------------------------------------------- */

static void
fill_public(nd_stream_cfg_t *out, gcfg_t *g)
{
    memset(out, 0, sizeof *out);
    out->json = nd_gocfg_encode(&cfg_d, g, true);
    out->name = nd_xstrdup(g->name ? g->name : "");
    out->nsubjects = g->nsubjects;
    out->subjects = nd_xcalloc(g->nsubjects ? g->nsubjects : 1, sizeof *out->subjects);
    for (size_t i = 0; i < g->nsubjects; i++)
        out->subjects[i] = nd_xstrdup(g->subjects[i]);
    out->retention = g->retention == RET_INTEREST    ? ND_RETENTION_INTEREST
                     : g->retention == RET_WORKQUEUE ? ND_RETENTION_WORKQUEUE
                                                     : ND_RETENTION_LIMITS;
    out->storage = g->storage == ST_MEMORY ? ND_STORAGE_MEMORY : ND_STORAGE_FILE;
    out->max_consumers = g->max_consumers;
    out->max_msgs = g->max_msgs;
    out->max_bytes = g->max_bytes;
    out->max_msgs_per_subject = g->max_msgs_per;
    out->max_age_ns = g->max_age;
    out->max_msg_size = (int32_t)g->max_msg_size;
    out->discard = g->discard == DISC_NEW ? ND_DISCARD_NEW : ND_DISCARD_OLD;
    out->discard_new_per_subject = g->discard_new_per;
    out->duplicate_window_ns = g->duplicates;
    out->num_replicas = (int)g->replicas;
    out->no_ack = g->no_ack;
    out->sealed = g->sealed;
    out->deny_delete = g->deny_delete;
    out->deny_purge = g->deny_purge;
    out->allow_rollup = g->allow_rollup;
    out->allow_direct = g->allow_direct;
    out->mirror_direct = g->mirror_direct;
    out->allow_msg_ttl = g->allow_msg_ttl;
    out->subject_delete_marker_ttl_ns = g->sdm_ttl;
    out->first_seq = g->first_seq;
    out->compression = g->compression == COMP_S2 ? ND_STORE_S2 : ND_STORE_NONE;
    out->has_mirror = g->mirror != NULL;
    out->nsources = g->nsources;
    if (g->subject_transform) {
        out->xform_src = nd_xstrdup(g->subject_transform->src ? g->subject_transform->src : "");
        out->xform_dest = nd_xstrdup(g->subject_transform->dest ? g->subject_transform->dest : "");
    }
    if (g->republish) {
        out->republish_src = nd_xstrdup(g->republish->src ? g->republish->src : "");
        out->republish_dest = nd_xstrdup(g->republish->dest ? g->republish->dest : "");
        out->republish_headers_only = g->republish->headers_only;
    }
}

/* ---- Parsing ----------------------------------------------------------------------------- */

static bool
parse_root(json_t *root, const nd_apijson_t *aj, const char *subj_name,
           const nd_stream_cfg_env_t *env, bool from_request, nd_stream_cfg_t *out, nd_jserr_t *err)
{
    static const nd_stream_cfg_env_t defenv = {.max_stream_bytes = -1};
    if (!env)
        env = &defenv;
    nd_gocfg_dec_t d = {.aj = aj, .strict = env->strict};
    gcfg_t g;
    if (!decode_cfg(&d, root, &g)) {
        gcfg_free(&g);
        return with_err(err, ND_JSE_INVALID_JSON, d.err);
    }
    bool pedantic = g.pedantic || env->pedantic;
    if (from_request && env->create)
        set_static_metadata(&g);
    if (env->create) {
        if (subj_name && !streq(subj_name, g.name)) {
            gcfg_free(&g);
            return nd_jserr_set(err, ND_JSE_STREAM_MISMATCH, (const char *)NULL);
        }
        if (g.name && strpbrk(g.name, "\\/")) {
            gcfg_free(&g);
            return nd_jserr_set(err, ND_JSE_STREAM_NAME_CONTAINS_PATH_SEPARATORS,
                                (const char *)NULL);
        }
        if (g.sealed) {
            gcfg_free(&g);
            return invalid(err, "stream configuration for create can not be sealed");
        }
        if (g.mirror_direct && !g.mirror) {
            gcfg_free(&g);
            return invalid(err, "stream has no mirror but does have mirror direct");
        }
        if (env->create_limits &&
            !env->create_limits(env->limits_arg, g.name ? g.name : "", g.replicas,
                                g.storage == ST_MEMORY, g.max_bytes, g.max_consumers, err)) {
            gcfg_free(&g);
            return false;
        }
    }
    if (!check_cfg(&g, env, pedantic, err)) {
        gcfg_free(&g);
        return false;
    }
    if (env->create) {
        if (!env->clustered && g.replicas > 1) {
            gcfg_free(&g);
            return nd_jserr_set(err, ND_JSE_STREAM_REPLICAS_NOT_SUPPORTED, (const char *)NULL);
        }
        if (!check_filters(&g, err)) {
            gcfg_free(&g);
            return false;
        }
    } else {
        if (subj_name && !streq(subj_name, g.name)) {
            gcfg_free(&g);
            return nd_jserr_set(err, ND_JSE_STREAM_MISMATCH, (const char *)NULL);
        }
        if (from_request)
            set_static_metadata(&g);
    }
    fill_public(out, &g);
    gcfg_free(&g);
    return true;
}

bool
nd_stream_cfg_parse(const char *body, size_t len, const char *subj_name,
                    const nd_stream_cfg_env_t *env, nd_stream_cfg_t *out, nd_jserr_t *err)
{
    nd_apijson_t aj;
    char e[300];
    if (!nd_apijson_parse(body ? body : "", body ? len : 0, env && env->strict, &aj, e, sizeof e))
        return with_err(err, ND_JSE_INVALID_JSON, e);
    bool ok = parse_root(aj.root, &aj, subj_name, env, true, out, err);
    nd_apijson_free(&aj);
    return ok;
}

bool
nd_stream_cfg_from_json(const json_t *cfg, const char *subj_name, const nd_stream_cfg_env_t *env,
                        nd_stream_cfg_t *out, nd_jserr_t *err)
{
    return parse_root((json_t *)cfg, NULL, subj_name, env, false, out, err);
}

/* Decodes a canonical config (already checked) back into g, without checks. */
static void
decode_canonical(const json_t *j, gcfg_t *g)
{
    nd_gocfg_dec_t d = {0};
    decode_cfg(&d, (json_t *)j, g);
}

/* ---- Comparing and updating -------------------------------------------------------------- */

bool
nd_stream_cfg_equal(const nd_stream_cfg_t *a, const nd_stream_cfg_t *b)
{
    return nd_gocfg_equal(a->json, b->json);
}

bool
nd_stream_cfg_check_update(const nd_stream_cfg_t *old, const nd_stream_cfg_t *upd, nd_jserr_t *err)
{
    if (strcmp(upd->name, old->name))
        return invalid(err, "stream configuration name must match original");
    if (upd->max_consumers != old->max_consumers)
        return invalid(err, "stream configuration update can not change MaxConsumers");
    if (upd->storage != old->storage)
        return invalid(err, "stream configuration update can not change storage type");
    if (upd->retention != old->retention &&
        (old->retention == ND_RETENTION_WORKQUEUE || upd->retention == ND_RETENTION_WORKQUEUE))
        return invalid(err, "stream configuration update can not change retention policy to/from "
                            "workqueue");
    const char *ot = json_string_value(json_object_get(old->json, "template_owner"));
    const char *nt = json_string_value(json_object_get(upd->json, "template_owner"));
    if (!empty(ot))
        return invalid(err, "stream configuration update not allowed on template owned stream");
    if (!empty(nt))
        return invalid(err, "stream configuration update can not be owned by a template");
    if (!upd->sealed && old->sealed)
        return invalid(err, "stream configuration update can not unseal a sealed stream");
    if (!upd->deny_delete && old->deny_delete)
        return invalid(err, "stream configuration update can not cancel deny message deletes");
    if (!upd->deny_purge && old->deny_purge)
        return invalid(err, "stream configuration update can not cancel deny purge");
    json_t *om = json_object_get(old->json, "mirror"), *nm = json_object_get(upd->json, "mirror");
    if ((om || nm) && !(om && nm && json_equal(om, nm)))
        return nd_jserr_set(err, ND_JSE_STREAM_MIRROR_NOT_UPDATABLE, (const char *)NULL);
    if (upd->discard_new_per_subject) {
        if (upd->discard != ND_DISCARD_NEW)
            return invalid(err, "discard new per subject requires discard new policy to be set");
        if (upd->max_msgs_per_subject <= 0)
            return invalid(err, "discard new per subject requires max msgs per subject > 0");
    }
    if (old->allow_msg_ttl && !upd->allow_msg_ttl)
        return invalid(err, "message TTL status can not be disabled");
    return true;
}

void
nd_stream_cfg_apply_sealed(nd_stream_cfg_t *c)
{
    if (!c->sealed)
        return;
    c->max_age_ns = 0;
    c->discard = ND_DISCARD_NEW;
    c->deny_delete = c->deny_purge = true;
    c->allow_rollup = false;
    json_object_set_new(c->json, "max_age", json_integer(0));
    json_object_set_new(c->json, "discard", json_string("new"));
    json_object_set_new(c->json, "deny_delete", json_true());
    json_object_set_new(c->json, "deny_purge", json_true());
    json_object_set_new(c->json, "allow_rollup_hdrs", json_false());
}

/* ---- The rest ---------------------------------------------------------------------------- */

void
nd_stream_cfg_store(const nd_stream_cfg_t *c, nd_store_cfg_t *out)
{
    memset(out, 0, sizeof *out);
    out->max_msgs = c->max_msgs;
    out->max_bytes = c->max_bytes;
    out->max_age_ns = c->max_age_ns;
    out->max_msgs_per_subject = c->max_msgs_per_subject;
    out->max_msg_size = c->max_msg_size;
    out->discard = c->discard;
    out->discard_new_per_subject = c->discard_new_per_subject;
    out->compression = c->compression;
    out->allow_msg_ttl = c->allow_msg_ttl;
}

void
nd_stream_cfg_copy(nd_stream_cfg_t *dst, const nd_stream_cfg_t *src)
{
    gcfg_t g;
    decode_canonical(src->json, &g);
    fill_public(dst, &g);
    gcfg_free(&g);
    /* The canonical JSON is copied as it is (fill_public re-encoded an equal one). */
    json_decref(dst->json);
    dst->json = json_deep_copy(src->json);
}

void
nd_stream_cfg_free(nd_stream_cfg_t *c)
{
    if (!c)
        return;
    json_decref(c->json);
    nd_free(c->name);
    nd_gocfg_strs_free(c->subjects, c->nsubjects);
    nd_free(c->xform_src);
    nd_free(c->xform_dest);
    nd_free(c->republish_src);
    nd_free(c->republish_dest);
    memset(c, 0, sizeof *c);
}
