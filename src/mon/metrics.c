/* /metrics: the figures of /varz (and per-account and JetStream figures) in the Prometheus text
 * exposition format 0.0.4, so Prometheus scrapes natsd directly, without the separate exporter
 * nats-server needs. Every family has # HELP and # TYPE lines; names are stable, prefixed
 * `natsd_`, counters end in `_total`, units are seconds and bytes; label values are escaped
 * (backslash, double quote, newline) as the format requires.
 * Reference: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"

typedef struct out {
    char *p;
    size_t len, cap;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(out_t *o, const char *fmt, ...)
{
    if (o->p == NULL) {
        o->cap = 16384;
        o->p = nd_xmalloc(o->cap);
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        o->cap = nd_grow_cap(o->cap, o->len + (size_t)(n > 0 ? n : 0) + 1, 4096);
        o->p = nd_xrealloc(o->p, o->cap);
    }
}

/* A label value, escaped. */
static void
put_label(out_t *o, const char *v)
{
    for (const char *c = v; *c; c++) {
        if (*c == '\\')
            put(o, "\\\\");
        else if (*c == '"')
            put(o, "\\\"");
        else if (*c == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *c);
    }
}

static void
family(out_t *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP natsd_%s %s\n# TYPE natsd_%s %s\n", name, help, name, type);
}

static void
gauge_u(out_t *o, const char *name, const char *help, uint64_t v)
{
    family(o, name, "gauge", help);
    put(o, "natsd_%s %" PRIu64 "\n", name, v);
}

static void
counter_u(out_t *o, const char *name, const char *help, uint64_t v)
{
    family(o, name, "counter", help);
    put(o, "natsd_%s %" PRIu64 "\n", name, v);
}

static void
gauge_f(out_t *o, const char *name, const char *help, double v)
{
    family(o, name, "gauge", help);
    put(o, "natsd_%s %.9g\n", name, v);
}

/* One sample of an account family. */
static void
acct_u(out_t *o, const char *name, const char *type, const char *help, const char *acc, uint64_t v)
{
    family(o, name, type, help);
    put(o, "natsd_%s{account=\"", name);
    put_label(o, acc);
    put(o, "\"} %" PRIu64 "\n", v);
}

/* One sample of a stream family (its HELP and TYPE written by the caller). */
static void
stream_sample(out_t *o, const char *name, const nd_js_stream_stats_t *ss, uint64_t v)
{
    put(o, "natsd_%s{account=\"", name);
    put_label(o, ss->account);
    put(o, "\",stream=\"");
    put_label(o, ss->name);
    put(o, "\",storage=\"%s\"} %" PRIu64 "\n", ss->memory ? "memory" : "file", v);
}

/* JetStream's families: totals always (zeros while it is off), per account and per stream
 * while it runs. The figures come through the server's JetStream hook (net/server.h). */
static void
put_jetstream(out_t *o, const nd_server_t *s)
{
    const nd_js_mon_t *jsm = nd_server_js_mon(s);
    nd_js_stats_t js = {0};
    if (jsm != NULL)
        jsm->stats(jsm->arg, &js, true);
    gauge_u(o, "jetstream_enabled", "1 when JetStream is running.", jsm != NULL);
    gauge_u(o, "jetstream_max_memory_bytes", "Memory JetStream may use for streams, in bytes.",
            js.max_memory > 0 ? (uint64_t)js.max_memory : 0);
    gauge_u(o, "jetstream_max_storage_bytes", "Storage JetStream may use for streams, in bytes.",
            js.max_storage > 0 ? (uint64_t)js.max_storage : 0);
    gauge_u(o, "jetstream_memory_bytes", "Memory used by JetStream streams, in bytes.", js.memory);
    gauge_u(o, "jetstream_storage_bytes", "Storage used by JetStream streams, in bytes.",
            js.storage);
    gauge_u(o, "jetstream_reserved_memory_bytes",
            "Memory reserved by the accounts' JetStream limits, in bytes.", js.reserved_memory);
    gauge_u(o, "jetstream_reserved_storage_bytes",
            "Storage reserved by the accounts' JetStream limits, in bytes.", js.reserved_storage);
    gauge_u(o, "jetstream_accounts", "Accounts with JetStream.", js.accounts);
    gauge_u(o, "jetstream_streams", "JetStream streams.", js.streams);
    gauge_u(o, "jetstream_consumers", "JetStream consumers.", js.consumers);
    gauge_u(o, "jetstream_messages", "Messages stored in JetStream streams.", js.messages);
    gauge_u(o, "jetstream_bytes", "Bytes stored in JetStream streams.", js.bytes);
    counter_u(o, "jetstream_api_requests_total", "JetStream API requests.", js.api_total);
    counter_u(o, "jetstream_api_errors_total", "JetStream API requests that failed.",
              js.api_errors);
    if (js.naccts > 0) {
        static const struct {
            const char *name, *type, *help;
        } af[] = {
            {"jetstream_account_memory_bytes", "gauge",
             "Memory used by the account's streams, in bytes."},
            {"jetstream_account_storage_bytes", "gauge",
             "Storage used by the account's streams, in bytes."},
            {"jetstream_account_streams", "gauge", "The account's JetStream streams."},
            {"jetstream_account_consumers", "gauge", "The account's JetStream consumers."},
            {"jetstream_account_api_requests_total", "counter",
             "The account's JetStream API requests."},
            {"jetstream_account_api_errors_total", "counter",
             "The account's JetStream API requests that failed."},
        };
        for (size_t f = 0; f < sizeof af / sizeof af[0]; f++) {
            family(o, af[f].name, af[f].type, af[f].help);
            for (size_t i = 0; i < js.naccts; i++) {
                const nd_js_acct_stats_t *a = &js.accts[i];
                uint64_t v[] = {a->memory,    a->storage,   a->streams,
                                a->consumers, a->api_total, a->api_errors};
                put(o, "natsd_%s{account=\"", af[f].name);
                put_label(o, a->name);
                put(o, "\"} %" PRIu64 "\n", v[f]);
            }
        }
    }
    if (js.nstreams_detail > 0) {
        static const struct {
            const char *name, *help;
        } sf[] = {
            {"jetstream_stream_messages", "Messages stored in the stream."},
            {"jetstream_stream_bytes", "Bytes stored in the stream."},
            {"jetstream_stream_consumers", "The stream's consumers."},
            {"jetstream_stream_subjects", "Distinct subjects stored in the stream."},
            {"jetstream_stream_first_seq", "The stream's first sequence."},
            {"jetstream_stream_last_seq", "The stream's last sequence."},
        };
        for (size_t f = 0; f < sizeof sf / sizeof sf[0]; f++) {
            family(o, sf[f].name, "gauge", sf[f].help);
            for (size_t i = 0; i < js.nstreams_detail; i++) {
                const nd_js_stream_stats_t *ss = &js.streams_detail[i];
                uint64_t v[] = {ss->messages, ss->bytes,     ss->consumers,
                                ss->subjects, ss->first_seq, ss->last_seq};
                stream_sample(o, sf[f].name, ss, v[f]);
            }
        }
    }
    nd_js_stats_fini(&js);
}

void
nd_mon_metrics(nd_mon_req_t *req)
{
    const nd_server_t *s = req->mon->srv;
    const nd_opts_t *op = &s->opts;
    nd_connreg_totals_t t;
    nd_connreg_totals(s->connreg, &t);
    out_t o = {0};

    family(&o, "info", "gauge", "Server identity; the value is always 1.");
    put(&o, "natsd_info{server_id=\"");
    put_label(&o, s->server_id);
    put(&o, "\",server_name=\"");
    put_label(&o, op->server_name ? op->server_name : s->server_id);
    put(&o, "\",version=\"%s\",natsd_version=\"%s\"} 1\n", NATSD_COMPAT_VERSION, NATSD_VERSION);
    gauge_f(&o, "start_time_seconds", "Start time of the server since the Unix epoch, in seconds.",
            (double)s->start_wall_ns / 1e9);
    gauge_f(&o, "uptime_seconds", "Time since the server started, in seconds.",
            (double)(req->now_ns - s->start_wall_ns) / 1e9);
    gauge_u(&o, "connections", "Client connections open now.", t.live);
    counter_u(&o, "connections_total", "Client connections accepted since start.", t.total_conns);
    gauge_u(&o, "subscriptions", "Subscriptions now.", t.live_subs);
    counter_u(&o, "in_msgs_total", "Messages received from clients.", t.in_msgs);
    counter_u(&o, "out_msgs_total", "Messages delivered to clients.", t.out_msgs);
    counter_u(&o, "in_bytes_total", "Payload bytes received from clients.", t.in_bytes);
    counter_u(&o, "out_bytes_total", "Payload bytes delivered to clients.", t.out_bytes);
    counter_u(&o, "slow_consumers_total", "Connections closed as slow consumers.",
              t.slow_consumers);
    gauge_u(&o, "memory_bytes", "Resident set size of the process, in bytes.",
            (uint64_t)nd_mon_rss_bytes());
    family(&o, "cpu_seconds_total", "counter", "CPU time used by the process, in seconds.");
    put(&o, "natsd_cpu_seconds_total %.9g\n", nd_mon_cpu_seconds());
    gauge_f(&o, "cpu_percent", "CPU use over the process's lifetime, in percent of one core.",
            nd_mon_cpu_percent(s, req->now_ns));
    gauge_u(&o, "cores", "Online CPU cores.", (uint64_t)nd_mon_cores());
    gauge_u(&o, "workers", "Worker threads running actors.", nd_pool_workers(s->pool));
    gauge_u(&o, "max_connections", "Configured maximum of client connections.",
            (uint64_t)nd_server_live_get(s, max_connections));
    gauge_u(&o, "max_payload_bytes", "Configured maximum message payload, in bytes.",
            (uint64_t)nd_server_live_get(s, max_payload));
    gauge_u(&o, "max_pending_bytes", "Configured maximum of pending bytes per client.",
            (uint64_t)op->max_pending);

    family(&o, "http_requests_total", "counter", "Monitoring requests served, by path.");
    for (int e = 0; e < ND_MON_EP_COUNT; e++) {
        uint64_t n = atomic_load_explicit(&req->mon->req_stats[e], memory_order_relaxed);
        put(&o, "natsd_http_requests_total{path=\"");
        put_label(&o, nd_mon_ep_paths[e]);
        put(&o, "\"} %" PRIu64 "\n", n);
    }

    /* Every client is in the global account until accounts are built. */
    acct_u(&o, "account_connections", "gauge", "Client connections open now, by account.", "$G",
           t.live);
    acct_u(&o, "account_subscriptions", "gauge", "Subscriptions now, by account.", "$G",
           t.live_subs);
    acct_u(&o, "account_in_msgs_total", "counter", "Messages received from clients, by account.",
           "$G", t.in_msgs);
    acct_u(&o, "account_out_msgs_total", "counter", "Messages delivered to clients, by account.",
           "$G", t.out_msgs);
    acct_u(&o, "account_in_bytes_total", "counter",
           "Payload bytes received from clients, by account.", "$G", t.in_bytes);
    acct_u(&o, "account_out_bytes_total", "counter",
           "Payload bytes delivered to clients, by account.", "$G", t.out_bytes);
    acct_u(&o, "account_slow_consumers_total", "counter",
           "Connections closed as slow consumers, by account.", "$G", t.slow_consumers);

    put_jetstream(&o, s);

    nd_free(req->body);
    req->body = o.p;
    req->body_len = o.len;
    req->ctype = "text/plain; version=0.0.4; charset=utf-8";
    req->status = 200;
}
