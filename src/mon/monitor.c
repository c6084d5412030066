/* The monitoring listener and the routing of requests to endpoints; see monitor.h. */
#include "mon/monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "util/log.h"
#include "net/listener.h"
#include "net/tls.h"

#define HEADER_TIMEOUT_MS 5000
#define IDLE_TIMEOUT_MS   60000
#define MAX_HTTP_CONNS    1024

const char *const nd_mon_ep_paths[ND_MON_EP_COUNT] = {
#define ND_MON_EP_PATH(name, path) path,
    ND_MON_ENDPOINTS(ND_MON_EP_PATH)
#undef ND_MON_EP_PATH
};

static uint64_t
env_ms(const char *name, uint64_t dflt)
{
    /* Tests shorten the deadlines (a slowloris test should not wait 5 s). */
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt * 1000000ull;
    char *end;
    unsigned long long ms = strtoull(v, &end, 10);
    return *end == '\0' && ms > 0 ? ms * 1000000ull : dflt * 1000000ull;
}

/* "/nats/" -> "/nats"; "nats" -> "/nats"; "/" or "" -> "". */
static void
normalize_base(const char *in, char out[256])
{
    out[0] = '\0';
    if (in == NULL)
        return;
    size_t n = 0;
    if (in[0] != '/')
        out[n++] = '/';
    for (const char *p = in; *p && n < 255; p++)
        out[n++] = *p;
    out[n] = '\0';
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

/* Returns: an owned snapshot of o's http_auth, or NULL when it configures no credential. */
static nd_mon_auth_t *
auth_new(const nd_opts_t *o)
{
    bool user = o->http_auth_user != NULL && *o->http_auth_user;
    bool token = o->http_auth_token != NULL && *o->http_auth_token;
    if (!user && !token)
        return NULL;
    nd_mon_auth_t *a = nd_new(nd_mon_auth_t);
    atomic_init(&a->refs, 1);
    if (user) {
        a->user = nd_xstrdup(o->http_auth_user);
        a->pass = nd_xstrdup(o->http_auth_pass != NULL ? o->http_auth_pass : "");
    }
    if (token)
        a->token = nd_xstrdup(o->http_auth_token);
    return a;
}

static void
wipe_free(char *p)
{
    if (p != NULL)
        OPENSSL_cleanse(p, strlen(p));
    nd_free(p);
}

void
nd_mon_auth_unref(nd_mon_auth_t *a)
{
    /* acq_rel: the last holder sees every other holder's reads done before it frees. */
    if (a == NULL || atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    nd_free(a->user);
    wipe_free(a->pass);
    wipe_free(a->token);
    nd_free(a);
}

nd_mon_auth_t *
nd_mon_auth_get(nd_ctx_t *ctx, nd_mon_t *m)
{
    nd_epoch_enter(ctx);
    /* acquire: pairs with the release exchange in nd_mon_set_auth. */
    nd_mon_auth_t *a = atomic_load_explicit(&m->auth, memory_order_acquire);
    if (a != NULL)
        atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
    nd_epoch_exit(ctx);
    return a;
}

static void
retire_auth(nd_epoch_entry_t *e)
{
    nd_mon_auth_unref(ND_EPOCH_CONTAINER(e, nd_mon_auth_t, retire));
}

bool
nd_mon_set_auth(nd_ctx_t *ctx, nd_mon_t *m, const nd_opts_t *o)
{
    if (m == NULL)
        return false;
    nd_mon_auth_t *a = auth_new(o);
    /* release: a request's acquire load sees the strings written above. */
    nd_mon_auth_t *old = atomic_exchange_explicit(&m->auth, a, memory_order_release);
    /* A request may have loaded old without having counted itself yet: the monitor's reference
     * goes once every epoch section that could have loaded it has ended. */
    if (old != NULL)
        nd_epoch_retire(ctx, &old->retire, retire_auth);
    return true;
}

int
nd_mon_listen(const nd_opts_t *o, nd_mon_t **out)
{
    *out = NULL;
    /* nats-server's StartMonitoring checks. HTTPS uses the client tls {} block (or --tls*
     * flags): the server's context, which http.c takes from m->srv once it is attached. */
    if (o->http_port != 0 && o->https_port != 0) {
        nd_log_error("can't specify both HTTP (%d) and HTTPs (%d) ports", o->http_port,
                     o->https_port);
        return -1;
    }
    bool https = o->https_port != 0;
    if (https) {
        nd_tls_opts_t *t = NULL;
        char err[256];
        int rc = nd_tls_client_opts(o, &t, err, sizeof err);
        nd_tls_opts_free(t);
        if (rc < 0 || t == NULL) {
            nd_log_error("TLS cert and key required for HTTPS");
            return -1;
        }
    }
    int port = https ? o->https_port : o->http_port;
    if (port == 0)
        return 0;
    nd_mon_t *m = nd_xaligned(sizeof(*m));
    memset(m, 0, sizeof(*m));
    const char *host = o->http_host != NULL && *o->http_host ? o->http_host
                       : o->host != NULL && *o->host         ? o->host
                                                             : "0.0.0.0";
    snprintf(m->host, sizeof m->host, "%s", host);
    normalize_base(o->http_base_path, m->base_path);
    m->header_timeout_ns = env_ms("NATSD_MON_HEADER_TIMEOUT_MS", HEADER_TIMEOUT_MS);
    m->idle_timeout_ns = env_ms("NATSD_MON_IDLE_TIMEOUT_MS", IDLE_TIMEOUT_MS);
    m->max_conns = MAX_HTTP_CONNS;
    atomic_init(&m->auth, auth_new(o));
    atomic_init(&m->nconns, 0);
    for (int i = 0; i < ND_MON_EP_COUNT; i++)
        atomic_init(&m->req_stats[i], 0);
    m->https = https;
    m->listener = nd_listener_bind(&(nd_listener_decl_t){
        .host = m->host,
        .port = port,
        .backlog = 1024,
        .what = "monitoring port",
        .ready = https ? "Starting https monitor on" : "Starting http monitor on",
        .ready_suffix = m->base_path,
        .accept_name = "monitoring: ",
        .errlog = ND_LISTENER_ERRLOG_HTTP,
        .on_accept = nd_mon_http_accept,
        .arg = m,
    });
    if (m->listener == NULL) {
        nd_mon_free(m);
        return -1;
    }
    m->port = nd_listener_port(m->listener);
    nd_listener_log_ready(m->listener);
    if (atomic_load_explicit(&m->auth, memory_order_relaxed) != NULL)
        nd_log_info("Monitoring port requires authorization (except /healthz)");
    *out = m;
    return 0;
}

void
nd_mon_attach(nd_mon_t *m, struct nd_server *srv)
{
    if (m == NULL)
        return;
    m->srv = srv;
    srv->mon = m; /* for config reload (http_auth) */
    if (m->https)
        m->tls = nd_tls_ctx_ref(srv->tls); /* before the pool starts: no reload yet */
    nd_listener_start(m->listener, srv->pool, srv->poller);
}

void
nd_mon_stop_accepting(nd_mon_t *m)
{
    if (m != NULL)
        nd_listener_stop(m->listener);
}

void
nd_mon_free(nd_mon_t *m)
{
    if (m == NULL)
        return;
    nd_listener_free(m->listener); /* stopped already, or never started */
    if (m->srv != NULL)
        m->srv->mon = NULL;
    /* Retired snapshots were freed by the pool's shutdown (it runs every pending destructor). */
    nd_mon_auth_unref(atomic_load_explicit(&m->auth, memory_order_relaxed));
    nd_tls_ctx_unref(m->tls);
    nd_free(m);
}

int
nd_mon_port(const nd_mon_t *m)
{
    return m != NULL ? m->port : 0;
}

void
nd_mon_req_fini(nd_mon_req_t *req)
{
    for (size_t i = 0; i < req->nparams; i++) {
        nd_free(req->params[i].key);
        nd_free(req->params[i].val);
    }
    nd_free(req->params);
    req->params = NULL;
    req->nparams = 0;
    if (req->conns != NULL)
        nd_connreg_release_all(req->ctx, req->conns, req->nconns);
    req->conns = NULL;
    req->nconns = 0;
    if (req->state_free != NULL)
        req->state_free(req->state);
    req->state = NULL;
    req->state_free = NULL;
    nd_free(req->body);
    req->body = NULL;
}

void
nd_mon_route(nd_mon_req_t *req)
{
    switch (req->ep) {
    case ND_MON_EP_ROOT:
        nd_mon_index(req);
        break;
    case ND_MON_EP_VARZ:
        nd_mon_varz(req);
        break;
    case ND_MON_EP_CONNZ:
        nd_mon_connz(req);
        break;
    case ND_MON_EP_ROUTEZ:
        nd_mon_routez(req);
        break;
    case ND_MON_EP_GATEWAYZ:
        nd_mon_gatewayz(req);
        break;
    case ND_MON_EP_LEAFZ:
        nd_mon_leafz(req);
        break;
    case ND_MON_EP_SUBSZ:
    case ND_MON_EP_SUBSCRIPTIONSZ:
        nd_mon_subsz(req);
        break;
    case ND_MON_EP_ACCOUNTZ:
        nd_mon_accountz(req);
        break;
    case ND_MON_EP_ACCSTATZ:
        nd_mon_accstatz(req);
        break;
    case ND_MON_EP_JSZ:
        nd_mon_jsz(req);
        break;
    case ND_MON_EP_HEALTHZ:
        nd_mon_healthz(req);
        break;
    case ND_MON_EP_METRICS:
        nd_mon_metrics(req);
        break;
    case ND_MON_EP_COUNT:
        nd_mon_reply_text(req, 404, "404 page not found\n");
        break;
    }
}
