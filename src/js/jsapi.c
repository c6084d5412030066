/* An account's JetStream API service: the $JS.API.> requests that concern the account as a
 * whole (INFO, stream create/update/delete, names, list) run here, on the service's turn; the
 * ones about one stream (info, purge, message get and delete) are forwarded to that stream's
 * actor, which owns the store. This service is the only writer of the stream table, so creates
 * and deletes are ordered and the subject-overlap check sees every stream.
 * Reference: nats-server server/jetstream_api.go (jsAccountInfoRequest, jsStreamCreateRequest,
 * jsStreamUpdateRequest, jsStreamNamesRequest, jsStreamListRequest, jsStreamDeleteRequest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/js_int.h"
#include "js/jsreq.h"
#include "subj/subject.h"
#include "util/evid.h"
#include "util/log.h"

#define JS_NAMES_LIMIT 1024
#define JS_LIST_LIMIT  256
#define JS_NAME_BUF    1024 /* longer than any valid name, so that a long one gets its error */

/* ---- the stream table (writer: this service's turn, under mu) ---- */

static size_t
table_pos(nd_jsa_t *jsa, const char *name, bool *found)
{
    size_t lo = 0, hi = jsa->nstreams;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(jsa->streams[mid]->name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

nd_stream_t *
jsa_find(nd_jsa_t *jsa, const char *name)
{
    bool found;
    size_t i = table_pos(jsa, name, &found);
    return found ? jsa->streams[i] : NULL;
}

void
jsa_insert(nd_jsa_t *jsa, nd_stream_t *st)
{
    pthread_mutex_lock(&jsa->mu);
    bool found;
    size_t i = table_pos(jsa, st->name, &found);
    if (jsa->nstreams == jsa->cap) {
        jsa->cap = jsa->cap ? jsa->cap * 2 : 16;
        jsa->streams = nd_xrealloc(jsa->streams, jsa->cap * sizeof(*jsa->streams));
    }
    memmove(&jsa->streams[i + 1], &jsa->streams[i], (jsa->nstreams - i) * sizeof(*jsa->streams));
    jsa->streams[i] = st;
    jsa->nstreams++;
    pthread_mutex_unlock(&jsa->mu);
    js_limits_reserve(jsa->js, st->acfg.storage == ND_STORAGE_MEMORY, st->acfg.max_bytes, 1);
}

void
jsa_remove(nd_jsa_t *jsa, nd_stream_t *st)
{
    pthread_mutex_lock(&jsa->mu);
    bool found;
    size_t i = table_pos(jsa, st->name, &found);
    if (found) {
        memmove(&jsa->streams[i], &jsa->streams[i + 1],
                (jsa->nstreams - i - 1) * sizeof(*jsa->streams));
        jsa->nstreams--;
    }
    pthread_mutex_unlock(&jsa->mu);
    if (found)
        js_limits_reserve(jsa->js, st->acfg.storage == ND_STORAGE_MEMORY, st->acfg.max_bytes, -1);
}

/* ---- requests ---- */

typedef struct api_req {
    nd_ctx_t *ctx;
    nd_iclient_t *ic;
    nd_jsa_t *jsa;
    const nd_imsg_t *m;
    const char *reply;
    const char *op;   /* after "$JS.API." */
    const char *name; /* the stream name token, or NULL */
} api_req_t;

static void
fail(api_req_t *r, const char *what, const nd_jserr_t *err)
{
    atomic_fetch_add_explicit(&r->jsa->api_errors, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->jsa->js->api_errors, 1, memory_order_relaxed);
    json_t *o = js_resp(what);
    js_resp_error(o, err);
    js_paged_error_fields(o, what);
    js_send(r->ctx, r->ic, r->reply, o);
}

static void
fail_code(api_req_t *r, const char *what, nd_jse_t e)
{
    nd_jserr_t err;
    nd_jserr_set(&err, e, NULL);
    fail(r, what, &err);
}

static json_t *
limits_json(const nd_acct_js_t *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "max_memory", json_integer(l->max_memory));
    json_object_set_new(o, "max_storage", json_integer(l->max_store));
    json_object_set_new(o, "max_streams", json_integer(l->max_streams));
    json_object_set_new(o, "max_consumers", json_integer(l->max_consumers));
    json_object_set_new(o, "max_ack_pending", json_integer(l->max_ack_pending));
    json_object_set_new(o, "memory_max_stream_bytes", json_integer(l->memory_max_stream_bytes));
    json_object_set_new(o, "storage_max_stream_bytes", json_integer(l->store_max_stream_bytes));
    json_object_set_new(o, "max_bytes_required", json_boolean(l->max_bytes_required));
    return o;
}

/* One JetStreamTier object: usage, reservations, counts and limits. */
static json_t *
tier_json(int64_t mem, int64_t store, int64_t rmem, int64_t rstore, size_t streams, size_t nconsumers,
          const nd_acct_js_t *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "memory", json_integer(mem));
    json_object_set_new(o, "storage", json_integer(store));
    json_object_set_new(o, "reserved_memory", json_integer(rmem));
    json_object_set_new(o, "reserved_storage", json_integer(rstore));
    json_object_set_new(o, "streams", json_integer((json_int_t)streams));
    json_object_set_new(o, "consumers", json_integer((json_int_t)nconsumers));
    json_object_set_new(o, "limits", limits_json(l));
    return o;
}

/* Memory and file bytes the account's streams use (from their last turns). */
static void
usage(nd_jsa_t *jsa, int64_t *mem, int64_t *store, size_t *nstreams, size_t *nconsumers)
{
    *mem = *store = 0;
    *nconsumers = 0;
    pthread_mutex_lock(&jsa->mu);
    *nstreams = jsa->nstreams;
    for (size_t i = 0; i < jsa->nstreams; i++) {
        nd_stream_t *st = jsa->streams[i];
        pthread_mutex_lock(&st->mu);
        if (st->scfg.storage == ND_STORAGE_MEMORY)
            *mem += (int64_t)st->stats.state.bytes;
        else
            *store += (int64_t)st->stats.state.bytes;
        *nconsumers += st->nconsumers;
        pthread_mutex_unlock(&st->mu);
    }
    pthread_mutex_unlock(&jsa->mu);
}

/* nats-server's JetStreamUsage on one server: untiered limits go in "limits"; tiered ones in
 * "tiers" (every configured tier, and R1 where the streams are), "limits" then all zero. */
static void
account_info(api_req_t *r)
{
    nd_jsa_t *jsa = r->jsa;
    int64_t mem, store;
    size_t n, nc;
    usage(jsa, &mem, &store, &n, &nc);
    int64_t rmem = js_limits_reserved(jsa, true, NULL), rstore = js_limits_reserved(jsa, false, NULL);
    pthread_mutex_lock(&jsa->mu);
    js_limits_t tl = jsa->tl;
    pthread_mutex_unlock(&jsa->mu);
    bool flat = tl.n == 1 && tl.t[0].name[0] == '\0';
    nd_acct_js_t zero;
    memset(&zero, 0, sizeof zero);
    json_t *o = tier_json(mem, store, rmem, rstore, n, nc, flat ? &tl.t[0].lim : &zero);
    json_t *t = js_resp("account_info_response");
    json_object_update(t, o);
    json_decref(o);
    o = t;
    if (jsa->js->domain[0] != '\0')
        json_object_set_new(o, "domain", json_string(jsa->js->domain));
    json_t *api = json_object();
    json_object_set_new(api, "level", json_integer(1));
    json_object_set_new(
        api, "total",
        json_integer((json_int_t)atomic_load_explicit(&jsa->api_total, memory_order_relaxed)));
    json_object_set_new(
        api, "errors",
        json_integer((json_int_t)atomic_load_explicit(&jsa->api_errors, memory_order_relaxed)));
    json_object_set_new(o, "api", api);
    if (!flat) {
        json_t *tiers = json_object();
        bool r1 = false;
        for (size_t i = 0; i < tl.n; i++) {
            bool is_r1 = strcmp(tl.t[i].name, "R1") == 0;
            r1 = r1 || is_r1;
            json_object_set_new(tiers, tl.t[i].name,
                                is_r1 ? tier_json(mem, store, rmem, rstore, n, nc, &tl.t[i].lim)
                                      : tier_json(0, 0, 0, 0, 0, 0, &tl.t[i].lim));
        }
        if (!r1 && n > 0)
            json_object_set_new(tiers, "R1", tier_json(mem, store, rmem, rstore, n, nc, &zero));
        json_object_set_new(o, "tiers", tiers);
    }
    js_send(r->ctx, r->ic, r->reply, o);
}

/* $JS.EVENT.ADVISORY.STREAM.<CREATED|DELETED|UPDATED>.<name> in the account (nats-server's
 * JSStreamActionAdvisory). */
static void
advise(api_req_t *r, const char *name, const char *verb, const char *action)
{
    char id[23], subj[320];
    nd_event_id(r->ctx, id);
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("io.nats.jetstream.advisory.v1.stream_action"));
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "timestamp", js_time(js_now()));
    json_object_set_new(o, "stream", json_string(name));
    json_object_set_new(o, "action", json_string(action));
    if (r->jsa->js->domain[0] != '\0')
        json_object_set_new(o, "domain", json_string(r->jsa->js->domain));
    snprintf(subj, sizeof subj, "$JS.EVENT.ADVISORY.STREAM.%s.%s", verb, name);
    js_send(r->ctx, r->ic, subj, o);
}

/* 10065 when a subject of cfg overlaps one of another stream's (not skip's). Two literal
 * subjects overlap only when equal, so only pairs with a wildcard take the token walk. */
static bool
overlaps(nd_jsa_t *jsa, const nd_stream_cfg_t *cfg, const nd_stream_t *skip)
{
    bool *lit = nd_xmalloc((cfg->nsubjects + 1) * sizeof *lit);
    for (size_t a = 0; a < cfg->nsubjects; a++)
        lit[a] = nd_subj_is_literal(cfg->subjects[a], strlen(cfg->subjects[a]));
    bool found = false;
    for (size_t i = 0; i < jsa->nstreams && !found; i++) {
        const nd_stream_t *o = jsa->streams[i];
        if (o == skip)
            continue;
        for (size_t b = 0; b < o->acfg.nsubjects && !found; b++) {
            const char *os = o->acfg.subjects[b];
            bool olit = nd_subj_is_literal(os, strlen(os));
            for (size_t a = 0; a < cfg->nsubjects && !found; a++)
                found = lit[a] && olit ? strcmp(cfg->subjects[a], os) == 0
                                       : nd_subjects_overlap(cfg->subjects[a], os);
        }
    }
    nd_free(lit);
    return found;
}

/* Parses a create/update body for r->name (one is required). */
static bool
parse_cfg(api_req_t *r, nd_stream_cfg_t *cfg, nd_jserr_t *err)
{
    if (r->m->data_len == 0)
        return nd_jserr_setf(err, ND_JSE_INVALID_JSON, "unexpected end of JSON input");
    nd_stream_cfg_env_t env;
    js_cfg_env(r->jsa, &env, false); /* the body's "pedantic" is read with the config */
    env.create = strncmp(r->op, "STREAM.CREATE.", 14) == 0;
    return nd_stream_cfg_parse(r->m->data, r->m->data_len, r->name, &env, cfg, err);
}

/* Forwards the request to st's actor. Returns: false when the actor is gone. */
static bool
forward(api_req_t *r, nd_stream_t *st, uint32_t tag)
{
    pthread_mutex_lock(&r->jsa->mu);
    bool ok = st->ic != NULL && nd_iclient_forward(r->ctx, st->ic, r->m, tag);
    pthread_mutex_unlock(&r->jsa->mu);
    return ok;
}

bool js_api_create_limits(void *arg, const char *name, int64_t replicas, bool memory,
                          int64_t max_bytes, int64_t max_consumers, nd_jserr_t *err);

/* nats-server's jsNonClusteredStreamLimitsCheck, through the config check (js_cfg_env): the
 * tier, max_streams (a stream of the same name not counted), then the byte limits with the
 * request's values. Ctx: the API service's turn. */
bool
js_api_create_limits(void *arg, const char *name, int64_t replicas, bool memory,
                     int64_t max_bytes, int64_t max_consumers, nd_jserr_t *err)
{
    nd_jsa_t *jsa = arg;
    pthread_mutex_lock(&jsa->mu);
    const js_tier_t *t = js_limits_select(&jsa->tl, (int)replicas);
    nd_acct_js_t sel = t != NULL ? t->lim : (nd_acct_js_t){0};
    pthread_mutex_unlock(&jsa->mu);
    if (t == NULL)
        return nd_jserr_set(err, ND_JSE_NO_LIMITS, (const char *)NULL);
    size_t others = jsa->nstreams - (jsa_find(jsa, name) != NULL ? 1 : 0);
    if (sel.max_streams > 0 && (int64_t)others >= sel.max_streams)
        return nd_jserr_set(err, ND_JSE_MAXIMUM_STREAMS_LIMIT, (const char *)NULL);
    return js_limits_check(jsa, &sel, max_consumers, memory, max_bytes,
                           js_limits_reserved(jsa, memory, name), err);
}

/* The limits of cfg's tier, or false with 10120. */
static bool
select_tier(nd_jsa_t *jsa, int replicas, nd_acct_js_t *sel, nd_jserr_t *err)
{
    pthread_mutex_lock(&jsa->mu);
    const js_tier_t *t = js_limits_select(&jsa->tl, replicas);
    if (t != NULL)
        *sel = t->lim;
    pthread_mutex_unlock(&jsa->mu);
    return t != NULL || nd_jserr_set(err, ND_JSE_NO_LIMITS, (const char *)NULL);
}

static void
stream_create(api_req_t *r)
{
    const char *what = "stream_create_response";
    nd_stream_cfg_t cfg;
    nd_jserr_t err;
    if (!parse_cfg(r, &cfg, &err)) {
        fail(r, what, &err);
        return;
    }
    nd_jsa_t *jsa = r->jsa;
    nd_stream_t *old = jsa_find(jsa, cfg.name);
    if (old != NULL) {
        bool same = nd_stream_cfg_equal(&old->acfg, &cfg);
        nd_stream_cfg_free(&cfg);
        if (!same) {
            fail_code(r, what, ND_JSE_STREAM_NAME_EXIST);
            return;
        }
        if (!forward(r, old, JS_OP_CREATE_INFO))
            fail_code(r, what, ND_JSE_STREAM_NOT_FOUND);
        return;
    }
    /* nats-server's addStream: the limits again, with the config's defaults (max_bytes -1
     * counts 1 byte) */
    nd_acct_js_t sel;
    bool mem = cfg.storage == ND_STORAGE_MEMORY;
    if (!select_tier(jsa, cfg.num_replicas, &sel, &err) ||
        !js_limits_check(jsa, &sel, cfg.max_consumers, mem, cfg.max_bytes,
                         js_limits_reserved(jsa, mem, cfg.name), &err)) {
        nd_stream_cfg_free(&cfg);
        fail(r, what, &err);
        return;
    }
    if (overlaps(jsa, &cfg, NULL)) {
        nd_stream_cfg_free(&cfg);
        fail_code(r, what, ND_JSE_STREAM_SUBJECT_OVERLAP);
        return;
    }
    char name[256];
    snprintf(name, sizeof name, "%s", cfg.name);
    if (js_stream_create(r->ctx, jsa, &cfg, js_now(), r->reply, &err) == NULL)
        fail(r, what, &err);
    else
        advise(r, name, "CREATED", "create");
}

static void
stream_update(api_req_t *r)
{
    const char *what = "stream_update_response";
    nd_stream_cfg_t cfg;
    nd_jserr_t err;
    if (!parse_cfg(r, &cfg, &err)) {
        fail(r, what, &err);
        return;
    }
    nd_stream_t *st = jsa_find(r->jsa, cfg.name);
    if (st == NULL) {
        nd_stream_cfg_free(&cfg);
        fail_code(r, what, ND_JSE_STREAM_NOT_FOUND);
        return;
    }
    if (cfg.num_replicas > 1) { /* a single server (2.10+ refuses it on update too) */
        nd_stream_cfg_free(&cfg);
        fail_code(r, what, ND_JSE_STREAM_REPLICAS_NOT_SUPPORTED);
        return;
    }
    if (!nd_stream_cfg_check_update(&st->acfg, &cfg, &err)) {
        nd_stream_cfg_free(&cfg);
        fail(r, what, &err);
        return;
    }
    nd_stream_cfg_apply_sealed(&cfg);
    /* nats-server's configUpdateCheck: only the growth of max_bytes is new, over what the other
     * streams and this one's old max_bytes reserve */
    bool mem = cfg.storage == ND_STORAGE_MEMORY;
    int64_t grow = (cfg.max_bytes > 0 ? cfg.max_bytes : 0) -
                   (st->acfg.max_bytes > 0 ? st->acfg.max_bytes : 0);
    nd_acct_js_t sel;
    if ((!select_tier(r->jsa, cfg.num_replicas, &sel, &err) &&
         (cfg.num_replicas == st->acfg.num_replicas ||
          !select_tier(r->jsa, st->acfg.num_replicas, &sel, &err))) ||
        !js_limits_check(r->jsa, &sel, cfg.max_consumers, mem, grow > 0 ? grow : 0,
                         js_limits_reserved(r->jsa, mem, st->name) + st->acfg.max_bytes, &err)) {
        nd_stream_cfg_free(&cfg);
        fail(r, what, &err);
        return;
    }
    if (overlaps(r->jsa, &cfg, st)) {
        nd_stream_cfg_free(&cfg);
        fail_code(r, what, ND_JSE_STREAM_SUBJECT_OVERLAP);
        return;
    }
    js_limits_reserve(r->jsa->js, mem, st->acfg.max_bytes, -1);
    js_limits_reserve(r->jsa->js, mem, cfg.max_bytes, 1);
    nd_stream_cfg_free(&st->acfg);
    nd_stream_cfg_copy(&st->acfg, &cfg);
    js_stream_update(r->ctx, st, &cfg, r->reply); /* takes cfg */
    advise(r, st->name, "UPDATED", "modify");
}

static void
stream_delete(api_req_t *r)
{
    const char *what = "stream_delete_response";
    if (!js_req_empty(r->m->data, r->m->data_len)) {
        fail_code(r, what, ND_JSE_NOT_EMPTY_REQUEST);
        return;
    }
    nd_stream_t *st = jsa_find(r->jsa, r->name);
    if (st == NULL) {
        fail_code(r, what, ND_JSE_STREAM_NOT_FOUND);
        return;
    }
    jsa_remove(r->jsa, st);
    js_stream_delete(r->ctx, st, r->reply);
    advise(r, st->name, "DELETED", "delete");
    js_stream_unref(st); /* the table's */
}

/* The streams whose subjects match filter (or all), sorted by name. */
static size_t
filtered(nd_jsa_t *jsa, const char *filter, nd_stream_t ***out)
{
    nd_stream_t **v = nd_xcalloc(jsa->nstreams + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < jsa->nstreams; i++) {
        nd_stream_t *st = jsa->streams[i];
        bool keep = filter == NULL || filter[0] == '\0' || strcmp(filter, ">") == 0;
        for (size_t k = 0; !keep && k < st->acfg.nsubjects; k++)
            keep = nd_subjects_overlap(filter, st->acfg.subjects[k]);
        if (keep)
            v[n++] = st;
    }
    *out = v;
    return n;
}

static const js_rfield_t paged_f[] = {{"offset", JS_RT_INT}, {"subject", JS_RT_STR}};

static void
stream_names(api_req_t *r, bool list)
{
    const char *what = list ? "stream_list_response" : "stream_names_response";
    js_req_t q;
    nd_jserr_t err;
    if (!js_req_decode(r->m->data, r->m->data_len, r->jsa->js->strict,
                       list ? "JSApiStreamListRequest" : "JSApiStreamNamesRequest", paged_f, 2, &q,
                       &err)) {
        fail(r, what, &err);
        return;
    }
    int64_t offset = q.v[0].i > 0 ? q.v[0].i : 0; /* (2.9.10 crashes on a negative one) */
    const char *filter = q.v[1].s;
    nd_stream_t **v;
    size_t n = filtered(r->jsa, filter, &v);
    size_t limit = list ? JS_LIST_LIMIT : JS_NAMES_LIMIT;
    json_t *o = js_resp(what);
    json_object_set_new(o, "total", json_integer((json_int_t)n));
    json_object_set_new(o, "offset", json_integer(0));
    json_object_set_new(o, "limit", json_integer((json_int_t)limit));
    if ((size_t)offset > n)
        offset = (int64_t)n;
    json_object_set_new(o, "offset", json_integer(offset));
    json_t *arr = json_array();
    for (size_t i = (size_t)offset; i < n && i < (size_t)offset + limit; i++)
        json_array_append_new(arr, list ? js_stream_list_info(v[i]) : json_string(v[i]->name));
    /* Go: names start as a nil slice (null when the page is empty), list as an empty one */
    if (!list && json_array_size(arr) == 0) {
        json_decref(arr);
        arr = json_null();
    }
    json_object_set_new(o, "streams", arr);
    nd_free(v);
    js_req_free(&q);
    js_send(r->ctx, r->ic, r->reply, o);
}

/* A request about one stream: forwarded to it. */
static void
stream_op(api_req_t *r, const char *what, uint32_t tag)
{
    nd_stream_t *st = r->name != NULL ? jsa_find(r->jsa, r->name) : NULL;
    if (st == NULL || !forward(r, st, tag))
        fail_code(r, what, ND_JSE_STREAM_NOT_FOUND);
}

/* Consumer requests: create, delete, names and list go to the stream (the consumer table's
 * writer), info, pause and unpin to the consumer itself. */
static void
consumer_op(api_req_t *r, const char *op)
{
    static const struct {
        const char *verb;
        uint32_t tag;
        bool to_consumer;
    } verbs[] = {
        {"CONSUMER.DURABLE.CREATE.", JS_OP_CONSUMER_CREATE, false},
        {"CONSUMER.CREATE.", JS_OP_CONSUMER_CREATE, false},
        {"CONSUMER.DELETE.", JS_OP_CONSUMER_DELETE, false},
        {"CONSUMER.NAMES.", JS_OP_CONSUMER_NAMES, false},
        {"CONSUMER.LIST.", JS_OP_CONSUMER_LIST, false},
        {"CONSUMER.INFO.", JS_OP_CONSUMER_INFO, true},
        {"CONSUMER.PAUSE.", JS_OP_CONSUMER_PAUSE, true},
        {"CONSUMER.UNPIN.", JS_OP_CONSUMER_UNPIN, true},
    };
    const char *what = js_api_type(op);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        size_t vl = strlen(verbs[i].verb);
        if (strncmp(op, verbs[i].verb, vl) != 0)
            continue;
        const char *rest = op + vl;
        size_t sl = strcspn(rest, ".");
        char name[JS_NAME_BUF];
        snprintf(name, sizeof name, "%.*s", (int)(sl < sizeof name ? sl : sizeof name - 1), rest);
        nd_stream_t *st = jsa_find(r->jsa, name);
        if (st == NULL) {
            fail_code(r, what, ND_JSE_STREAM_NOT_FOUND);
            return;
        }
        if (!verbs[i].to_consumer) {
            if (!forward(r, st, verbs[i].tag))
                fail_code(r, what, ND_JSE_STREAM_NOT_FOUND);
            return;
        }
        nd_consumer_t *c = rest[sl] == '.' ? js_consumer_find(st, rest + sl + 1) : NULL;
        if (c == NULL || !js_consumer_forward(r->ctx, c, r->m, verbs[i].tag))
            fail_code(r, what, ND_JSE_CONSUMER_NOT_FOUND);
        if (c != NULL)
            js_consumer_unref(c);
        return;
    }
    nd_log_debug("JetStream API: no handler for %s", op);
}

/* The stream name token of "<VERB...>.<name>" after skip bytes of op. */
static const char *
name_after(const char *op, size_t skip, char buf[JS_NAME_BUF])
{
    if (strlen(op) <= skip)
        return NULL;
    const char *p = op + skip;
    if (strchr(p, '.') != NULL || strlen(p) >= JS_NAME_BUF)
        return NULL;
    snprintf(buf, JS_NAME_BUF, "%s", p);
    return buf;
}

void js_api_handle(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg);

void
js_api_handle(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    nd_jsa_t *jsa = arg;
    const char *s = m->subject;
    const char *op;
    if (strncmp(s, "$JS.API.", 8) == 0) {
        op = s + 8;
    } else {
        /* $JS.<domain>.API. */
        const char *p = strstr(s + 4, ".API.");
        if (p == NULL)
            return;
        op = p + 5;
        if (strncmp(op, "$KV.", 4) == 0 || strncmp(op, "$OBJ.", 5) == 0) {
            /* nats-server's domain mappings $JS.<domain>.API.$KV.> -> $KV.> (and $OBJ): a KV
             * or object store client of another domain (over a leaf node) writes here. */
            nd_iclient_publish(ctx, ic, op, m->reply_len > 0 ? m->reply : NULL, m->hdr, m->hdr_len,
                               m->data, m->data_len);
            return;
        }
    }
    if (m->reply_len == 0)
        return; /* nats-server ignores requests nobody waits for */
    if (strncmp(op, "DIRECT.GET.", 11) == 0 || strncmp(op, "CONSUMER.MSG.NEXT.", 18) == 0)
        return; /* the stream or the consumer answers those itself */
    char name[JS_NAME_BUF];
    js_audit_req_t audit;
    js_audit_view(&audit, m);
    js_audit_begin(&audit);
    api_req_t r = {.ctx = ctx, .ic = ic, .jsa = jsa, .m = m, .reply = m->reply, .op = op};
    if (strcmp(op, "INFO") == 0) {
        account_info(&r);
    } else if ((r.name = name_after(op, 14, name)) != NULL &&
               strncmp(op, "STREAM.CREATE.", 14) == 0) {
        stream_create(&r);
    } else if ((r.name = name_after(op, 14, name)) != NULL &&
               strncmp(op, "STREAM.UPDATE.", 14) == 0) {
        stream_update(&r);
    } else if ((r.name = name_after(op, 14, name)) != NULL &&
               strncmp(op, "STREAM.DELETE.", 14) == 0) {
        stream_delete(&r);
    } else if ((r.name = name_after(op, 12, name)) != NULL &&
               strncmp(op, "STREAM.INFO.", 12) == 0) {
        stream_op(&r, "stream_info_response", JS_OP_INFO);
    } else if ((r.name = name_after(op, 13, name)) != NULL &&
               strncmp(op, "STREAM.PURGE.", 13) == 0) {
        stream_op(&r, "stream_purge_response", JS_OP_PURGE);
    } else if ((r.name = name_after(op, 15, name)) != NULL &&
               strncmp(op, "STREAM.MSG.GET.", 15) == 0) {
        stream_op(&r, "stream_msg_get_response", JS_OP_MSG_GET);
    } else if ((r.name = name_after(op, 18, name)) != NULL &&
               strncmp(op, "STREAM.MSG.DELETE.", 18) == 0) {
        stream_op(&r, "stream_msg_delete_response", JS_OP_MSG_DELETE);
    } else if ((r.name = name_after(op, 16, name)) != NULL &&
               strncmp(op, "STREAM.SNAPSHOT.", 16) == 0) {
        js_snapshot_request(ctx, ic, jsa, m, r.name);
    } else if ((r.name = name_after(op, 15, name)) != NULL &&
               strncmp(op, "STREAM.RESTORE.", 15) == 0) {
        js_restore_request(ctx, ic, jsa, m, r.name);
    } else if (strcmp(op, "STREAM.NAMES") == 0) {
        stream_names(&r, false);
    } else if (strcmp(op, "STREAM.LIST") == 0) {
        stream_names(&r, true);
    } else if (strncmp(op, "STREAM.LEADER.STEPDOWN.", 23) == 0 ||
               strncmp(op, "STREAM.PEER.REMOVE.", 19) == 0 ||
               strncmp(op, "CONSUMER.LEADER.STEPDOWN.", 25) == 0 ||
               strcmp(op, "META.LEADER.STEPDOWN") == 0 || strcmp(op, "SERVER.REMOVE") == 0) {
        fail_code(&r, js_api_type(op), ND_JSE_CLUSTER_REQUIRED); /* a single server */
    } else if (strncmp(op, "CONSUMER.", 9) == 0) {
        consumer_op(&r, op);
    } else {
        nd_log_debug("JetStream API: no handler for %s", s);
        js_audit_end();
        return;
    }
    js_audit_end();
    /* counted after the answer, as nats-server's account info does not count itself */
    atomic_fetch_add_explicit(&jsa->api_total, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&jsa->js->api_total, 1, memory_order_relaxed);
}
