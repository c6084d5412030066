/* A stream's mirror and sources (nats-server 2.11 stream.go: setupMirrorConsumer,
 * trySetupSourceConsumer, processInboundMirrorMsg, processInboundSourceMsg), on the stream's own
 * turn.
 *
 * For each origin the stream asks the origin's JetStream API, through the ordinary publish path
 * from its own internal client, for an ephemeral push consumer: a request on
 * $JS.API.CONSUMER.CREATE.<origin> (or with the `external.api` prefix in place of $JS.API, or
 * the extended form .CREATE.<origin>.<name>.<filter> when one filter applies), delivering to a
 * fresh inbox the stream subscribes to ($JS.M.<rand> / $JS.S.<rand>, or under
 * `external.deliver`), with flow control, 1 s idle heartbeats, ack none and a start sequence
 * one past what the stream holds of that origin. The subscription is asked for first and the
 * request leaves once it is in place (the internal client's on_ready), so nothing the consumer
 * sends can miss it.
 *
 * Each delivered message carries its origin sequence, consumer sequence and pending count in
 * its $JS.ACK reply subject. A mirror stores it under the origin's sequence and timestamp (a gap
 * becomes deleted sequences, as upstream expiry made it); a source appends it through the
 * stream's publish path with a `Nats-Stream-Source: <name>[:<hash of api>] <seq> <filter>
 * <dest>` header, the 2.10+ form from which a restart finds where each source left off. A
 * consumer sequence that jumps, a heartbeat whose Nats-Last-Consumer differs from what arrived,
 * or ten seconds without a word recreate the consumer from the last sequence held, with
 * nats-server's throttle (2 s between requests) and back-off (5 s per failure, up to 2 min).
 * Flow control requests and the stalled hint of a heartbeat are answered at once.
 */
#include <inttypes.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/consumer_proto.h"
#include "js/js_int.h"
#include "js/jsxform.h"
#include "util/log.h"
#include "util/natshdr.h"

#define NS_PER_S         1000000000LL
#define SRC_HEARTBEAT_NS (1 * NS_PER_S)   /* sourceHealthHB */
#define SRC_STALLED_NS   (10 * NS_PER_S)  /* sourceHealthCheckInterval */
#define SRC_THROTTLE_NS  (2 * NS_PER_S)   /* sourceConsumerRetryThreshold */
#define SRC_BACKOFF_NS   (5 * NS_PER_S)   /* retryBackOff */
#define SRC_BACKOFF_MAX  (120 * NS_PER_S) /* retryMaximum */
#define SRC_RESP_WAIT_NS (30 * NS_PER_S)  /* srcConsumerWaitTime */

typedef enum {
    SRC_IDLE = 0,  /* no consumer; retry_at says when to ask for one */
    SRC_SUBSCRIBE, /* the deliver subject is being subscribed; the request leaves on ready */
    SRC_REQUESTED, /* the create request is out */
    SRC_ACTIVE,    /* the consumer delivers */
} src_state_t;

typedef struct js_src {
    /* from the configuration */
    char *name;          /* the origin stream */
    char *hname;         /* name, or name:<hash of external api> (the header's first field) */
    char *iname;         /* hname <SP> filter(s) <SP> destination(s): the source's identity */
    char *filter;        /* filter_subject, NULL none */
    char **tsrc, **tdst; /* subject_transforms (tdst[i] "" when none) */
    nd_xf_t **xf;
    size_t ntr;
    char *api, *deliver; /* external prefixes, NULL when none */
    bool external;
    uint64_t opt_start_seq;
    char *opt_start_time; /* RFC 3339 as configured, NULL none */

    /* the link */
    src_state_t state;
    char *dsubj;   /* the deliver subject subscribed, NULL none */
    char *cname;   /* the current consumer's name (chosen by the request) */
    bool linked;   /* its create response or first delivery came */
    uint32_t gen;  /* the request's number, in its reply subject */
    uint64_t sseq; /* the last origin sequence held */
    uint64_t dseq; /* the last consumer sequence seen */
    uint64_t lag;
    int64_t last; /* when a message last came (Unix ns), 0 never */
    int64_t lreq; /* when the last request left, 0 never */
    int64_t retry_at, deadline;
    int fails;
    json_t *err; /* the last error (ApiError), NULL none */
} js_src_t;

struct js_srcs {
    bool mirror;
    js_src_t *v;
    size_t n;
    char reply_pfx[32]; /* "$JSC.R.<rand>": replies arrive on <pfx>.<index>.<gen> */
    bool started;
};

/* ---- helpers ---- */

static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static void
rand_token(nd_ctx_t *ctx, char *out, size_t n)
{
    uint64_t r = nd_ctx_rand(ctx);
    for (size_t i = 0; i < n; i++) {
        out[i] = digits[r % 62];
        r /= 62;
        if (r == 0)
            r = nd_ctx_rand(ctx);
    }
    out[n] = '\0';
}

/* nats-server's getHash: 8 characters from SHA-256 of name. */
static void
go_hash(const char *name, char out[9])
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)name, strlen(name), h);
    for (int i = 0; i < 8; i++)
        out[i] = digits[h[i] % 62];
    out[8] = '\0';
}

static char *
str_or_null(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL && s[0] != '\0' ? nd_xstrdup(s) : NULL;
}

/* Replaces every ".." with "." (nats-server's strings.ReplaceAll(s, "..", ".")). */
static void
squash_dots(char *s)
{
    char *w = s;
    for (const char *r = s; *r != '\0'; r++) {
        if (r[0] == '.' && r[1] == '.')
            continue;
        *w++ = *r;
    }
    *w = '\0';
}

static void
src_init(js_src_t *s, const json_t *j)
{
    memset(s, 0, sizeof *s);
    s->name = nd_xstrdup(json_string_value(json_object_get(j, "name")) ?: "");
    s->filter = str_or_null(j, "filter_subject");
    s->opt_start_seq = (uint64_t)json_integer_value(json_object_get(j, "opt_start_seq"));
    s->opt_start_time = str_or_null(j, "opt_start_time");
    const json_t *ext = json_object_get(j, "external");
    if (json_is_object(ext)) {
        s->external = true;
        s->api = str_or_null(ext, "api");
        s->deliver = str_or_null(ext, "deliver");
    }
    const json_t *trs = json_object_get(j, "subject_transforms");
    size_t ntr = json_is_array(trs) ? json_array_size(trs) : 0;
    if (ntr > 0) {
        s->tsrc = nd_xcalloc(ntr, sizeof(char *));
        s->tdst = nd_xcalloc(ntr, sizeof(char *));
        s->xf = nd_xcalloc(ntr, sizeof(nd_xf_t *));
        for (size_t i = 0; i < ntr; i++) {
            const json_t *t = json_array_get(trs, i);
            s->tsrc[i] = nd_xstrdup(json_string_value(json_object_get(t, "src")) ?: "");
            s->tdst[i] = nd_xstrdup(json_string_value(json_object_get(t, "dest")) ?: "");
        }
        s->ntr = ntr;
    }
    /* composeIName */
    char h[9];
    go_hash(s->api != NULL ? s->api : "", h);
    size_t cap = strlen(s->name) + 16;
    s->hname = nd_xmalloc(cap);
    if (s->external)
        snprintf(s->hname, cap, "%s:%s", s->name, h);
    else
        snprintf(s->hname, cap, "%s", s->name);
    size_t need = strlen(s->hname) + 8 + (s->filter ? strlen(s->filter) : 0);
    for (size_t i = 0; i < ntr; i++)
        need += strlen(s->tsrc[i]) + strlen(s->tdst[i]) + 6;
    s->iname = nd_xmalloc(need);
    char *p = s->iname;
    p += sprintf(p, "%s ", s->hname);
    if (ntr == 0) {
        p += sprintf(p, "%s >", s->filter != NULL ? s->filter : ">");
    } else {
        for (size_t i = 0; i < ntr; i++)
            p += sprintf(p, "%s%s", i ? "\f" : "", s->tsrc[i][0] ? s->tsrc[i] : ">");
        *p++ = ' ';
        for (size_t i = 0; i < ntr; i++)
            p += sprintf(p, "%s%s", i ? "\f" : "", s->tdst[i][0] ? s->tdst[i] : ">");
    }
}

static void
src_free(js_src_t *s)
{
    nd_free(s->name);
    nd_free(s->hname);
    nd_free(s->iname);
    nd_free(s->filter);
    for (size_t i = 0; i < s->ntr; i++) {
        nd_free(s->tsrc[i]);
        nd_free(s->tdst[i]);
        nd_xf_free(s->xf[i]);
    }
    nd_free(s->tsrc);
    nd_free(s->tdst);
    nd_free(s->xf);
    nd_free(s->api);
    nd_free(s->deliver);
    nd_free(s->opt_start_time);
    nd_free(s->dsubj);
    nd_free(s->cname);
    if (s->err != NULL)
        json_decref(s->err);
}

/* Drops the current consumer link: the deliver subscription goes (the consumer upstream then
 * has no interest and goes after its inactive threshold), late messages are ignored. */
static void
src_cancel(nd_ctx_t *ctx, nd_stream_t *st, js_src_t *s)
{
    if (s->dsubj != NULL) {
        if (st->ic != NULL)
            nd_iclient_unsubscribe(ctx, st->ic, s->dsubj);
        nd_free(s->dsubj);
        s->dsubj = NULL;
    }
    nd_free(s->cname);
    s->cname = NULL;
    s->linked = false;
    s->state = SRC_IDLE;
    s->deadline = 0;
}

/* Schedules a new consumer: not sooner than 2 s after the last request, plus the back-off of
 * the failures so far and 100-200 ms of jitter (nats-server's setupSourceConsumer). */
static void
src_retry(nd_ctx_t *ctx, nd_stream_t *st, js_src_t *s)
{
    src_cancel(ctx, st, s);
    int64_t now = js_now(), next = now;
    if (s->lreq != 0 && now - s->lreq < SRC_THROTTLE_NS)
        next = s->lreq + SRC_THROTTLE_NS;
    if (s->fails > 0) {
        int64_t b = SRC_BACKOFF_NS * 2 * s->fails;
        next += b > SRC_BACKOFF_MAX ? SRC_BACKOFF_MAX : b;
    }
    next += 100000000LL + (int64_t)(nd_ctx_rand(ctx) % 100000000ULL);
    s->retry_at = next;
    js_stream_arm(ctx, st, next);
}

/* ---- where each origin left off ---- */

static uint64_t
parse_num(const char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    return v;
}

/* Walks the stream back from its last message and sets each source's sseq from the newest
 * Nats-Stream-Source header that names it (nats-server's startingSequenceForSources): the 2.10+
 * form "<name> <seq> <filter> <dest>" names one source; the older "<name> <seq>" every source of
 * that origin. */
static void
sources_recover(nd_stream_t *st, js_srcs_t *S)
{
    nd_store_state_t state;
    nd_store_state(st->store, &state);
    if (state.msgs == 0)
        return;
    size_t left = S->n;
    bool *done = nd_xcalloc(S->n, sizeof(bool));
    nd_store_msg_t m = {0};
    for (uint64_t seq = state.last_seq; seq >= state.first_seq && seq > 0 && left > 0; seq--) {
        if (nd_store_load(st->store, seq, &m) != ND_OK || m.hdr_len == 0)
            continue;
        size_t n;
        const char *v = nd_hdr_get(m.hdr, m.hdr_len, "Nats-Stream-Source", &n);
        if (v == NULL)
            continue;
        /* split on spaces */
        const char *f[8];
        size_t fl[8], nf = 0;
        const char *p = v, *end = v + n;
        while (p < end && nf < 8) {
            const char *sp = memchr(p, ' ', (size_t)(end - p));
            const char *e = sp != NULL ? sp : end;
            f[nf] = p;
            fl[nf++] = (size_t)(e - p);
            p = sp != NULL ? sp + 1 : end;
        }
        if (nf < 2 || nf == 3)
            continue;
        uint64_t sseq = parse_num(f[1], fl[1]);
        for (size_t i = 0; i < S->n; i++) {
            js_src_t *s = &S->v[i];
            if (done[i])
                continue;
            bool match;
            if (nf >= 4) {
                size_t il = strlen(s->iname);
                match = il == fl[0] + fl[2] + fl[3] + 2 && memcmp(s->iname, f[0], fl[0]) == 0 &&
                        s->iname[fl[0]] == ' ' && memcmp(s->iname + fl[0] + 1, f[2], fl[2]) == 0 &&
                        s->iname[fl[0] + 1 + fl[2]] == ' ' &&
                        memcmp(s->iname + fl[0] + 2 + fl[2], f[3], fl[3]) == 0;
            } else {
                match = strlen(s->hname) == fl[0] && memcmp(s->hname, f[0], fl[0]) == 0;
            }
            if (match) {
                s->sseq = sseq;
                done[i] = true;
                left--;
            }
        }
    }
    nd_store_msg_free(&m);
    nd_free(done);
}

/* ---- the create request ---- */

static void
send_request(nd_ctx_t *ctx, nd_stream_t *st, js_srcs_t *S, size_t idx)
{
    js_src_t *s = &S->v[idx];
    nd_store_state_t state;
    nd_store_state(st->store, &state);
    json_t *c = json_object();
    json_object_set_new(c, "deliver_subject", json_string(s->dsubj));
    const char *policy = "by_start_sequence";
    uint64_t start = 0;
    const char *start_time = NULL;
    if (S->mirror) {
        s->sseq = state.last_seq; /* what is held, whatever arrived before */
        start = state.last_seq + 1;
        if (state.last_seq == 0) { /* never held anything: the configured start applies */
            start = 0;
            if (s->opt_start_seq > 0)
                start = s->opt_start_seq;
            else if (s->opt_start_time != NULL)
                start_time = s->opt_start_time;
        }
        if (start == 0 && start_time == NULL)
            policy = "all";
    } else {
        uint64_t seq = s->sseq + 1;
        if (seq <= 1) {
            if (s->opt_start_seq > 0)
                start = s->opt_start_seq;
            else if (s->opt_start_time != NULL)
                start_time = s->opt_start_time;
            else
                policy = "all";
        } else {
            start = seq;
        }
    }
    if (start_time != NULL) {
        policy = "by_start_time";
        json_object_set_new(c, "deliver_policy", json_string(policy));
        json_object_set_new(c, "opt_start_time", json_string(start_time));
    } else {
        json_object_set_new(c, "deliver_policy", json_string(policy));
        if (start > 0)
            json_object_set_new(c, "opt_start_seq", json_integer((json_int_t)start));
    }
    json_object_set_new(c, "ack_policy", json_string("none"));
    json_object_set_new(c, "ack_wait", json_integer(22 * 3600 * NS_PER_S));
    json_object_set_new(c, "max_deliver", json_integer(1));
    json_object_set_new(c, "idle_heartbeat", json_integer(SRC_HEARTBEAT_NS));
    json_object_set_new(c, "flow_control", json_true());
    json_object_set_new(c, "direct", json_true());
    json_object_set_new(c, "inactive_threshold", json_integer(SRC_STALLED_NS));
    /* Filters: one goes in the extended create subject (with a name), several in
     * filter_subjects. */
    /* The consumer's name is chosen here (as nats-server does for a filtered one), so its
     * deliveries are known by their $JS.ACK reply even before the create response comes. */
    char tok[9], name[32];
    rand_token(ctx, tok, 8);
    snprintf(name, sizeof name, "%s-%s", S->mirror ? "mirror" : "src", tok);
    nd_free(s->cname);
    s->cname = nd_xstrdup(name);
    s->linked = false;
    s->dseq = 0; /* a new consumer counts its deliveries from 1 */
    json_object_set_new(c, "name", json_string(name));
    const char *one = s->filter;
    if (one == NULL && s->ntr == 1) {
        one = s->tsrc[0][0] != '\0' ? s->tsrc[0] : ">";
    } else if (one == NULL && s->ntr > 1) {
        json_t *fs = json_array();
        for (size_t i = 0; i < s->ntr; i++)
            json_array_append_new(fs, json_string(s->tsrc[i][0] != '\0' ? s->tsrc[i] : ">"));
        json_object_set_new(c, "filter_subjects", fs);
    }
    char subj[1024];
    if (one != NULL) {
        json_object_set_new(c, "filter_subject", json_string(one));
        snprintf(subj, sizeof subj, "%s.CONSUMER.CREATE.%s.%s.%s",
                 s->api != NULL ? s->api : "$JS.API", s->name, name, one);
    } else {
        snprintf(subj, sizeof subj, "%s.CONSUMER.CREATE.%s", s->api != NULL ? s->api : "$JS.API",
                 s->name);
    }
    squash_dots(subj);
    json_t *req = json_object();
    json_object_set_new(req, "stream_name", json_string(s->name));
    json_object_set_new(req, "config", c);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char reply[64];
    s->gen++;
    snprintf(reply, sizeof reply, "%s.%zu.%" PRIu32, S->reply_pfx, idx, s->gen);
    /* (deliver: to learn whether anyone listens; at a start the origin's API service may not
     * be up yet, e.g. while the server recovers its streams) */
    uint32_t matched = nd_iclient_deliver(ctx, st->ic, subj, subj, strlen(subj), reply, NULL, 0,
                                          body, strlen(body));
    free(body);
    s->lreq = js_now();
    if (matched == 0) {
        src_retry(ctx, st, s); /* no responders: again after the throttle, not a failure */
        return;
    }
    s->state = SRC_REQUESTED;
    s->deadline = s->lreq + SRC_RESP_WAIT_NS;
    js_stream_arm(ctx, st, s->deadline);
}

/* Subscribes a fresh deliver subject; the request leaves once it is in place. */
static void
src_setup(nd_ctx_t *ctx, nd_stream_t *st, js_srcs_t *S, js_src_t *s)
{
    src_cancel(ctx, st, s);
    s->retry_at = 0;
    char tok[9];
    rand_token(ctx, tok, 8);
    const char *kind = S->mirror ? "M" : "S";
    size_t cap = (s->deliver != NULL ? strlen(s->deliver) : 4) + 16;
    s->dsubj = nd_xmalloc(cap);
    if (s->deliver != NULL)
        snprintf(s->dsubj, cap, "%s.%s.%s", s->deliver, kind, tok);
    else
        snprintf(s->dsubj, cap, "$JS.%s.%s", kind, tok);
    squash_dots(s->dsubj);
    s->state = SRC_SUBSCRIBE;
    s->lreq = js_now();
    nd_iclient_subscribe(ctx, st->ic, s->dsubj);
}

/* ---- lifecycle (the stream's turn) ---- */

void
js_sources_start(nd_ctx_t *ctx, nd_stream_t *st)
{
    if (st->srcs != NULL || st->store == NULL || st->stopped || st->ic == NULL)
        return;
    const json_t *cfg = st->cfg.json;
    const json_t *mirror = json_object_get(cfg, "mirror");
    const json_t *sources = json_object_get(cfg, "sources");
    size_t n = json_is_object(mirror) ? 1 : json_is_array(sources) ? json_array_size(sources) : 0;
    if (n == 0)
        return;
    js_srcs_t *S = nd_xcalloc(1, sizeof *S);
    S->mirror = json_is_object(mirror);
    S->n = n;
    S->v = nd_xcalloc(n, sizeof(js_src_t));
    for (size_t i = 0; i < n; i++)
        src_init(&S->v[i], S->mirror ? mirror : json_array_get(sources, i));
    char tok[9];
    rand_token(ctx, tok, 8);
    snprintf(S->reply_pfx, sizeof S->reply_pfx, "$JSC.R.%s", tok);
    st->srcs = S;
    if (S->mirror) {
        nd_store_state_t state;
        nd_store_state(st->store, &state);
        S->v[0].sseq = state.last_seq;
    } else {
        sources_recover(st, S);
    }
    char sub[48];
    snprintf(sub, sizeof sub, "%s.>", S->reply_pfx);
    nd_iclient_subscribe(ctx, st->ic, sub);
    for (size_t i = 0; i < n; i++)
        src_setup(ctx, st, S, &S->v[i]);
    S->started = true;
}

void
js_sources_ready(nd_ctx_t *ctx, nd_stream_t *st)
{
    js_srcs_t *S = st->srcs;
    if (S == NULL) {
        js_sources_start(ctx, st);
        return;
    }
    for (size_t i = 0; i < S->n; i++)
        if (S->v[i].state == SRC_SUBSCRIBE)
            send_request(ctx, st, S, i);
}

void
js_sources_stop(nd_ctx_t *ctx, nd_stream_t *st, bool unsubscribe)
{
    js_srcs_t *S = st->srcs;
    if (S == NULL)
        return;
    for (size_t i = 0; i < S->n; i++) {
        if (unsubscribe)
            src_cancel(ctx, st, &S->v[i]);
        src_free(&S->v[i]);
    }
    if (unsubscribe && st->ic != NULL) {
        char sub[48];
        snprintf(sub, sizeof sub, "%s.>", S->reply_pfx);
        nd_iclient_unsubscribe(ctx, st->ic, sub);
    }
    nd_free(S->v);
    nd_free(S);
    st->srcs = NULL;
}

int64_t
js_sources_tick(nd_ctx_t *ctx, nd_stream_t *st, int64_t now)
{
    js_srcs_t *S = st->srcs;
    if (S == NULL || st->stopped || st->store == NULL)
        return 0;
    int64_t next = 0;
    for (size_t i = 0; i < S->n; i++) {
        js_src_t *s = &S->v[i];
        switch (s->state) {
        case SRC_IDLE:
            if (s->retry_at != 0 && now >= s->retry_at)
                src_setup(ctx, st, S, s);
            break;
        case SRC_REQUESTED:
            if (now >= s->deadline) {
                nd_log_warn("JetStream no response to the %s consumer request of stream '%s > %s' "
                            "for '%s'",
                            S->mirror ? "mirror" : "source", nd_acct_name(st->jsa->acct), st->name,
                            s->name);
                s->fails++;
                src_retry(ctx, st, s);
            }
            break;
        case SRC_ACTIVE:
            if (now - s->last >= SRC_STALLED_NS) {
                nd_log_debug("JetStream %s '%s' of stream '%s > %s' stalled: recreating its "
                             "consumer",
                             S->mirror ? "mirror" : "source", s->name, nd_acct_name(st->jsa->acct),
                             st->name);
                src_retry(ctx, st, s);
            }
            break;
        case SRC_SUBSCRIBE:
            break;
        }
        int64_t d = 0;
        if (s->state == SRC_IDLE)
            d = s->retry_at;
        else if (s->state == SRC_REQUESTED)
            d = s->deadline;
        else if (s->state == SRC_ACTIVE)
            d = s->last + SRC_STALLED_NS;
        if (d != 0 && (next == 0 || d < next))
            next = d;
    }
    return next;
}

/* ---- what arrives ---- */

static void
on_response(nd_ctx_t *ctx, nd_stream_t *st, js_srcs_t *S, const nd_imsg_t *m)
{
    /* <pfx>.<index>.<gen> */
    size_t pl = strlen(S->reply_pfx);
    char tail[48];
    size_t tl = m->subject_len - pl - 1;
    if (tl >= sizeof tail)
        return;
    memcpy(tail, m->subject + pl + 1, tl);
    tail[tl] = '\0';
    char *dot = strchr(tail, '.');
    if (dot == NULL)
        return;
    *dot = '\0';
    size_t idx = (size_t)strtoull(tail, NULL, 10);
    uint32_t gen = (uint32_t)strtoul(dot + 1, NULL, 10);
    if (idx >= S->n)
        return;
    js_src_t *s = &S->v[idx];
    if (s->state != SRC_REQUESTED || gen != s->gen)
        return; /* an answer to a request given up on */
    json_t *j = json_loadb(m->data, m->data_len, 0, NULL);
    json_t *e = json_object_get(j, "error");
    const json_t *ci = j;
    const char *cname = json_string_value(json_object_get(ci, "name"));
    if (s->err != NULL)
        json_decref(s->err);
    s->err = NULL;
    if (j == NULL || e != NULL || cname == NULL) {
        if (e != NULL) {
            s->err = json_deep_copy(e);
        } else {
            nd_jserr_t err;
            nd_jserr_set(&err, ND_JSE_INVALID_JSON, "err", "bad consumer create response", NULL);
            s->err = nd_jserr_json(&err);
        }
        char *d = e != NULL ? json_dumps(e, JSON_COMPACT) : NULL;
        nd_log_warn("JetStream error response for stream '%s > %s' create %s consumer for '%s': "
                    "%s",
                    nd_acct_name(st->jsa->acct), st->name, S->mirror ? "mirror" : "source", s->name,
                    d != NULL ? d : "invalid response");
        free(d);
        json_decref(j);
        s->fails++;
        src_retry(ctx, st, s);
        return;
    }
    uint64_t delivered = (uint64_t)json_integer_value(
        json_object_get(json_object_get(ci, "delivered"), "stream_seq"));
    s->fails = 0;
    s->state = SRC_ACTIVE;
    s->last = js_now();
    js_stream_arm(ctx, st, s->last + SRC_STALLED_NS);
    json_decref(j);
    if (s->linked)
        return; /* deliveries came before the answer and set the link up already */
    s->linked = true;
    if (S->mirror) {
        nd_store_state_t state;
        nd_store_state(st->store, &state);
        /* The origin has nothing before `delivered` any more: an empty mirror starts past it
         * (the messages in between are skipped as they arrive). */
        if (state.last_seq != delivered && state.msgs == 0 && delivered > state.last_seq) {
            uint64_t purged;
            if (st->store->ops->compact(st->store, delivered + 1, &purged) == ND_OK)
                st->dirty = true;
        }
    }
    /* Where the consumer starts: the next message it sends follows this origin sequence. */
    s->sseq = delivered;
    s->dseq = 0;
}

/* A copy of hdr without the lines whose key is drop_key and those starting with
 * "Nats-Expected-", with "add_key: add_val" appended when add_key is set. Returns: malloc'd (or
 * NULL when the result is empty), its length in *out_len. */
static char *
edit_hdr(const char *hdr, size_t hl, const char *drop_key, const char *add_key, const char *add_val,
         size_t *out_len)
{
    size_t cap = hl + 32 + (add_key ? strlen(add_key) + strlen(add_val) + 4 : 0);
    char *out = nd_xmalloc(cap);
    size_t o = 0;
    bool any = false;
    if (hl > 0) {
        const char *p = hdr, *end = hdr + hl;
        bool first = true;
        while (p < end) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            const char *next = eol != NULL ? eol + 1 : end;
            size_t len = (size_t)(next - p);
            bool blank = len <= 2 && (p[0] == '\r' || p[0] == '\n');
            bool drop = blank;
            if (!first && !blank) {
                if (len > 14 && memcmp(p, "Nats-Expected-", 14) == 0)
                    drop = true;
                size_t kl = drop_key ? strlen(drop_key) : 0;
                if (kl > 0 && len > kl && memcmp(p, drop_key, kl) == 0 && p[kl] == ':')
                    drop = true;
            }
            if (!drop) {
                memcpy(out + o, p, len);
                o += len;
                if (!first)
                    any = true;
            }
            first = false;
            p = next;
        }
    }
    if (o == 0)
        o = (size_t)sprintf(out, "NATS/1.0\r\n");
    if (add_key != NULL) {
        o += (size_t)sprintf(out + o, "%s: %s\r\n", add_key, add_val);
        any = true;
    }
    if (!any) {
        nd_free(out);
        *out_len = 0;
        return NULL;
    }
    o += (size_t)sprintf(out + o, "\r\n");
    *out_len = o;
    return out;
}

/* The subject a source's or mirror's transforms make of subj (the first that matches). */
static const char *
transform(js_src_t *s, const nd_imsg_t *m, char *buf, size_t cap, size_t *len)
{
    *len = m->subject_len;
    for (size_t i = 0; i < s->ntr; i++) {
        if (s->tdst[i][0] == '\0')
            continue;
        const char *src = s->tsrc[i][0] ? s->tsrc[i] : ">";
        if (js_xform(&s->xf[i], src, s->tdst[i], m->subject, m->subject_len, buf, cap)) {
            *len = strlen(buf);
            return buf;
        }
    }
    return m->subject;
}

static void
mirror_store(nd_ctx_t *ctx, nd_stream_t *st, js_src_t *s, const nd_imsg_t *m, uint64_t sseq,
             int64_t ts)
{
    (void)ctx;
    size_t hl = 0;
    char *hdr = m->hdr_len > 0 ? edit_hdr(m->hdr, m->hdr_len, NULL, NULL, NULL, &hl) : NULL;
    char xb[1024];
    size_t sl;
    const char *subj = transform(s, m, xb, sizeof xb, &sl);
    nd_err_t e =
        st->store->ops->store_raw(st->store, sseq, ts, subj, sl, hdr, hl, m->data, m->data_len);
    nd_free(hdr);
    if (e != ND_OK) {
        if (e == ND_ERR_STORE_IO)
            st->write_errno = nd_store_io_errno(st->store) ?: 5;
        nd_log_warn("JetStream error processing inbound mirror message for '%s' > '%s': %s",
                    nd_acct_name(st->jsa->acct), st->name, nd_strerror(e));
        return;
    }
    st->dirty = true;
    if (st->turn_first_seq == 0)
        st->turn_first_seq = sseq;
}

static void
on_deliver(nd_ctx_t *ctx, nd_stream_t *st, js_srcs_t *S, js_src_t *s, const nd_imsg_t *m)
{
    /* The consumer may deliver before its create response gets here: the deliver subject is
     * this request's alone, so what comes on it is that consumer's. */
    if (s->state != SRC_ACTIVE && s->state != SRC_REQUESTED)
        return;
    s->last = js_now();
    size_t hl = m->hdr != NULL ? m->hdr_len : 0;
    if (m->data_len == 0 && hl > 13 && memcmp(m->hdr, "NATS/1.0 100 ", 13) == 0) {
        if (m->reply_len > 0) { /* flow control */
            nd_iclient_publish(ctx, st->ic, m->reply, NULL, NULL, 0, "", 0);
            return;
        }
        size_t n;
        const char *v = nd_hdr_get(m->hdr, hl, "Nats-Last-Consumer", &n);
        uint64_t ld = v != NULL ? parse_num(v, n) : 0;
        if (ld > 0 && ld != s->dseq && s->state == SRC_ACTIVE) {
            /* something was missed: start again from what is held */
            src_retry(ctx, st, s);
            return;
        }
        v = nd_hdr_get(m->hdr, hl, "Nats-Consumer-Stalled", &n);
        if (v != NULL && n > 0) {
            char to[256];
            if (n < sizeof to) {
                memcpy(to, v, n);
                to[n] = '\0';
                nd_iclient_publish(ctx, st->ic, to, NULL, NULL, 0, "", 0);
            }
        }
        return;
    }
    js_ack_subj_t a;
    if (!js_ack_subj_parse(m->reply, m->reply_len, &a))
        return;
    if (s->cname == NULL || a.consumer_len != strlen(s->cname) ||
        memcmp(a.consumer, s->cname, a.consumer_len) != 0)
        return; /* not from the current consumer */
    bool first = !s->linked;
    if (first) {
        /* before the create response: the link starts with this message */
        s->linked = true;
        s->state = SRC_ACTIVE;
        s->fails = 0;
        js_stream_arm(ctx, st, s->last + SRC_STALLED_NS);
    }
    if (a.delivered > 1)
        return;
    if (S->mirror) {
        if (first && a.sseq > s->sseq) {
            s->dseq = a.dseq;
            s->sseq = a.sseq;
        } else if (a.sseq == s->sseq + 1) {
            s->dseq = a.dseq;
            s->sseq++;
        } else if (a.sseq <= s->sseq) {
            return; /* older */
        } else if (a.dseq == s->dseq + 1) {
            /* the origin expired or deleted what is in between: store_raw makes it a gap */
            s->dseq++;
            s->sseq = a.sseq;
        } else {
            src_retry(ctx, st, s);
            return;
        }
        s->lag = a.pending > 0 ? a.pending - 1 : 0;
        nd_store_state_t state;
        nd_store_state(st->store, &state);
        if (a.sseq <= state.last_seq)
            return; /* held already */
        mirror_store(ctx, st, s, m, a.sseq, a.ts);
        return;
    }
    if (a.dseq == s->dseq + 1 || (first && a.dseq > s->dseq)) {
        s->dseq = a.dseq;
        s->sseq = a.sseq;
    } else if (a.dseq > s->dseq) {
        src_retry(ctx, st, s);
        return;
    } else {
        return;
    }
    s->lag = a.pending > 0 ? a.pending - 1 : 0;
    char val[512];
    snprintf(val, sizeof val, "%s %" PRIu64 " %s", s->hname, a.sseq,
             strchr(s->iname + strlen(s->hname), ' ') + 1);
    /* the value is "<hname> <seq> <filter> <dest>": the iname with the sequence inserted */
    size_t nhl;
    char *hdr = edit_hdr(m->hdr, hl, "Nats-Stream-Source", "Nats-Stream-Source", val, &nhl);
    char xb[1024];
    size_t sl;
    const char *subj = transform(s, m, xb, sizeof xb, &sl);
    nd_imsg_t pm = *m;
    pm.subject = subj;
    pm.subject_len = sl;
    pm.reply = "";
    pm.reply_len = 0;
    pm.hdr = hdr;
    pm.hdr_len = nhl;
    js_stream_publish(ctx, st, &pm);
    nd_free(hdr);
}

bool
js_sources_msg(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    js_srcs_t *S = st->srcs;
    if (S == NULL)
        return false;
    size_t pl = strlen(S->reply_pfx);
    if (m->subject_len > pl + 1 && memcmp(m->subject, S->reply_pfx, pl) == 0 &&
        m->subject[pl] == '.') {
        on_response(ctx, st, S, m);
        return true;
    }
    for (size_t i = 0; i < S->n; i++) {
        js_src_t *s = &S->v[i];
        if (s->dsubj != NULL && strlen(s->dsubj) == m->subject_len &&
            memcmp(s->dsubj, m->subject, m->subject_len) == 0) {
            on_deliver(ctx, st, S, s, m);
            return true;
        }
    }
    /* A delivery shows the message's own subject: it is known by its reply,
     * $JS.ACK.<origin>.<consumer>.... */
    if (m->reply_len > 8 && memcmp(m->reply, "$JS.ACK.", 8) == 0) {
        js_ack_subj_t a;
        if (js_ack_subj_parse(m->reply, m->reply_len, &a)) {
            for (size_t i = 0; i < S->n; i++) {
                js_src_t *s = &S->v[i];
                if (s->cname != NULL && strlen(s->cname) == a.consumer_len &&
                    memcmp(s->cname, a.consumer, a.consumer_len) == 0 &&
                    strlen(s->name) == a.stream_len &&
                    memcmp(s->name, a.stream, a.stream_len) == 0) {
                    on_deliver(ctx, st, S, s, m);
                    return true;
                }
            }
            /* a consumer given up on: its late deliveries are not publishes */
            for (size_t i = 0; i < S->n; i++)
                if (strlen(S->v[i].name) == a.stream_len &&
                    memcmp(S->v[i].name, a.stream, a.stream_len) == 0)
                    return true;
        }
    }
    /* A deliver subject given up on (late messages after its unsubscribe). */
    const char *kind = S->mirror ? ".M." : ".S.";
    for (size_t i = 0; i < S->n; i++) {
        const char *pfx = S->v[i].deliver != NULL ? S->v[i].deliver : "$JS";
        size_t l = strlen(pfx);
        if (m->subject_len > l + 3 && memcmp(m->subject, pfx, l) == 0 &&
            memcmp(m->subject + l, kind, 3) == 0)
            return true;
    }
    return false;
}

/* ---- stream info ---- */

static json_t *
src_info(const js_srcs_t *S, const js_src_t *s, int64_t now)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(s->name));
    if (s->external) {
        json_t *x = json_object();
        json_object_set_new(x, "api", json_string(s->api ? s->api : ""));
        json_object_set_new(x, "deliver", json_string(s->deliver ? s->deliver : ""));
        json_object_set_new(o, "external", x);
    }
    json_object_set_new(o, "lag", json_integer((json_int_t)s->lag));
    json_object_set_new(o, "active", json_integer(s->last == 0 ? -1 : now - s->last));
    if (s->err != NULL)
        json_object_set_new(o, "error", json_deep_copy(s->err));
    if (s->filter != NULL && (S->mirror || s->ntr == 0))
        json_object_set_new(o, "filter_subject", json_string(s->filter));
    if (s->ntr > 0) {
        json_t *a = json_array();
        for (size_t i = 0; i < s->ntr; i++) {
            json_t *t = json_object();
            json_object_set_new(t, "src", json_string(s->tsrc[i]));
            json_object_set_new(t, "dest", json_string(s->tdst[i]));
            json_array_append_new(a, t);
        }
        json_object_set_new(o, "subject_transforms", a);
    }
    return o;
}

void
js_sources_info(nd_stream_t *st, json_t *info)
{
    const js_srcs_t *S = st->srcs;
    if (S == NULL)
        return;
    int64_t now = js_now();
    if (S->mirror) {
        json_object_set_new(info, "mirror", src_info(S, &S->v[0], now));
        return;
    }
    json_t *a = json_array();
    for (size_t i = 0; i < S->n; i++)
        json_array_append_new(a, src_info(S, &S->v[i], now));
    json_object_set_new(info, "sources", a);
}
