/* /varz: the server's configuration and counters, with nats-server 2.10's field names and order
 * (inventory §4). Counters come from the connection registry (connreg.h): exact totals without
 * touching the message path. */
#include "mon/mon_int.h"
#include "net/gateway.h"
#include "net/route.h"
#include "net/leaf.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"
#include "auth/auth.h"
#include "net/tls.h"
#include "net/ws.h"


static json_t *seconds(double s);

/* nats-server's MQTTOptsVarz: empty without an MQTT port; empty fields left out as Go's
 * omitempty does. */
static json_t *
mqtt_varz(const nd_server_t *s)
{
    json_t *o = json_object();
    const nd_mqtt_opts_t *mo = s->opts.mqtt;
    if (mo == NULL || mo->port == 0)
        return o;
    json_object_set_new(o, "host", json_string(mo->host != NULL && mo->host[0] ? mo->host
                                                                                : "0.0.0.0"));
    json_object_set_new(o, "port", json_integer(s->mqtt_port != 0 ? s->mqtt_port : mo->port));
    if (mo->no_auth_user != NULL && mo->no_auth_user[0])
        json_object_set_new(o, "no_auth_user", json_string(mo->no_auth_user));
    if (mo->auth_timeout_s > 0)
        json_object_set_new(o, "auth_timeout", seconds(mo->auth_timeout_s));
    double tt = mo->tls != NULL && mo->tls->timeout_s > 0 ? mo->tls->timeout_s : 2;
    json_object_set_new(o, "tls_timeout", seconds(tt));
    if (mo->js_domain != NULL && mo->js_domain[0])
        json_object_set_new(o, "js_domain", json_string(mo->js_domain));
    if (mo->ack_wait_ms > 0)
        json_object_set_new(o, "ack_wait", json_integer(mo->ack_wait_ms * 1000000));
    if (mo->max_ack_pending > 0)
        json_object_set_new(o, "max_ack_pending", json_integer(mo->max_ack_pending));
    return o;
}

/* nats-server's WebsocketOptsVarz: the options, every member omitted when empty, the port the
 * one bound. */
static json_t *
ws_varz(const nd_server_t *s)
{
    json_t *w = json_object();
    const nd_ws_opts_t *o = s->opts.ws;
    if (o == NULL || o->port == 0)
        return w;
    json_object_set_new(w, "host", json_string(o->host != NULL && o->host[0] ? o->host : "0.0.0.0"));
    json_object_set_new(w, "port", json_integer(s->ws != NULL ? s->ws->port : o->port));
    if (o->advertise != NULL && o->advertise[0])
        json_object_set_new(w, "advertise", json_string(o->advertise));
    if (o->no_auth_user != NULL && o->no_auth_user[0])
        json_object_set_new(w, "no_auth_user", json_string(o->no_auth_user));
    if (o->jwt_cookie != NULL && o->jwt_cookie[0])
        json_object_set_new(w, "jwt_cookie", json_string(o->jwt_cookie));
    if (o->handshake_timeout_ms > 0)
        json_object_set_new(w, "handshake_timeout", json_integer(o->handshake_timeout_ms * 1000000));
    if (o->auth_timeout_s > 0)
        json_object_set_new(w, "auth_timeout", json_real(o->auth_timeout_s));
    if (o->no_tls)
        json_object_set_new(w, "no_tls", json_true());
    if (o->tls != NULL && o->tls->verify_and_map)
        json_object_set_new(w, "tls_map", json_true());
    if (o->same_origin)
        json_object_set_new(w, "same_origin", json_true());
    if (o->allowed_origins.n > 0) {
        json_t *a = json_array();
        for (size_t i = 0; i < o->allowed_origins.n; i++)
            json_array_append_new(a, json_string(o->allowed_origins.v[i]));
        json_object_set_new(w, "allowed_origins", a);
    }
    if (o->compression)
        json_object_set_new(w, "compression", json_true());
    return w;
}

static json_t *
seconds(double s)
{
    /* Go encodes a float64 that is whole without a fraction ("2", not "2.0"). */
    if (s == (double)(int64_t)s)
        return json_integer((json_int_t)s);
    return json_real(s);
}

void
nd_mon_varz(nd_mon_req_t *req)
{
    const nd_server_t *s = req->mon->srv;
    const nd_opts_t *o = &s->opts;
    nd_connreg_totals_t t;
    nd_connreg_totals(s->connreg, &t);
    int64_t now = req->now_ns;
    char up[48];
    nd_mon_fmt_uptime(now - s->start_wall_ns, up);
    /* The client TLS in force: a reload may replace it, so read it from the INFO template inside
     * an epoch section (server.h). */
    bool tls_on, tls_verify = false;
    double tls_timeout = ND_TLS_DEFAULT_TIMEOUT_MS / 1000.0;
    nd_epoch_enter(req->ctx);
    /* acquire: pairs with the release exchange in nd_server_publish_info. */
    const nd_tls_ctx_t *tls = atomic_load_explicit(&s->info, memory_order_acquire)->tls;
    tls_on = tls != NULL;
    if (tls_on) {
        tls_verify = tls->verify;
        tls_timeout = (double)tls->timeout_ms / 1000.0;
    }
    nd_epoch_exit(req->ctx);

    json_t *v = json_object();
    json_object_set_new(v, "server_id", json_string(s->server_id));
    json_object_set_new(v, "server_name",
                        json_string(o->server_name ? o->server_name : s->server_id));
    json_object_set_new(v, "version", json_string(NATSD_COMPAT_VERSION));
    json_object_set_new(v, "proto", json_integer(1));
    json_object_set_new(v, "go", json_string("natsd " NATSD_VERSION));
    json_object_set_new(v, "host", json_string(o->host ? o->host : "0.0.0.0"));
    json_object_set_new(v, "port", json_integer(s->port));
    /* INFO's rule (server.c): some credential is configured and there is no no_auth_user. */
    nd_auth_t *auth = s->auth != NULL ? nd_auth_slot_get(s->auth) : NULL;
    if (auth != NULL && auth->info_auth_required)
        json_object_set_new(v, "auth_required", json_true());
    nd_auth_unref(req->ctx, auth);
    const char *sys = nd_opts_system_account(o);
    if (sys != NULL)
        json_object_set_new(v, "system_account", json_string(sys));
    if (tls_on) {
        /* As in INFO (server.c): allow_non_tls makes TLS optional. */
        if (!o->allow_non_tls)
            json_object_set_new(v, "tls_required", json_true());
        if (tls_verify)
            json_object_set_new(v, "tls_verify", json_true());
    }
    json_object_set_new(v, "max_connections", json_integer(nd_server_live_get(s, max_connections)));
    if (o->max_subscriptions > 0)
        json_object_set_new(v, "max_subscriptions", json_integer(o->max_subscriptions));
    json_object_set_new(v, "ping_interval",
                        json_integer(nd_server_live_get(s, ping_interval_ms) * 1000000));
    json_object_set_new(v, "ping_max", json_integer(nd_server_live_get(s, ping_max)));
    json_object_set_new(v, "http_host", json_string(req->mon->host));
    json_object_set_new(v, "http_port", json_integer(req->mon->https ? 0 : req->mon->port));
    json_object_set_new(v, "http_base_path", json_string(req->mon->base_path));
    json_object_set_new(v, "https_port", json_integer(req->mon->https ? req->mon->port : 0));
    json_object_set_new(
        v, "auth_timeout",
        seconds(o->auth_timeout_s > 0 ? o->auth_timeout_s : ND_DEFAULT_AUTH_TIMEOUT_MS / 1000.0));
    json_object_set_new(v, "max_control_line",
                        json_integer(nd_server_live_get(s, max_control_line)));
    json_object_set_new(v, "max_payload", json_integer(nd_server_live_get(s, max_payload)));
    json_object_set_new(v, "max_pending", json_integer(o->max_pending));
    json_t *cluster = json_object();
    size_t nroutes = s->routes != NULL ? nd_routes_varz(s->routes, cluster) : 0;
    json_object_set_new(v, "cluster", cluster);
    json_t *gateway = json_object();
    if (s->gateways != NULL)
        (void)nd_gateways_varz(s->gateways, gateway);
    json_object_set_new(v, "gateway", gateway);
    json_t *leaf = json_object();
    if (s->leafs != NULL)
        nd_leafs_varz(s->leafs, leaf);
    json_object_set_new(v, "leaf", leaf);
    json_object_set_new(v, "mqtt", mqtt_varz(s));
    json_object_set_new(v, "websocket", ws_varz(s));
    /* nats-server's JetStreamVarz while JetStream runs, else its zero value. */
    const nd_js_mon_t *jsm = nd_server_js_mon(s);
    json_object_set_new(v, "jetstream", jsm != NULL ? jsm->varz(jsm->arg) : json_object());
    json_object_set_new(v, "tls_timeout", seconds(tls_timeout));
    json_object_set_new(v, "write_deadline",
                        json_integer(nd_server_live_get(s, write_deadline_ms) * 1000000));
    json_object_set_new(v, "start", nd_mon_json_time(s->start_wall_ns));
    json_object_set_new(v, "now", nd_mon_json_time(now));
    json_object_set_new(v, "uptime", json_string(up));
    json_object_set_new(v, "mem", json_integer(nd_mon_rss_bytes()));
    json_object_set_new(v, "cores", json_integer(nd_mon_cores()));
    json_object_set_new(v, "gomaxprocs", json_integer(nd_pool_workers(s->pool)));
    json_object_set_new(v, "cpu", nd_mon_json_float(nd_mon_cpu_percent(s, now)));
    json_object_set_new(v, "connections", json_integer(t.live));
    json_object_set_new(v, "total_connections", json_integer((json_int_t)t.total_conns));
    json_object_set_new(v, "routes", json_integer((json_int_t)nroutes));
    json_object_set_new(v, "remotes", json_integer(0));
    json_object_set_new(v, "leafnodes", json_integer((json_int_t)nd_leafs_count(s->leafs)));
    json_object_set_new(v, "in_msgs", json_integer((json_int_t)t.in_msgs));
    json_object_set_new(v, "out_msgs", json_integer((json_int_t)t.out_msgs));
    json_object_set_new(v, "in_bytes", json_integer((json_int_t)t.in_bytes));
    json_object_set_new(v, "out_bytes", json_integer((json_int_t)t.out_bytes));
    json_object_set_new(v, "slow_consumers", json_integer((json_int_t)t.slow_consumers));
    json_t *scs = json_object();
    json_object_set_new(scs, "clients", json_integer((json_int_t)t.slow_consumers));
    json_object_set_new(scs, "routes", json_integer(0));
    json_object_set_new(scs, "gateways", json_integer(0));
    json_object_set_new(scs, "leafs", json_integer(0));
    json_object_set_new(v, "slow_consumer_stats", scs);
    json_object_set_new(v, "subscriptions", json_integer((json_int_t)t.live_subs));
    json_t *hs = json_object();
    for (int e = 0; e < ND_MON_EP_COUNT; e++) {
        uint64_t n = atomic_load_explicit(&req->mon->req_stats[e], memory_order_relaxed);
        if (n > 0)
            json_object_set_new(hs, nd_mon_ep_paths[e], json_integer((json_int_t)n));
    }
    json_object_set_new(v, "http_req_stats", hs);
    json_object_set_new(v, "config_load_time", nd_mon_json_time(s->start_wall_ns));
    nd_mon_reply_json(req, 200, v);
}
