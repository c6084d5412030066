/* The server: listener, INFO template and accept; see server.h. */
#include "net/server.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "auth/auth.h"
#include "net/conn.h"
#include "net/listener.h"
#include "net/gateway.h"
#include "net/leaf.h"
#include "net/route.h"
#include "util/log.h"
#include "net/connreg.h"
#include "subj/account.h"
#include "actors/alloc.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"
#include "util/nkey.h"
#include "net/tls.h"
#include "net/ws.h"

static void
make_server_id(char out[57])
{
    uint8_t key[32];
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key)
        nd_fatal("getrandom failed");
    nd_nkey_encode_public(ND_NKEY_PREFIX_SERVER, key, out);
}

static void
free_info(nd_epoch_entry_t *e)
{
    nd_server_info_t *info = ND_EPOCH_CONTAINER(e, nd_server_info_t, retire);
    nd_tls_ctx_unref(info->tls);
    nd_free(info->ws_text);
    nd_free(info);
}

void
nd_server_set_live(nd_server_t *s, const nd_opts_t *o)
{
    nd_server_live_t *l = &s->live;
    atomic_store_explicit(&l->max_payload, o->max_payload, memory_order_relaxed);
    atomic_store_explicit(&l->max_control_line, o->max_control_line, memory_order_relaxed);
    atomic_store_explicit(&l->max_connections, o->max_connections, memory_order_relaxed);
    atomic_store_explicit(&l->ping_interval_ms, o->ping_interval_ms, memory_order_relaxed);
    atomic_store_explicit(&l->ping_max, o->ping_max, memory_order_relaxed);
    atomic_store_explicit(&l->write_deadline_ms, o->write_deadline_ms, memory_order_relaxed);
    atomic_store_explicit(&l->no_fast_producer_stall, o->no_fast_producer_stall,
                          memory_order_relaxed);
    /* release: a connection that sees the new generation (acquire, conn.c refresh_live) also
     * sees the values stored above. */
    atomic_fetch_add_explicit(&l->gen, 1, memory_order_release);
}

/* "host:port" for a client to reach us, with IPv6 in brackets. */
static void
add_url(json_t *arr, const char *host, int port)
{
    char u[300];
    snprintf(u, sizeof u, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    json_array_append_new(arr, json_string(u));
}

/* nats-server's getConnectURLs: the advertised address, else the host, else every interface's
 * address but loopback. */
static void
own_urls(json_t *arr, const char *adv, const char *h, int port)
{
    if (adv != NULL && adv[0] != '\0') {
        if (strrchr(adv, ':') != NULL && adv[0] != '[')
            json_array_append_new(arr, json_string(adv));
        else
            add_url(arr, adv, port);
        return;
    }
    if (h != NULL && h[0] != '\0' && strcmp(h, "0.0.0.0") != 0 && strcmp(h, "::") != 0) {
        add_url(arr, h, port);
        return;
    }
    /* Listening on every interface: every address but loopback, as nats-server lists them. */
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
        char ip[48];
        if (i->ifa_addr == NULL)
            continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof ip);
            if (strncmp(ip, "127.", 4) == 0)
                continue;
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const struct in6_addr *a6 = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
            if (IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_LINKLOCAL(a6))
                continue;
            inet_ntop(AF_INET6, a6, ip, sizeof ip);
        } else {
            continue;
        }
        add_url(arr, ip, port);
    }
    freeifaddrs(ifs);
}

void
nd_server_own_connect_urls(nd_server_t *s, json_t *arr)
{
    own_urls(arr, s->opts.client_advertise, s->opts.host, s->port);
}

void
nd_server_own_ws_urls(nd_server_t *s, json_t *arr)
{
    if (s->ws == NULL)
        return;
    own_urls(arr, s->opts.ws->advertise, s->opts.ws->host, s->ws->port);
}

/* One INFO template is built at a time: a route joining and a reload may race. */
static pthread_mutex_t info_mu = PTHREAD_MUTEX_INITIALIZER;

void
nd_server_publish_info(nd_ctx_t *ctx, nd_server_t *s)
{
    pthread_mutex_lock(&info_mu);
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(s->server_id));
    json_object_set_new(o, "server_name",
                        json_string(s->opts.server_name ? s->opts.server_name : s->server_id));
    json_object_set_new(o, "version", json_string(NATSD_COMPAT_VERSION));
    json_object_set_new(o, "proto", json_integer(1));
    json_object_set_new(o, "go", json_string("natsd " NATSD_VERSION));
    json_object_set_new(o, "host", json_string(s->opts.host));
    json_object_set_new(o, "port", json_integer(s->port));
    json_object_set_new(o, "headers", json_boolean(!s->opts.no_header_support));
    nd_auth_t *auth = s->auth != NULL ? nd_auth_slot_get(s->auth) : NULL;
    if (auth != NULL && auth->info_auth_required)
        json_object_set_new(o, "auth_required", json_true());
    nd_auth_unref(ctx, auth);
    if (s->tls != NULL) {
        /* nats-server's NewServer: tls_required unless allow_non_tls, which says tls_available. */
        if (s->opts.allow_non_tls)
            json_object_set_new(o, "tls_available", json_true());
        else
            json_object_set_new(o, "tls_required", json_true());
        if (s->tls->verify)
            json_object_set_new(o, "tls_verify", json_true());
    }
    json_object_set_new(
        o, "max_payload",
        json_integer(nd_server_live_get(s, max_payload)));
    if (s->opts.jetstream)
        json_object_set_new(o, "jetstream", json_true());
    if (s->routes != NULL) {
        char name[128];
        nd_routes_name(s->routes, name, sizeof name);
        json_object_set_new(o, "cluster", json_string(name));
        if (!nd_routes_no_advertise(s->routes)) {
            json_t *urls = json_array();
            nd_server_own_connect_urls(s, urls);
            nd_routes_connect_urls(s->routes, urls);
            json_object_set_new(o, "connect_urls", urls);
        }
    }
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    /* Keep "INFO {...", dropping the closing brace: each connection appends its own fields. */
    size_t n = strlen(js);
    nd_server_info_t *info = nd_xmalloc(sizeof(*info) + n + 6);
    info->tls = nd_tls_ctx_ref(s->tls);
    memcpy(info->text, "INFO ", 5);
    memcpy(info->text + 5, js, n - 1);
    info->len = 5 + n - 1;
    info->text[info->len] = '\0';
    free(js);
    info->ws_text = NULL;
    info->ws_len = 0;
    if (s->ws != NULL && json_object_get(o, "connect_urls") != NULL) {
        /* nats-server gives WebSocket clients the cluster's WebSocket URLs as connect_urls. */
        json_t *urls = json_array();
        nd_server_own_ws_urls(s, urls);
        nd_routes_ws_connect_urls(s->routes, urls);
        json_object_set_new(o, "connect_urls", urls);
        js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        n = strlen(js);
        info->ws_text = nd_xmalloc(n + 6);
        memcpy(info->ws_text, "INFO ", 5);
        memcpy(info->ws_text + 5, js, n - 1);
        info->ws_len = 5 + n - 1;
        info->ws_text[info->ws_len] = '\0';
        free(js);
    }
    json_decref(o);
    /* release: a connection's acquire load in on_start sees the text written above. */
    nd_server_info_t *old = atomic_exchange_explicit(&s->info, info, memory_order_release);
    if (old != NULL)
        nd_epoch_retire(ctx, &old->retire, free_info);
    pthread_mutex_unlock(&info_mu);
}

void
nd_server_set_tls(nd_ctx_t *ctx, nd_server_t *s, nd_tls_ctx_t *tls)
{
    nd_tls_ctx_t *old = s->tls;
    s->tls = tls;
    /* The old template keeps its own reference until no connection can still be reading it. */
    nd_server_publish_info(ctx, s);
    nd_tls_ctx_unref(old);
}

/* The client port's accept callback. Ctx: the listener actor's turn. */
static void
on_accept(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_server_t *s = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nd_conn_spawn(ctx, s, fd);
}

/* The websocket port's accept callback. Ctx: the listener actor's turn. */
static void
on_accept_ws(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_server_t *s = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nd_conn_spawn_ws(ctx, s, fd, s->ws);
}

/* The authorization parts of nats-server's validateWebsocketOptions (with 2.9.10's texts).
 * Returns: -1 after logging why. */
static int
ws_validate_auth(const nd_opts_t *o, const nd_ws_opts_t *wo)
{
    const char *nau = wo->no_auth_user;
    if (nau != NULL && nau[0]) {
        if (o->operators.n > 0) {
            nd_log_error("no_auth_user not compatible with Trusted Operator");
            return -1;
        }
        if (o->nusers == 0) {
            nd_log_error("no_auth_user: \"%s\" present, but users are not defined", nau);
            return -1;
        }
        bool found = false;
        for (size_t i = 0; i < o->nusers && !found; i++)
            found = (o->users[i].name != NULL && strcmp(o->users[i].name, nau) == 0) ||
                    (o->users[i].nkey != NULL && strcmp(o->users[i].nkey, nau) == 0);
        if (!found) {
            nd_log_error("no_auth_user: \"%s\" not present as user in authorization block "
                         "or account configuration",
                         nau);
            return -1;
        }
    }
    if (o->nusers > 0 && wo->user != NULL && wo->user[0]) {
        nd_log_error("websocket authentication username not compatible with presence of "
                     "users/nkeys");
        return -1;
    }
    if (o->nusers > 0 && wo->token != NULL && wo->token[0]) {
        nd_log_error("websocket authentication token not compatible with presence of users/nkeys");
        return -1;
    }
    if (wo->jwt_cookie != NULL && wo->jwt_cookie[0] && o->operators.n == 0 &&
        o->trusted_keys.n == 0) {
        nd_log_error("trusted operators or trusted keys configuration is required for JWT "
                     "authentication via cookie \"%s\"",
                     wo->jwt_cookie);
        return -1;
    }
    for (size_t i = 0; i + 1 < wo->headers.n; i += 2) {
        const char *k = wo->headers.v[i];
        if (strcasecmp(k, "host") == 0 || strcasecmp(k, "content-length") == 0 ||
            strcasecmp(k, "connection") == 0 || strcasecmp(k, "upgrade") == 0 ||
            strcasecmp(k, "nats-no-masking") == 0) {
            nd_log_error("websocket: invalid header \"%s\" not allowed", k);
            return -1;
        }
        if (strncasecmp(k, "sec-websocket-", 14) == 0) {
            nd_log_error("websocket: invalid header \"%s\", \"Sec-WebSocket-\" prefix not allowed",
                         k);
            return -1;
        }
    }
    return 0;
}

/* websocket {}: nats-server's validateWebsocketOptions checks, its TLS and the bound port.
 * Returns: -1 after logging why. */
static int
start_ws(nd_server_t *s)
{
    const nd_ws_opts_t *wo = s->opts.ws;
    if (wo == NULL || wo->port == 0)
        return 0;
    if (wo->tls == NULL && !wo->no_tls) {
        nd_log_error("websocket requires TLS configuration");
        return -1;
    }
    if (ws_validate_auth(&s->opts, wo) < 0)
        return -1;
    nd_ws_srv_t *ws = nd_xcalloc(1, sizeof(*ws));
    s->ws = ws;
    ws->handshake_ms = wo->handshake_timeout_ms > 0 ? wo->handshake_timeout_ms : 0;
    ws->same_origin = wo->same_origin;
    ws->compress = wo->compression;
    ws->ping_ms = wo->ping_interval_ms > 0 ? wo->ping_interval_ms : 0;
    /* nats-server's wsConfigAuth: a user, a token or a no_auth_user in websocket {} replaces
     * the server's for WebSocket clients, who then must authenticate. */
    ws->auth_override = (wo->user != NULL && wo->user[0]) || (wo->token != NULL && wo->token[0]) ||
                        (wo->no_auth_user != NULL && wo->no_auth_user[0]);
    const char *cookies[4] = {wo->jwt_cookie, wo->user_cookie, wo->pass_cookie, wo->token_cookie};
    for (size_t i = 0; i < 4; i++)
        ws->cookie[i] = cookies[i] != NULL && cookies[i][0] ? nd_xstrdup(cookies[i]) : NULL;
    if (wo->headers.n >= 2) {
        size_t len = 1;
        for (size_t i = 0; i + 1 < wo->headers.n; i += 2)
            len += strlen(wo->headers.v[i]) + strlen(wo->headers.v[i + 1]) + 4;
        ws->raw_headers = nd_xmalloc(len);
        size_t off = 0;
        for (size_t i = 0; i + 1 < wo->headers.n; i += 2)
            off += (size_t)snprintf(ws->raw_headers + off, len - off, "%s: %s\r\n",
                                    wo->headers.v[i], wo->headers.v[i + 1]);
    }
    if (wo->allowed_origins.n > 0) {
        ws->origins = nd_xcalloc(wo->allowed_origins.n, sizeof(*ws->origins));
        for (size_t i = 0; i < wo->allowed_origins.n; i++) {
            const char *o = wo->allowed_origins.v[i];
            if (!nd_ws_origin_parse(o, strlen(o), &ws->origins[ws->norigins])) {
                nd_log_error("error parsing allowed origin: %s", o);
                continue;
            }
            ws->norigins++;
        }
    }
    if (wo->tls != NULL) {
        char err[512];
        ws->tls = nd_tls_ctx_new(wo->tls, err, sizeof err);
        if (ws->tls == NULL) {
            nd_log_error("websocket TLS: %s", err);
            return -1;
        }
    }
    /* nats-server's baseline: an empty host is 0.0.0.0, not the client port's host. */
    const char *host = wo->host != NULL && wo->host[0] ? wo->host : "0.0.0.0";
    ws->listener = nd_listener_bind(&(nd_listener_decl_t){
        .host = host,
        .port = wo->port,
        .backlog = 4096,
        .what = "websocket",
        .ready = "Listening for websocket clients on",
        .accept_name = "Websocket",
        .errlog = ND_LISTENER_ERRLOG_NATS,
        .on_accept = on_accept_ws,
        .arg = s,
    });
    if (ws->listener == NULL)
        return -1;
    ws->port = nd_listener_port(ws->listener);
    return 0;
}

static void
log_unbuilt(const nd_opts_t *o)
{
    if (!nd_routes_configured(o) && (o->routes || o->cluster_name))
        nd_log_warn("--routes and --cluster_name need a cluster port (--cluster): ignored");
    if (o->config_file)
        nd_log_info("Using configuration file: %s", o->config_file);
}

/* Builds the client TLS context from the options in force (tls.h). Returns: -1 after logging. */
static int
start_tls(nd_server_t *s, const nd_opts_t *opts)
{
    nd_tls_opts_t *t = NULL;
    char err[512];
    if (nd_tls_client_opts(opts, &t, err, sizeof err) < 0) {
        nd_log_error("%s", err);
        return -1;
    }
    if (t == NULL)
        return 0;
    s->tls = nd_tls_ctx_new(t, err, sizeof err);
    nd_tls_opts_free(t);
    if (s->tls == NULL) {
        nd_log_error("TLS: %s", err);
        return -1;
    }
    return 0;
}

nd_server_t *
nd_server_start(const nd_opts_t *opts, nd_pool_t *pool)
{
    nd_server_t *s = nd_xaligned(sizeof(*s));
    nd_opts_copy(&s->opts, opts);
    s->pool = pool;
    atomic_init(&s->next_cid, 0);
    atomic_init(&s->nconns, 0);
    make_server_id(s->server_id);
    s->start_wall_ns = nd_mon_wall_ns();
    s->connreg = nd_connreg_new(opts->max_closed_clients != 0 ? opts->max_closed_clients
                                                              : ND_MON_DEFAULT_MAX_CLOSED,
                                nd_conn_mon_ident);

    /* nats-server 2.10's banner (server.go Start), with natsd's own version and pool size. */
    nd_log_info("Starting nats-server (natsd %s)", NATSD_VERSION);
    /* The version line names what runs (issue 18); --version and INFO keep the nats-server
     * release natsd is compatible with, which clients and their test suites read. */
    nd_log_info("  Version:  %s (natsd, compatible with nats-server %s)", NATSD_VERSION,
                NATSD_COMPAT_VERSION);
#ifdef ND_GIT_COMMIT
    nd_log_info("  Git:      [%s]", ND_GIT_COMMIT);
#else
    nd_log_info("  Git:      [not set]");
#endif
    nd_log_info("  natsd:    %s, %u workers", NATSD_VERSION, nd_pool_workers(pool));
    if (opts->cluster_name != NULL && opts->cluster_name[0] != '\0')
        nd_log_info("  Cluster:  %s", opts->cluster_name);
    nd_log_info("  Name:     %s",
                opts->server_name && *opts->server_name ? opts->server_name : s->server_id);
    nd_log_info("  ID:       %s", s->server_id);
    log_unbuilt(opts);

    if (start_tls(s, opts) < 0) {
        nd_server_free(s);
        return NULL;
    }
    s->listener = nd_listener_bind(&(nd_listener_decl_t){
        .host = s->opts.host,
        .port = s->opts.port,
        .backlog = 4096,
        .what = "port",
        .ready = "Listening for client connections on",
        .accept_name = "Client",
        .errlog = ND_LISTENER_ERRLOG_NATS,
        .on_accept = on_accept,
        .arg = s,
    });
    if (s->listener == NULL) {
        nd_server_free(s);
        return NULL;
    }
    s->port = nd_listener_port(s->listener);
    if (start_ws(s) < 0) {
        nd_server_free(s);
        return NULL;
    }
    nd_server_set_live(s, opts);
    char gerr[256];
    if (nd_gateways_check(opts, gerr, sizeof gerr) != 0) {
        nd_log_error("%s", gerr); /* an embedder's options (natsd checks them before) */
        nd_server_free(s);
        return NULL;
    }
    if (nd_gateways_configured(opts)) {
        /* Before the routes: their INFO carries our gateway URL. */
        s->gateways = nd_gateways_new(s);
        if (s->gateways == NULL) {
            nd_server_free(s);
            return NULL;
        }
    }
    /* Leafs before routes: the route INFO carries our leafnode URL. */
    if (nd_leafs_configured(opts)) {
        s->leafs = nd_leafs_new(s);
        if (s->leafs == NULL) {
            nd_server_free(s);
            return NULL;
        }
    }
    if (nd_routes_configured(opts)) {
        if (opts->jetstream) {
            /* Clustered JetStream needs Raft, which natsd does not have yet: every node would
             * answer $JS.API on its own. */
            nd_log_error("JetStream with a cluster (clustered JetStream) is not supported by natsd "
                         "yet: remove jetstream {} or cluster {}");
            nd_server_free(s);
            return NULL;
        }
        s->routes = nd_routes_new(s);
        if (s->routes == NULL) {
            nd_server_free(s);
            return NULL;
        }
    }
    s->rscratch = nd_xaligned(nd_pool_workers(pool) * sizeof(nd_iobuf_t));
    s->wscratch = nd_xaligned(nd_pool_workers(pool) * sizeof(nd_iobuf_t));
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    s->gacct = nd_acct_new(ctx, "$G", 2);
    if (s->routes != NULL)
        nd_routes_attach(s->routes, s->gacct); /* before any account inherits from it */
    if (s->gateways != NULL)
        nd_gateways_attach(s->gateways, s->gacct);
    s->auth = nd_auth_slot_new();
    nd_auth_slot_set(ctx, s->auth, nd_auth_new(ctx, opts, s->gacct, NULL));
    nd_server_publish_info(ctx, s);
    nd_ctx_external_free(ctx);
    const char *own = getenv("NATSD_POLLER_THREAD");
    s->poller = nd_poller_new(pool, own != NULL && strcmp(own, "1") == 0);
    if (own == NULL || strcmp(own, "1") != 0) {
        nd_pool_idle_t idle;
        nd_poller_idle(&idle, s->poller);
        nd_pool_set_idle(pool, &idle);
    }
    return s;
}

void
nd_server_accept(nd_server_t *s)
{
    if (s->ws != NULL) {
        /* nats-server starts the websocket server before its client accept loop. */
        nd_listener_start(s->ws->listener, s->pool, s->poller);
        const char *h =
            s->opts.ws->host != NULL && s->opts.ws->host[0] ? s->opts.ws->host : "0.0.0.0";
        nd_log_info("Listening for websocket clients on %s://%s:%d", s->ws->tls ? "wss" : "ws",
                    h, s->ws->port);
        if (s->ws->tls == NULL)
            nd_log_warn("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!");
    }
    nd_listener_start(s->listener, s->pool, s->poller);
    nd_listener_log_ready(s->listener);
    if (s->tls != NULL)
        nd_log_info("TLS required for client connections");
    nd_log_info("Server is ready");
    if (s->routes != NULL)
        nd_routes_start(s->routes);
    if (s->leafs != NULL)
        nd_leafs_start(s->leafs);
    if (s->gateways != NULL)
        nd_gateways_start(s->gateways);
}

void
nd_server_stop_listening(nd_server_t *s)
{
    nd_listener_stop(s->listener);
    if (s->ws != NULL)
        nd_listener_stop(s->ws->listener);
}

void
nd_server_stop_accepting(nd_server_t *s)
{
    nd_server_stop_listening(s);
    nd_routes_stop(s->routes);
    nd_leafs_stop(s->leafs);
    nd_gateways_stop(s->gateways);
    if (s->gacct != NULL) {
        /* Connections hold their own references; ours would keep the pool's shutdown waiting. */
        nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
        if (s->auth != NULL)
            nd_auth_slot_clear(ctx, s->auth); /* it holds every account */
        nd_actor_unref(ctx, &s->gacct->actor);
        nd_ctx_external_free(ctx);
        s->gacct = NULL;
    }
}

void
nd_server_free(nd_server_t *s)
{
    nd_listener_free(s->listener); /* stopped already, or never started */
    if (s->ws != NULL) {
        nd_listener_free(s->ws->listener);
        nd_tls_ctx_unref(s->ws->tls);
        nd_ws_srv_free(s->ws);
    }
    nd_routes_free(s->routes);
    nd_leafs_free(s->leafs);
    nd_gateways_free(s->gateways);
    if (s->poller != NULL)
        nd_poller_free(s->poller);
    /* Retired INFOs were freed by the pool's shutdown (it runs every pending destructor). */
    nd_server_info_t *info = atomic_load_explicit(&s->info, memory_order_relaxed);
    if (info != NULL) {
        nd_tls_ctx_unref(info->tls);
        nd_free(info->ws_text);
    }
    nd_free(info);
    for (unsigned i = 0; s->rscratch != NULL && i < nd_pool_workers(s->pool); i++) {
        nd_free(s->rscratch[i].p);
        nd_free(s->wscratch[i].p);
    }
    nd_free(s->rscratch);
    nd_free(s->wscratch);
    nd_connreg_free(s->connreg);
    nd_auth_slot_free(s->auth);
    nd_tls_ctx_unref(s->tls);
    nd_opts_free(&s->opts);
    nd_free(s);
}

void
nd_server_on_client_event(nd_server_t *s, nd_client_event_fn fn)
{
    s->client_event = fn;
}
