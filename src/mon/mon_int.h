/* What the files of src/mon share: the monitor, one HTTP request as endpoints see it, and the
 * endpoint handlers. Private to src/mon. */
#ifndef ND_MON_INT_H
#define ND_MON_INT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/connreg.h"
#include "mon/monitor.h"
#include "net/poller.h"
#include "net/server.h"

/* Endpoints, for http_req_stats and routing. */
#define ND_MON_ENDPOINTS(X)                                                                        \
    X(ROOT, "/")                                                                                   \
    X(VARZ, "/varz")                                                                               \
    X(CONNZ, "/connz")                                                                             \
    X(ROUTEZ, "/routez")                                                                           \
    X(GATEWAYZ, "/gatewayz")                                                                       \
    X(LEAFZ, "/leafz")                                                                             \
    X(SUBSZ, "/subsz")                                                                             \
    X(SUBSCRIPTIONSZ, "/subscriptionsz")                                                           \
    X(ACCOUNTZ, "/accountz")                                                                       \
    X(ACCSTATZ, "/accstatz")                                                                       \
    X(JSZ, "/jsz")                                                                                 \
    X(HEALTHZ, "/healthz")                                                                         \
    X(METRICS, "/metrics")

typedef enum {
#define ND_MON_EP_ENUM(name, path) ND_MON_EP_##name,
    ND_MON_ENDPOINTS(ND_MON_EP_ENUM)
#undef ND_MON_EP_ENUM
        ND_MON_EP_COUNT
} nd_mon_ep_t;

extern const char *const nd_mon_ep_paths[ND_MON_EP_COUNT];

/* The http_auth credentials in force. Immutable once published; a reload publishes a new one
 * and retires the monitor's reference through the pool's epoch. A request takes its own
 * reference inside an epoch section and drops it after the check, so a bcrypt comparison runs
 * outside the section. */
typedef struct nd_mon_auth {
    nd_epoch_entry_t retire;
    _Atomic uint32_t refs;
    char *user, *pass, *token; /* NULL: that credential is not configured */
} nd_mon_auth_t;

struct nd_mon {
    /* immutable after start */
    nd_server_t *srv;
    struct nd_listener *listener; /* the monitoring port (net/listener.h) */
    int port;
    bool https; /* -ms / https_port: connections speak TLS with the server's tls {} context */
    /* https: the server's TLS context at start (a reference). nats-server's HTTPS listener keeps
     * the TLS config it started with; a reload changes the client port's only. */
    struct nd_tls_ctx *tls;
    char host[256];
    char base_path[256];        /* without a trailing slash: "" for the root */
    uint64_t header_timeout_ns; /* a request's line and headers must arrive within this */
    uint64_t idle_timeout_ns;   /* a kept-alive connection with no request is closed after this */
    uint32_t max_conns;         /* HTTP connections at once; more are refused */
    /* http_auth in force: epoch-protected, replaced by a config reload (nd_mon_set_auth) */
    nd_mon_auth_t *_Atomic auth;
    /* any thread, atomic */
    _Atomic uint32_t nconns;
    _Atomic uint64_t req_stats[ND_MON_EP_COUNT];
};

/* Returns: a reference on the http_auth in force (drop it with nd_mon_auth_unref), or NULL
 * when the monitoring port needs no credential. Ctx: a worker's or an external ctx, outside any
 * epoch section. */
nd_mon_auth_t *nd_mon_auth_get(nd_ctx_t *ctx, nd_mon_t *m);
/* NULL is fine. Ctx: any thread. */
void nd_mon_auth_unref(nd_mon_auth_t *a);

typedef struct nd_mon_param {
    char *key, *val; /* owned, percent-decoded */
} nd_mon_param_t;

/* One request, from routing to the response. */
typedef struct nd_mon_req {
    nd_mon_t *mon;
    nd_ctx_t *ctx;
    nd_mon_ep_t ep;
    nd_mon_param_t *params;
    size_t nparams;
    int64_t now_ns;   /* wall clock when the request was routed */
    bool openmetrics; /* the Accept header asks for OpenMetrics text (/metrics) */
    /* the response */
    int status;
    const char *ctype; /* static */
    char *body;        /* owned */
    size_t body_len;
    /* connections gathered for the endpoint (owned references) */
    nd_conn_info_t **conns;
    size_t nconns;
    bool need_subs; /* ask each open connection of conns[] for its subscriptions */
    void (*finish)(struct nd_mon_req *req); /* builds the response once the answers are in */
    void *state; /* the endpoint's, freed by finish (or by nd_mon_req_fini) */
    void (*state_free)(void *state);
} nd_mon_req_t;

/* Runs the endpoint req->ep: either fills the response, or sets need_subs and finish (then the
 * caller gathers subscriptions and calls finish). Ctx: the HTTP connection's turn. */
void nd_mon_route(nd_mon_req_t *req);

/* The listener's accept callback (http.c): spawns an HTTP connection actor. Ctx: the listener
 * actor's turn. */
void nd_mon_http_accept(nd_ctx_t *ctx, int fd, void *arg);
void nd_mon_req_fini(nd_mon_req_t *req);

/* Response helpers. */
void nd_mon_reply_json(nd_mon_req_t *req, int status, json_t *o); /* steals o; JSONP aware */
/* The same without indentation, as Go's json.Marshal (nats-server's /healthz). */
void nd_mon_reply_json_compact(nd_mon_req_t *req, int status, json_t *o);
void nd_mon_reply_text(nd_mon_req_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Query parameters, decoded as Go's strconv does; on a bad value each replies 400 with
 * nats-server's text and returns false. Absent parameters leave *out alone and return true. */
const char *nd_mon_param(const nd_mon_req_t *req, const char *key);
bool nd_mon_param_int(nd_mon_req_t *req, const char *key, int64_t *out);
bool nd_mon_param_uint(nd_mon_req_t *req, const char *key, uint64_t *out);
bool nd_mon_param_bool(nd_mon_req_t *req, const char *key, bool *out);
/* Go's strconv.ParseBool. */
bool nd_mon_parse_bool(const char *s, bool *out);

/* Formatting as nats-server's JSON does. */
void nd_mon_fmt_time(int64_t wall_ns, char out[48]); /* RFC 3339 with nanoseconds, UTC */
void nd_mon_fmt_uptime(int64_t ns, char out[48]);    /* nats-server's "1d2h3m4s" */
void nd_mon_fmt_duration(int64_t ns, char out[48]);  /* Go's time.Duration.String() */
json_t *nd_mon_json_time(int64_t wall_ns);
/* A float64 as Go encodes it: a whole value without a fraction ("1", not "1.0"). */
json_t *nd_mon_json_float(double v);

/* One subscription as nats-server's SubDetail (connz.c). */
json_t *nd_mon_sub_detail(const nd_sub_info_t *si, uint64_t cid, bool with_account);

/* Process figures. */
typedef struct nd_mon_proc {
    uint64_t cpu_ns;       /* user + system CPU time */
    uint64_t rss_bytes;    /* resident set size */
    uint64_t vsize_bytes;  /* virtual memory size */
    uint64_t open_fds;     /* entries of /proc/self/fd */
    uint64_t max_fds;      /* the soft RLIMIT_NOFILE */
    int64_t start_wall_ns; /* when the process started, since the Unix epoch; 0: unknown */
} nd_mon_proc_t;
/* Reads the figures of this process from /proc/self (zeros where it cannot). Ctx: any thread
 * (it reads files: a monitoring request's turn only). */
void nd_mon_proc_read(nd_mon_proc_t *p);
int64_t nd_mon_rss_bytes(void);
double nd_mon_cpu_seconds(void);
double nd_mon_cpu_percent(const nd_server_t *srv, int64_t now_ns);
int nd_mon_cores(void);

/* Endpoints. */
void nd_mon_varz(nd_mon_req_t *req);
void nd_mon_connz(nd_mon_req_t *req);
void nd_mon_subsz(nd_mon_req_t *req);
void nd_mon_healthz(nd_mon_req_t *req);
void nd_mon_routez(nd_mon_req_t *req);
void nd_mon_gatewayz(nd_mon_req_t *req);
void nd_mon_leafz(nd_mon_req_t *req);
void nd_mon_accountz(nd_mon_req_t *req);
void nd_mon_accstatz(nd_mon_req_t *req);
void nd_mon_jsz(nd_mon_req_t *req);
void nd_mon_metrics(nd_mon_req_t *req);
void nd_mon_index(nd_mon_req_t *req);

#endif
