/* /metrics: the figures of /varz (and per-account and JetStream figures) in the Prometheus text
 * exposition format 0.0.4, or in OpenMetrics text 1.0.0 when the request's Accept header asks
 * for it (http.c decides, as Prometheus negotiates), so Prometheus scrapes natsd directly,
 * without the separate exporter nats-server needs. Every family has # HELP and # TYPE lines;
 * natsd's names are prefixed `natsd_`, the process's are the standard `process_*` ones that
 * Prometheus's client libraries export; units are seconds and bytes; label values are escaped
 * (backslash, double quote, newline) as both formats require.
 *
 * The two formats differ only where OpenMetrics is stricter: a counter's family is named
 * without its `_total` suffix (which its sample keeps), so no gauge may be named as a counter
 * less `_total` (the names below are unique either way), and the exposition ends with `# EOF`.
 * Times are printed from integer nanoseconds as seconds with nine decimals, so a timestamp
 * keeps its full resolution (a double printed with %g would round it to ten seconds).
 * References: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format 0.0.4),
 * https://github.com/OpenObservability/OpenMetrics/blob/main/specification/OpenMetrics.md.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mon/mon_int.h"
#include "net/gateway.h"
#include "net/leaf.h"
#include "net/route.h"
#include "actors/alloc.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"

typedef struct out {
    char *p;
    size_t len, cap;
    bool om; /* OpenMetrics text: counter families named without _total, # EOF at the end */
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

/* A family's HELP and TYPE lines; full: its name as its samples carry it (a counter's with
 * _total). */
static void
family_full(out_t *o, const char *full, const char *type, const char *help)
{
    int n = (int)strlen(full);
    if (o->om && strcmp(type, "counter") == 0 && n > 6 && strcmp(full + n - 6, "_total") == 0)
        n -= 6;
    put(o, "# HELP %.*s %s\n# TYPE %.*s %s\n", n, full, help, n, full, type);
}

static void
family(out_t *o, const char *name, const char *type, const char *help)
{
    char full[128];
    snprintf(full, sizeof full, "natsd_%s", name);
    family_full(o, full, type, help);
}

/* Nanoseconds as seconds, exactly. */
static void
put_seconds(out_t *o, int64_t ns)
{
    if (ns < 0) {
        put(o, "-");
        ns = -ns;
    }
    put(o, "%" PRId64 ".%09" PRId64, ns / 1000000000, ns % 1000000000);
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
    put(o, "natsd_%s %.15g\n", name, v);
}

/* A time or a duration, from nanoseconds (full: the whole metric name). */
static void
seconds_full(out_t *o, const char *full, const char *type, const char *help, int64_t ns)
{
    family_full(o, full, type, help);
    put(o, "%s ", full);
    put_seconds(o, ns);
    put(o, "\n");
}

static void
seconds(out_t *o, const char *name, const char *type, const char *help, int64_t ns)
{
    char full[128];
    snprintf(full, sizeof full, "natsd_%s", name);
    seconds_full(o, full, type, help, ns);
}

/* The standard process families, as Prometheus's client libraries name them, from
 * /proc/self. */
static void
put_process(out_t *o, const nd_mon_proc_t *p)
{
    seconds_full(o, "process_cpu_seconds_total", "counter",
                 "Total user and system CPU time spent in seconds.", (int64_t)p->cpu_ns);
    family_full(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    put(o, "process_resident_memory_bytes %" PRIu64 "\n", p->rss_bytes);
    family_full(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    put(o, "process_virtual_memory_bytes %" PRIu64 "\n", p->vsize_bytes);
    family_full(o, "process_open_fds", "gauge", "Number of open file descriptors.");
    put(o, "process_open_fds %" PRIu64 "\n", p->open_fds);
    family_full(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
    if (p->max_fds == UINT64_MAX)
        put(o, "process_max_fds +Inf\n");
    else
        put(o, "process_max_fds %" PRIu64 "\n", p->max_fds);
    if (p->start_wall_ns > 0)
        seconds_full(o, "process_start_time_seconds", "gauge",
                     "Start time of the process since unix epoch in seconds.", p->start_wall_ns);
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
    nd_mon_proc_t proc;
    nd_mon_proc_read(&proc);
    out_t o = {.om = req->openmetrics};

    family(&o, "info", "gauge", "Server identity; the value is always 1.");
    put(&o, "natsd_info{server_id=\"");
    put_label(&o, s->server_id);
    put(&o, "\",server_name=\"");
    put_label(&o, op->server_name ? op->server_name : s->server_id);
    put(&o, "\",version=\"%s\",natsd_version=\"%s\"} 1\n", NATSD_COMPAT_VERSION, NATSD_VERSION);
    seconds(&o, "start_time_seconds", "gauge",
            "Start time of the server since the Unix epoch, in seconds.", s->start_wall_ns);
    seconds(&o, "uptime_seconds", "gauge", "Time since the server started, in seconds.",
            req->now_ns - s->start_wall_ns);
    gauge_u(&o, "connections", "Client connections open now.", t.live);
    /* Not connections_total: in OpenMetrics that counter's family would be named as the gauge
     * above. */
    counter_u(&o, "connections_accepted_total", "Client connections accepted since start.",
              t.total_conns);
    gauge_u(&o, "subscriptions", "Subscriptions now.", t.live_subs);
    counter_u(&o, "in_msgs_total", "Messages received from clients.", t.in_msgs);
    counter_u(&o, "out_msgs_total", "Messages delivered to clients.", t.out_msgs);
    counter_u(&o, "in_bytes_total", "Payload bytes received from clients.", t.in_bytes);
    counter_u(&o, "out_bytes_total", "Payload bytes delivered to clients.", t.out_bytes);
    counter_u(&o, "slow_consumers_total", "Connections closed as slow consumers.",
              t.slow_consumers);
    if (s->routes != NULL) {
        nd_route_stat_t *rs = NULL;
        size_t nr = nd_routes_stats(s->routes, &rs, NULL);
        uint64_t rin = 0, rout = 0, rinb = 0, routb = 0;
        for (size_t i = 0; i < nr; i++) {
            rin += rs[i].in_msgs;
            rout += rs[i].out_msgs;
            rinb += rs[i].in_bytes;
            routb += rs[i].out_bytes;
        }
        nd_free(rs);
        gauge_u(&o, "routes", "Routes to other servers of the cluster now.", nr);
        /* Gauges, not counters: the sums fall when a route closes. */
        gauge_u(&o, "route_in_msgs", "Messages received over the routes open now.", rin);
        gauge_u(&o, "route_out_msgs", "Messages sent over the routes open now.", rout);
        gauge_u(&o, "route_in_bytes", "Payload bytes received over the routes open now.", rinb);
        gauge_u(&o, "route_out_bytes", "Payload bytes sent over the routes open now.", routb);
    }
    if (s->leafs != NULL) {
        nd_leaf_stat_t *ls = NULL;
        size_t nl = nd_leafs_stats(s->leafs, &ls, NULL);
        uint64_t lin = 0, lout = 0, linb = 0, loutb = 0, lsubs = 0;
        for (size_t i = 0; i < nl; i++) {
            lin += ls[i].in_msgs;
            lout += ls[i].out_msgs;
            linb += ls[i].in_bytes;
            loutb += ls[i].out_bytes;
            lsubs += ls[i].subs;
        }
        nd_free(ls);
        gauge_u(&o, "leafnodes", "Leaf node connections now (as hub and as leaf).", nl);
        /* Gauges, as the route sums: they fall when a leaf connection closes. */
        gauge_u(&o, "leafnode_in_msgs", "Messages received over the leaf connections open now.",
                lin);
        gauge_u(&o, "leafnode_out_msgs", "Messages sent over the leaf connections open now.", lout);
        gauge_u(&o, "leafnode_in_bytes",
                "Payload bytes received over the leaf connections open now.", linb);
        gauge_u(&o, "leafnode_out_bytes", "Payload bytes sent over the leaf connections open now.",
                loutb);
        gauge_u(&o, "leafnode_subscriptions",
                "Interest the leaf connections open now hold for their peers.", lsubs);
    }
    if (s->gateways != NULL) {
        nd_gw_stat_t *gs = NULL;
        size_t ng = nd_gateways_stats(s->gateways, &gs);
        uint64_t nout = 0, nin = 0, gin = 0, gout = 0, ginb = 0, goutb = 0;
        for (size_t i = 0; i < ng; i++) {
            if (gs[i].accounts != NULL)
                json_decref(gs[i].accounts);
            if (gs[i].cid == 0)
                continue; /* an outbound not connected */
            if (gs[i].outbound)
                nout++;
            else
                nin++;
            gin += gs[i].in_msgs;
            gout += gs[i].out_msgs;
            ginb += gs[i].in_bytes;
            goutb += gs[i].out_bytes;
        }
        nd_free(gs);
        gauge_u(&o, "gateways_outbound", "Outbound gateway connections (one per remote cluster).",
                nout);
        gauge_u(&o, "gateways_inbound", "Inbound gateway connections now.", nin);
        gauge_u(&o, "gateway_in_msgs", "Messages received over the gateway connections open now.",
                gin);
        gauge_u(&o, "gateway_out_msgs", "Messages sent over the gateway connections open now.",
                gout);
        gauge_u(&o, "gateway_in_bytes",
                "Payload bytes received over the gateway connections open now.", ginb);
        gauge_u(&o, "gateway_out_bytes", "Payload bytes sent over the gateway connections open now.",
                goutb);
    }
    gauge_u(&o, "memory_bytes", "Resident set size of the process, in bytes.", proc.rss_bytes);
    seconds(&o, "cpu_seconds_total", "counter", "CPU time used by the process, in seconds.",
            (int64_t)proc.cpu_ns);
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
    put_process(&o, &proc);
    if (o.om)
        put(&o, "# EOF\n");

    nd_free(req->body);
    req->body = o.p;
    req->body_len = o.len;
    req->ctype = o.om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                      : "text/plain; version=0.0.4; charset=utf-8";
    req->status = 200;
}
