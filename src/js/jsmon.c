/* JetStream's monitoring figures, handed to src/mon through the server's hook (net/server.h,
 * nd_js_mon_t): /varz "jetstream", /jsz, the JetStream part of /healthz and the JetStream
 * families of /metrics.
 *
 * Everything here runs on an HTTP connection's worker and only copies: the account list is
 * fixed after start, a stream table is read under jsa->mu (taking a reference on each stream),
 * and a stream's counters and configuration under st->mu (js_stream_list_info), as the stream
 * actor left them at the end of its last turn. Nothing waits for an actor.
 *
 * Shapes: nats-server 2.11's JetStreamVarz, JSInfo, AccountDetail, StreamDetail and
 * HealthzError (server/monitor.go, server/jetstream.go); a standalone server is its own leader.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/consumer_int.h"

#define JSZ_DEFAULT_LIMIT        1024
#define JS_API_LEVEL             1 /* nats-server's JSApiLevel for the features served */
#define DEFAULT_SYNC_INTERVAL_NS (120LL * 1000000000LL)

void js_mon_install(nd_js_t *js);
void js_mon_uninstall(nd_js_t *js);

/* ---- gathering ---- */

/* One stream's figures, copied under its lock. */
typedef struct snap {
    nd_stream_t *st; /* a reference */
    bool memory;
    bool alive; /* its actor is running */
    nd_store_state_t state;
} snap_t;

/* The account's streams (sorted by name, as the table), each with a reference. */
static snap_t *
snap_streams(nd_jsa_t *jsa, size_t *n)
{
    pthread_mutex_lock(&jsa->mu);
    size_t cnt = jsa->nstreams;
    snap_t *s = nd_xcalloc(cnt > 0 ? cnt : 1, sizeof *s);
    for (size_t i = 0; i < cnt; i++) {
        nd_stream_t *st = jsa->streams[i];
        js_stream_ref(st);
        s[i].st = st;
        s[i].alive = st->ic != NULL; /* under jsa->mu, as the actor's last turn clears it */
    }
    pthread_mutex_unlock(&jsa->mu);
    for (size_t i = 0; i < cnt; i++) {
        nd_stream_t *st = s[i].st;
        pthread_mutex_lock(&st->mu);
        s[i].memory = st->scfg.storage == ND_STORAGE_MEMORY;
        s[i].state = st->stats.state;
        pthread_mutex_unlock(&st->mu);
    }
    *n = cnt;
    return s;
}

static void
snap_free(snap_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        js_stream_unref(s[i].st);
    nd_free(s);
}

static uint64_t
load_u64(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* What one account adds up to. */
typedef struct acct_sum {
    uint64_t memory, storage, streams, consumers, messages, bytes;
} acct_sum_t;

static void
sum_snaps(const snap_t *s, size_t n, acct_sum_t *a)
{
    memset(a, 0, sizeof *a);
    a->streams = n;
    for (size_t i = 0; i < n; i++) {
        if (s[i].memory)
            a->memory += s[i].state.bytes;
        else
            a->storage += s[i].state.bytes;
        a->messages += s[i].state.msgs;
        a->bytes += s[i].state.bytes;
        a->consumers += s[i].state.consumers;
    }
}

static void
stats(void *arg, nd_js_stats_t *out, bool detail)
{
    nd_js_t *js = arg;
    memset(out, 0, sizeof *out);
    out->max_memory = js->max_memory;
    out->max_storage = js->max_store;
    size_t naccts;
    nd_jsa_t **accts = js_accts(js, &naccts);
    out->accounts = naccts;
    out->api_total = load_u64(&js->api_total);
    out->api_errors = load_u64(&js->api_errors);
    if (detail)
        out->accts = nd_xcalloc(naccts > 0 ? naccts : 1, sizeof *out->accts);
    size_t scap = 0;
    for (size_t i = 0; i < naccts; i++) {
        nd_jsa_t *jsa = accts[i];
        if (jsa->limits.max_memory > 0)
            out->reserved_memory += (uint64_t)jsa->limits.max_memory;
        if (jsa->limits.max_store > 0)
            out->reserved_storage += (uint64_t)jsa->limits.max_store;
        size_t n;
        snap_t *s = snap_streams(jsa, &n);
        acct_sum_t a;
        sum_snaps(s, n, &a);
        out->memory += a.memory;
        out->storage += a.storage;
        out->streams += a.streams;
        out->consumers += a.consumers;
        out->messages += a.messages;
        out->bytes += a.bytes;
        if (detail) {
            nd_js_acct_stats_t *as = &out->accts[out->naccts++];
            as->name = nd_xstrdup(nd_acct_name(jsa->acct));
            as->memory = a.memory;
            as->storage = a.storage;
            as->streams = a.streams;
            as->consumers = a.consumers;
            as->api_total = load_u64(&jsa->api_total);
            as->api_errors = load_u64(&jsa->api_errors);
            for (size_t k = 0; k < n; k++) {
                if (out->nstreams_detail == scap) {
                    scap = nd_grow_cap(scap, out->nstreams_detail + 1, 16);
                    out->streams_detail =
                        nd_xrealloc(out->streams_detail, scap * sizeof *out->streams_detail);
                }
                nd_js_stream_stats_t *ss = &out->streams_detail[out->nstreams_detail++];
                ss->account = nd_xstrdup(as->name);
                ss->name = nd_xstrdup(s[k].st->name);
                ss->memory = s[k].memory;
                ss->messages = s[k].state.msgs;
                ss->bytes = s[k].state.bytes;
                ss->consumers = s[k].state.consumers;
                ss->first_seq = s[k].state.first_seq;
                ss->last_seq = s[k].state.last_seq;
                ss->subjects = s[k].state.num_subjects;
            }
        }
        snap_free(s, n);
    }
    nd_free(accts);
}

/* ---- JSON ---- */

static json_t *
jint(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* A Go uint64 whatever its size: above INT64_MAX through the monitor's tag (server.h). */
static json_t *
ju64(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)v);
    char b[64];
    snprintf(b, sizeof b, "%s%" PRIu64, ND_JSON_U64_TAG, v);
    return json_string(b);
}

/* nats-server's JetStreamConfig as this server runs it. */
static json_t *
config_json(const nd_js_t *js)
{
    const nd_opts_t *o = &js->srv->opts;
    const nd_js_opts_t *jo = o->js;
    json_t *c = json_object();
    json_object_set_new(c, "max_memory", json_integer(js->max_memory));
    json_object_set_new(c, "max_storage", json_integer(js->max_store));
    json_object_set_new(c, "store_dir", json_string(js->store_dir));
    json_object_set_new(
        c, "sync_interval",
        json_integer(js->sync_interval_ns > 0 ? js->sync_interval_ns : DEFAULT_SYNC_INTERVAL_NS));
    if (js->sync_always)
        json_object_set_new(c, "sync_always", json_true());
    if (js->domain[0] != '\0')
        json_object_set_new(c, "domain", json_string(js->domain));
    json_object_set_new(c, "compress_ok", json_true());
    if (jo != NULL && jo->unique_tag != NULL && jo->unique_tag[0] != '\0')
        json_object_set_new(c, "unique_tag", json_string(jo->unique_tag));
    if (js->strict)
        json_object_set_new(c, "strict", json_true());
    return c;
}

/* nats-server's JSLimitOpts (jetstream { limits {} }): only what is set. */
static json_t *
limits_json(const nd_js_t *js)
{
    const nd_js_opts_t *jo = js->srv->opts.js;
    json_t *l = json_object();
    if (jo == NULL)
        return l;
    if (jo->max_request_batch > 0)
        json_object_set_new(l, "max_request_batch", json_integer(jo->max_request_batch));
    if (jo->max_ack_pending > 0)
        json_object_set_new(l, "max_ack_pending", json_integer(jo->max_ack_pending));
    if (jo->max_ha_assets > 0)
        json_object_set_new(l, "max_ha_assets", json_integer(jo->max_ha_assets));
    if (jo->duplicate_window_ms > 0)
        json_object_set_new(l, "max_duplicate_window",
                            json_integer(jo->duplicate_window_ms * 1000000LL));
    return l;
}

static json_t *
api_json(int level, uint64_t total, uint64_t errors)
{
    json_t *a = json_object();
    json_object_set_new(a, "level", json_integer(level));
    json_object_set_new(a, "total", jint(total));
    json_object_set_new(a, "errors", jint(errors));
    return a;
}

/* nats-server's JetStreamStats, into o (an embedded struct in Go: its keys come first). */
static void
put_stats(json_t *o, const nd_js_stats_t *s)
{
    json_object_set_new(o, "memory", jint(s->memory));
    json_object_set_new(o, "storage", jint(s->storage));
    json_object_set_new(o, "reserved_memory", jint(s->reserved_memory));
    json_object_set_new(o, "reserved_storage", jint(s->reserved_storage));
    json_object_set_new(o, "accounts", jint(s->accounts));
    json_object_set_new(o, "ha_assets", json_integer(0));
    json_object_set_new(o, "api", api_json(JS_API_LEVEL, s->api_total, s->api_errors));
}

static json_t *
varz(void *arg)
{
    nd_js_t *js = arg;
    nd_js_stats_t s;
    stats(js, &s, false);
    json_t *v = json_object();
    json_object_set_new(v, "config", config_json(js));
    json_t *st = json_object();
    put_stats(st, &s);
    json_object_set_new(v, "stats", st);
    json_object_set_new(v, "limits", limits_json(js));
    nd_js_stats_fini(&s);
    return v;
}

/* One StreamDetail. */
static json_t *
stream_detail(nd_stream_t *st, bool with_cfg, bool with_consumers)
{
    json_t *info = js_stream_list_info(st);
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string(st->name));
    json_object_set(d, "created", json_object_get(info, "created"));
    /* A server on its own leads every stream (nats-server's clusterInfo without a group). */
    const nd_server_t *srv = st->jsa->js->srv;
    json_t *cl = json_object();
    json_object_set_new(
        cl, "leader",
        json_string(srv->opts.server_name != NULL ? srv->opts.server_name : srv->server_id));
    json_object_set_new(d, "cluster", cl);
    if (with_cfg && json_object_get(info, "config") != NULL)
        json_object_set(d, "config", json_object_get(info, "config"));
    json_object_set(d, "state", json_object_get(info, "state"));
    json_decref(info);
    if (with_consumers) {
        /* ConsumerInfo of each, as nats-server's consumer_detail (config only with config) */
        pthread_mutex_lock(&st->mu);
        size_t nc = st->nconsumers;
        nd_consumer_t **cs = nd_xcalloc(nc + 1, sizeof *cs);
        for (size_t i = 0; i < nc; i++) {
            cs[i] = st->consumers[i];
            js_consumer_ref(cs[i]);
        }
        pthread_mutex_unlock(&st->mu);
        json_t *arr = json_array();
        for (size_t i = 0; i < nc; i++) {
            json_t *ci = js_consumer_list_info(cs[i]);
            if (!with_cfg)
                json_object_del(ci, "config");
            json_array_append_new(arr, ci);
            js_consumer_unref(cs[i]);
        }
        nd_free(cs);
        if (nc > 0)
            json_object_set_new(d, "consumer_detail", arr);
        else
            json_decref(arr);
    }
    return d;
}

/* One AccountDetail. A limit of -1 (none) shows as Go's uint64 of it, as nats-server does. */
static json_t *
account_detail(nd_jsa_t *jsa, const nd_jsz_query_t *q)
{
    size_t n;
    snap_t *s = snap_streams(jsa, &n);
    acct_sum_t a;
    sum_snaps(s, n, &a);
    const char *name = nd_acct_name(jsa->acct);
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string(name));
    json_object_set_new(d, "id", json_string(name));
    json_object_set_new(d, "memory", jint(a.memory));
    json_object_set_new(d, "storage", jint(a.storage));
    json_object_set_new(d, "reserved_memory", ju64((uint64_t)jsa->limits.max_memory));
    json_object_set_new(d, "reserved_storage", ju64((uint64_t)jsa->limits.max_store));
    json_object_set_new(d, "accounts", json_integer(0));
    json_object_set_new(d, "ha_assets", json_integer(0));
    /* nats-server leaves the level out of an account's figures: 0. */
    json_object_set_new(d, "api",
                        api_json(0, load_u64(&jsa->api_total), load_u64(&jsa->api_errors)));
    if (q->streams && n > 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, stream_detail(s[i].st, q->config, q->consumers));
        json_object_set_new(d, "stream_detail", arr);
    }
    snap_free(s, n);
    return d;
}

static int
by_name(const void *a, const void *b)
{
    const nd_jsa_t *x = *(nd_jsa_t *const *)a, *y = *(nd_jsa_t *const *)b;
    return strcmp(nd_acct_name(x->acct), nd_acct_name(y->acct));
}

static json_t *
jsz(void *arg, const nd_jsz_query_t *query, int64_t now_ns)
{
    nd_js_t *js = arg;
    nd_jsz_query_t q = *query;
    /* nats-server's defaults and implications (Server.Jsz). */
    if (q.offset < 0)
        q.offset = 0;
    if (q.limit == 0)
        q.limit = JSZ_DEFAULT_LIMIT;
    if (q.consumers)
        q.streams = true;
    bool has_acc = q.acc != NULL && q.acc[0] != '\0';
    if (q.streams && !has_acc)
        q.accounts = true;

    nd_js_stats_t s;
    stats(js, &s, false);
    json_t *o = json_object();
    put_stats(o, &s);
    json_object_set_new(o, "server_id", json_string(js->srv->server_id));
    json_object_set_new(o, "now", js_time(now_ns));
    json_object_set_new(o, "config", config_json(js));
    json_object_set_new(o, "limits", limits_json(js));
    json_object_set_new(o, "streams", jint(s.streams));
    json_object_set_new(o, "consumers", jint(s.consumers));
    json_object_set_new(o, "messages", jint(s.messages));
    json_object_set_new(o, "bytes", jint(s.bytes));
    nd_js_stats_fini(&s);

    /* The accounts to detail: the one asked for (when it has JetStream), else a page of all by
     * name when asked. */
    size_t naccts;
    nd_jsa_t **accts = js_accts(js, &naccts);
    nd_jsa_t **pick = nd_xcalloc(naccts > 0 ? naccts : 1, sizeof *pick);
    size_t npick = 0;
    for (size_t i = 0; has_acc && i < naccts; i++)
        if (strcmp(nd_acct_name(accts[i]->acct), q.acc) == 0)
            pick[npick++] = accts[i];
    if (npick == 0 && q.accounts) {
        memcpy(pick, accts, naccts * sizeof *pick);
        npick = naccts;
        if (q.limit > 0) {
            qsort(pick, npick, sizeof *pick, by_name);
            size_t off = (uint64_t)q.offset < npick ? (size_t)q.offset : npick;
            memmove(pick, pick + off, (npick - off) * sizeof *pick);
            npick -= off;
            if ((uint64_t)q.limit < npick)
                npick = (size_t)q.limit;
        }
    }
    if (npick > 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < npick; i++)
            json_array_append_new(arr, account_detail(pick[i], &q));
        json_object_set_new(o, "account_details", arr);
    }
    nd_free(pick);
    nd_free(accts);
    json_object_set_new(o, "total", jint(naccts));
    return o;
}

/* ---- health ---- */

static void
health_err(json_t *errors, const char *type, const char *acc, const char *stream,
           const char *consumer, const char *text)
{
    json_t *e = json_object();
    json_object_set_new(e, "type", json_string(type));
    if (acc != NULL)
        json_object_set_new(e, "account", json_string(acc));
    if (stream != NULL)
        json_object_set_new(e, "stream", json_string(stream));
    if (consumer != NULL)
        json_object_set_new(e, "consumer", json_string(consumer));
    json_object_set_new(e, "error", json_string(text));
    json_array_append_new(errors, e);
}

/* The only error left: what was asked for does not exist. */
static int
not_found(json_t *errors, const char *type, const char *acc, const char *stream,
          const char *consumer, const char *text)
{
    json_array_clear(errors);
    health_err(errors, type, acc, stream, consumer, text);
    return 404;
}

static bool
has_name(char **names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Checks one account's streams: every stream with a directory under the account's store and
 * every stream in its table must have a running actor (nats-server: "could not be recovered").
 * Sets *found when the stream asked for (q->stream) exists. */
static void
check_account(nd_jsa_t *jsa, const char *want, json_t *errors, bool *found)
{
    const char *acc = nd_acct_name(jsa->acct);
    size_t n;
    snap_t *s = snap_streams(jsa, &n);
    char **names = nd_xcalloc(n + 1, sizeof *names);
    size_t nn = 0, cap = n + 1;
    for (size_t i = 0; i < n; i++)
        names[nn++] = nd_xstrdup(s[i].st->name);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/streams", jsa->dir);
    DIR *d = opendir(dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || has_name(names, nn, e->d_name))
            continue;
        if (nn == cap) {
            cap *= 2;
            names = nd_xrealloc(names, cap * sizeof *names);
        }
        names[nn++] = nd_xstrdup(e->d_name);
    }
    if (d != NULL)
        closedir(d);
    for (size_t i = 0; i < nn; i++) {
        if (want != NULL && strcmp(names[i], want) != 0)
            continue;
        *found = true;
        bool alive = false;
        for (size_t k = 0; k < n; k++)
            if (strcmp(s[k].st->name, names[i]) == 0)
                alive = s[k].alive;
        if (!alive) {
            char text[600];
            snprintf(text, sizeof text, "JetStream stream '%s > %s' could not be recovered", acc,
                     names[i]);
            health_err(errors, "STREAM", acc, names[i], NULL, text);
        }
    }
    for (size_t i = 0; i < nn; i++)
        nd_free(names[i]);
    nd_free(names);
    snap_free(s, n);
}

static int
healthz(void *arg, const nd_js_health_query_t *q, json_t *errors)
{
    nd_js_t *js = arg;
    if (q->enabled_only)
        return 200;
    const char *want_acc = q->account != NULL && q->account[0] != '\0' ? q->account : NULL;
    const char *want_st = q->stream != NULL && q->stream[0] != '\0' ? q->stream : NULL;
    const char *want_con = q->consumer != NULL && q->consumer[0] != '\0' ? q->consumer : NULL;
    bool acc_found = false, st_found = false;
    size_t naccts;
    nd_jsa_t **accts = js_accts(js, &naccts);
    for (size_t i = 0; i < naccts; i++) {
        nd_jsa_t *jsa = accts[i];
        if (want_acc != NULL && strcmp(nd_acct_name(jsa->acct), want_acc) != 0)
            continue;
        acc_found = true;
        check_account(jsa, want_st, errors, &st_found);
    }
    nd_free(accts);
    char text[800];
    if (want_acc != NULL && !acc_found) {
        snprintf(text, sizeof text, "JetStream account \"%s\" not found", want_acc);
        return not_found(errors, "ACCOUNT", want_acc, NULL, NULL, text);
    }
    if (want_st != NULL && !st_found) {
        snprintf(text, sizeof text, "JetStream stream \"%s\" not found on account \"%s\"", want_st,
                 want_acc != NULL ? want_acc : "");
        return not_found(errors, "STREAM", want_acc, want_st, NULL, text);
    }
    if (want_con != NULL) {
        nd_consumer_t *c = NULL;
        accts = js_accts(js, &naccts);
        for (size_t i = 0; i < naccts && c == NULL; i++) {
            nd_jsa_t *jsa = accts[i];
            if (want_acc != NULL && strcmp(nd_acct_name(jsa->acct), want_acc) != 0)
                continue;
            pthread_mutex_lock(&jsa->mu);
            nd_stream_t *st = want_st != NULL ? jsa_find(jsa, want_st) : NULL;
            if (st != NULL)
                js_stream_ref(st);
            pthread_mutex_unlock(&jsa->mu);
            if (st != NULL) {
                c = js_consumer_find(st, want_con);
                js_stream_unref(st);
            }
        }
        nd_free(accts);
        if (c != NULL) {
            js_consumer_unref(c);
            return json_array_size(errors) > 0 ? 503 : 200;
        }
        snprintf(text, sizeof text,
                 "JetStream consumer \"%s\" not found for stream \"%s\" on account \"%s\"",
                 want_con, want_st != NULL ? want_st : "", want_acc != NULL ? want_acc : "");
        return not_found(errors, "CONSUMER", want_acc, want_st, want_con, text);
    }
    return json_array_size(errors) > 0 ? 503 : 200;
}

/* ---- the hook ---- */

void
js_mon_install(nd_js_t *js)
{
    nd_js_mon_t *m = nd_new(nd_js_mon_t);
    m->arg = js;
    m->varz = varz;
    m->jsz = jsz;
    m->healthz = healthz;
    m->stats = stats;
    nd_server_set_js_mon(js->srv, m);
}

void
js_mon_uninstall(nd_js_t *js)
{
    /* After the pool's shutdown: no monitoring request can be running. */
    const nd_js_mon_t *m = nd_server_js_mon(js->srv);
    nd_server_set_js_mon(js->srv, NULL);
    nd_free((void *)m);
}
