/* The server: options, the client listener, the INFO template, the global account and the
 * counters shared by every connection. Immutable after start except the atomics. Config reload
 * (reload.c) runs on the thread that asks for it and changes only `live`, `info` and the log;
 * lame duck mode (lameduck.c) is an actor of its own. */
#ifndef ND_SERVER_H
#define ND_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/actor.h"
#include "actors/alloc.h"
#include "actors/epoch.h"
#include "cfg/opts.h"
#include "actors/pool.h"
#include "net/poller.h"

/* A worker's I/O scratch buffer (see conn.c): only the connection running on that worker uses
 * it, during its turn. */
typedef struct nd_iobuf {
    char *p;
    size_t cap;
} ND_CACHE_ALIGNED nd_iobuf_t;

/* The INFO line all new clients get, without the closing brace (per-client fields follow).
 * Immutable once published; a reload that changes it publishes a new one and retires this one
 * through the pool's epoch, so a connection copies it inside an epoch section (conn.c).
 * It also carries the client TLS context its tls_required/tls_verify describe, so that a new
 * connection takes the context and the INFO that goes with it from one load. */
typedef struct nd_server_info {
    nd_epoch_entry_t retire;
    struct nd_tls_ctx *tls; /* a reference owned by the template (net/tls.h), NULL: TLS off */
    /* The same for WebSocket clients in a cluster, whose connect_urls list the cluster's
     * WebSocket URLs (nats-server's ws_connect_urls); owned, or NULL: they get text. */
    char *ws_text;
    size_t ws_len;
    size_t len;
    char text[]; /* "INFO {...", NUL-terminated */
} nd_server_info_t;

/* The options that a config reload changes live and connections read on their own workers
 * (src/server/reload.c). Each is an independent scalar read with a relaxed load where it is used:
 * the cost on the message path is a plain load, and no connection needs two of them to be from
 * the same reload (a connection that sees a new max_payload with an old ping_max is harmless).
 * `gen` is bumped (release) after every reload that changed one; a connection compares it
 * (acquire) with the value it last saw to refresh what it caches (its parser's limits, its ping
 * period). */
typedef struct nd_server_live {
    _Atomic int64_t max_payload;
    _Atomic int32_t max_control_line;
    _Atomic int32_t max_connections;
    _Atomic int64_t ping_interval_ms;
    _Atomic int32_t ping_max;
    _Atomic int64_t write_deadline_ms;
    _Atomic bool no_fast_producer_stall;
    _Atomic uint32_t gen;
} nd_server_live_t;

/* The value of one reloadable option now in force, from any thread. */
#define nd_server_live_get(s, field) atomic_load_explicit(&(s)->live.field, memory_order_relaxed)

/* A client connection passed its CONNECT (connect) or closed after it: what the server's
 * services report about it (the $SYS advisories, src/mon/sysevents.c). Borrowed for the call. */
typedef struct nd_client_event {
    bool connect;
    struct nd_server *srv;
    struct nd_acct *acct;
    int64_t acct_conns; /* the account's live client connections, this one counted */
    uint64_t cid;
    int64_t start_ns, rtt_ns; /* rtt_ns: 0 until measured */
    const char *ip, *user, *name, *lang, *version; /* NULL when unknown */
    uint64_t in_msgs, in_bytes, out_msgs, out_bytes;
    const char *reason; /* the close reason (disconnect) */
} nd_client_event_t;

/* Ctx: the connection's turn; must not block. */
typedef void (*nd_client_event_fn)(nd_ctx_t *ctx, const nd_client_event_t *ev);

/* ---- JetStream's monitoring hook ----
 * src/mon may not include src/js (the rooms' order), so JetStream hands its monitoring figures
 * down through this table: src/js/jsmon.c fills one when JetStream has started
 * (nd_server_set_js_mon) and src/mon calls it from /varz, /jsz, /healthz and /metrics. Every
 * function runs on the HTTP connection's worker, takes JetStream's locks for short copies only
 * and never blocks on an actor. JSON objects are built with jansson and owned by the caller. */
struct json_t;

/* A number above INT64_MAX in a hook's JSON (jansson's integers are signed): a string made of
 * this tag and the decimal digits, which the monitor writes as a bare number (nats-server's
 * uint64 fields, e.g. an account's reserved_memory of 2^64-1 when it has no limit). */
#define ND_JSON_U64_TAG "\x1f\x1enatsd-u64:"

/* /jsz's query: nats-server's JSzOptions. */
typedef struct nd_jsz_query {
    const char *acc; /* "acc": this account's details only; NULL or "": none */
    bool accounts, streams, consumers, config, leader_only, raft, stream_leader_only;
    int64_t offset, limit; /* limit 0: the default, 1024 */
} nd_jsz_query_t;

/* /healthz's JetStream part: nats-server's HealthzOptions beyond the server checks. */
typedef struct nd_js_health_query {
    bool enabled_only;                       /* js-enabled-only (or the old js-enabled) */
    const char *account, *stream, *consumer; /* NULL or "": every one */
} nd_js_health_query_t;

/* One account's figures, and one stream's (for /metrics). */
typedef struct nd_js_acct_stats {
    char *name; /* owned */
    uint64_t memory, storage, streams, consumers, api_total, api_errors;
} nd_js_acct_stats_t;

typedef struct nd_js_stream_stats {
    char *account, *name; /* owned */
    bool memory;          /* memory storage, else file */
    uint64_t messages, bytes, consumers, first_seq, last_seq, subjects;
} nd_js_stream_stats_t;

/* The server's JetStream figures; free the arrays with nd_js_stats_fini. */
typedef struct nd_js_stats {
    int64_t max_memory, max_storage; /* the limits in force */
    uint64_t memory, storage, reserved_memory, reserved_storage;
    uint64_t accounts, streams, consumers, messages, bytes, api_total, api_errors;
    nd_js_acct_stats_t *accts; /* by account name */
    size_t naccts;
    nd_js_stream_stats_t *streams_detail; /* by account, then stream name */
    size_t nstreams_detail;
} nd_js_stats_t;

typedef struct nd_js_mon {
    void *arg; /* JetStream's, passed back to every call */
    /* /varz "jetstream": nats-server's JetStreamVarz (config, stats, limits). */
    struct json_t *(*varz)(void *arg);
    /* /jsz: nats-server's JSInfo for the query; now_ns: the request's wall clock. */
    struct json_t *(*jsz)(void *arg, const nd_jsz_query_t *q, int64_t now_ns);
    /* /healthz past the server checks: appends one nats-server HealthzError object per problem
     * found to errors (a JSON array). Returns: the HTTP status, 200 when healthy. */
    int (*healthz)(void *arg, const nd_js_health_query_t *q, struct json_t *errors);
    /* Totals, and with detail the per-account and per-stream rows. */
    void (*stats)(void *arg, nd_js_stats_t *out, bool detail);
} nd_js_mon_t;

static inline void
nd_js_stats_fini(nd_js_stats_t *s)
{
    for (size_t i = 0; i < s->naccts; i++)
        nd_free(s->accts[i].name);
    for (size_t i = 0; i < s->nstreams_detail; i++) {
        nd_free(s->streams_detail[i].account);
        nd_free(s->streams_detail[i].name);
    }
    nd_free(s->accts);
    nd_free(s->streams_detail);
    s->accts = NULL;
    s->streams_detail = NULL;
    s->naccts = s->nstreams_detail = 0;
}

typedef struct nd_server {
    /* immutable after start. The reloadable fields of opts keep their values at start: read
     * the ones in force from `live` (or, on the reloading thread, from the reload state). */
    nd_opts_t opts;
    nd_pool_t *pool;
    nd_poller_t *poller;
    struct nd_acct *gacct; /* the global account ($G) */
    struct nd_auth_slot *auth; /* the auth snapshot in force (auth/auth.h); locks itself */
    char server_id[57];
    int port;          /* the bound client port */
    int mqtt_port; /* the bound MQTT port (src/mqtt sets it before the pool starts), 0: off */
    struct nd_listener *listener; /* the client port (net/listener.h) */
    struct nd_routes *routes;     /* the cluster (net/route.h), NULL when not clustered */
    struct nd_leafs *leafs;       /* leaf nodes (net/leaf.h), NULL when not configured */
    struct nd_gateways *gateways; /* gateways (net/gateway.h), NULL when not configured */
    struct nd_ws_srv *ws;         /* the websocket port (net/ws.h), NULL when not configured */
    /* MQTT over WebSocket (the path /mqtt of the websocket port, conn_ws.c): the MQTT service's
     * protocol and its argument (net/pconn.h), registered by src/mqtt before the pool starts
     * (nd_pconn_register_ws); NULL when MQTT is not configured */
    const struct nd_pconn_proto *ws_mqtt_proto;
    void *ws_mqtt_arg;
    nd_iobuf_t *rscratch, *wscratch; /* one each per worker, indexed by ctx->worker */
    /* client TLS (net/tls.h), NULL when off: a reference, replaced by a reload. Read and
     * written only at start and by the reloading thread (under the reload mutex), which
     * publishes it in the INFO template; other threads read it from there (info->tls) and take
     * their own reference (a connection keeps the context it started with). */
    struct nd_tls_ctx *tls;
    /* any thread, atomic */
    _Atomic uint64_t next_cid;
    _Atomic int32_t nconns;
    nd_server_info_t *_Atomic info; /* epoch-protected; see nd_server_info_t */
    _Atomic bool ldm;               /* lame duck mode: every INFO carries "ldm":true */
    nd_server_live_t live ND_CACHE_ALIGNED;

    /* reload and lame duck (src/server/reload.c, lameduck.c): their own locking */
    struct nd_reload *reload;
    struct nd_lameduck *lameduck;

    /* monitoring (src/mon): immutable after start; the registry locks itself */
    struct nd_connreg *connreg; /* live connections, closed ring, totals */
    struct nd_mon *mon;         /* the HTTP monitor (set by nd_mon_attach), NULL when off */
    int64_t start_wall_ns;      /* when the server started (wall clock) */
    /* Set once before the first client can connect (nd_server_on_client_event); NULL: none.
     * This is how higher rooms hear of connections without net including them. */
    nd_client_event_fn client_event;
    /* JetStream's monitoring hook (above): NULL until JetStream has started, and again once it
     * is freed (after the pool's shutdown). Set with nd_server_set_js_mon, read with
     * nd_server_js_mon. Owned by src/js. */
    const nd_js_mon_t *_Atomic js_mon;
} nd_server_t;

/* Installs (or with NULL, removes) JetStream's monitoring hook. Ctx: the main thread. */
static inline void
nd_server_set_js_mon(nd_server_t *s, const nd_js_mon_t *m)
{
    /* release: pairs with the acquire in nd_server_js_mon, so a reader sees the table filled. */
    atomic_store_explicit(&s->js_mon, m, memory_order_release);
}

/* Returns: JetStream's monitoring hook, or NULL while JetStream is not running. Ctx: any thread. */
static inline const nd_js_mon_t *
nd_server_js_mon(const nd_server_t *s)
{
    /* acquire: pairs with the release in nd_server_set_js_mon. */
    return atomic_load_explicit(&s->js_mon, memory_order_acquire);
}

/* Registers the one client-event hook. Ctx: the starting thread, before clients connect. */
void nd_server_on_client_event(nd_server_t *s, nd_client_event_fn fn);

/* Binds the listener (connections wait in its backlog until nd_server_accept); installs the
 * poller as the pool's idle hook, so call it before nd_pool_start. Returns: NULL after logging
 * why. Ctx: main thread. */
nd_server_t *nd_server_start(const nd_opts_t *opts, nd_pool_t *pool);
/* Starts accepting clients and says "Server is ready": after the services a client may ask for
 * at once ($SYS, JetStream) are subscribed, as nats-server starts JetStream before its accept
 * loop. Ctx: main thread, after nd_pool_start. */
void nd_server_accept(nd_server_t *s);
/* Closes the listener and waits until no accept can run any more (lame duck mode, shutdown).
 * Ctx: a non-worker thread; not concurrently with itself. */
void nd_server_stop_listening(nd_server_t *s);
/* Stops accepting, before the pool's shutdown (which closes the connections). */
void nd_server_stop_accepting(nd_server_t *s);
/* Copies the reloadable options of o into s->live (start and reload). Ctx: the main thread. */
void nd_server_set_live(nd_server_t *s, const nd_opts_t *o);
/* Builds the INFO template from the options in force (max_payload from s->live, TLS from
 * s->tls, of which it takes a reference) and publishes it; the previous one is retired through
 * ctx's epoch record. Ctx: a non-worker thread's ctx (start, or the reloading thread). */
void nd_server_publish_info(nd_ctx_t *ctx, nd_server_t *s);
/* Installs tls (its reference passes to s; NULL: TLS off) as the client TLS context for new
 * connections and publishes an INFO template that carries it; connections keep the context they
 * started with. Ctx: the reloading thread's ctx. */
void nd_server_set_tls(nd_ctx_t *ctx, nd_server_t *s, struct nd_tls_ctx *tls);
/* Appends our own client URLs ("host:port": client_advertise, the listen host, or every
 * non-loopback address when listening on all) to the jansson array arr. */
struct json_t;
void nd_server_own_connect_urls(nd_server_t *s, struct json_t *arr);
/* Appends our WebSocket URLs ("host:port": websocket { advertise }, else its host and port, as
 * for the client port) to arr. */
void nd_server_own_ws_urls(nd_server_t *s, struct json_t *arr);
/* Frees the server after the pool has shut down. */
void nd_server_free(nd_server_t *s);

#endif
