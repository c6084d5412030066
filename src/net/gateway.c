/* Gateways: the gateway connection's protocol, the gateway table and monitoring (nats-server
 * 2.9's gateway.go, same wire protocol in later versions). The dialer is gateway_dial.c, reply
 * subjects and the reply map gateway_reply.c.
 *
 * Topology. Every server of a cluster keeps one outbound connection to one server of each other
 * cluster (a "remote gateway", named after that cluster) and accepts inbound ones. Messages go
 * out on outbound connections only; interest comes back on them (the remote writes it on its
 * inbound side). Remotes are configured (gateway { gateways: [...] }, retried forever) or
 * implicit: learned from an inbound connection's INFO, from a remote's gossip INFO
 * ("gateway_cmd":1) or from a route peer that connected to one (retried connect_retries times).
 *
 * Handshake. The accepting side sends its gateway INFO at once and expects CONNECT first
 * (anything else: "Authorization Violation"); the dialing side waits for that INFO, checks that
 * it comes from a gateway port of the cluster it wanted, then sends CONNECT and its own INFO,
 * which registers the connection on the accepting side. An outbound connection registers when
 * the INFO arrives: one per remote cluster.
 *
 * Interest: interest-only mode, as 2.9 servers agree on ("gateway_iom":true in our INFO). The
 * accepting side tells the dialing side every subject and queue group the whole cluster listens
 * on (local and routed subscriptions: subj/interest.h's gateway map), per account: "INFO
 * {gateway_cmd:2}" (start), RS+ lines, "INFO {gateway_cmd:3}" (complete), then RS+/RS- as the
 * interest changes (a queue group with weight 1, only when its first member comes or its last
 * goes). The dialing side turns each RS+ into a subscription of origin ND_SUB_GATEWAY in that
 * account's sublist, so publishers find the remote clusters like routes (one RMSG per gateway
 * connection, deliver.c). A peer that is not in interest-only mode (older than 2.9: no
 * "gateway_iom" in its INFO) expects everything until it says otherwise: the outbound connection
 * to it holds a catch-all subscription (">") in every account until an A- for the account or the
 * account's switch to interest-only; its RS- for single subjects are not kept (it drops what it
 * does not want).
 *
 * Delivery: a message published by a client of this server goes to every gateway with
 * interest; one from a route never does (the server that got it from its client sent it) and one
 * from a gateway goes to local subscribers, routes and leafs only. A queue group prefers members in
 * this cluster; only when it has none does one gateway with a member get it (with the group
 * named in the RMSG).
 *
 * Replies. A reply subject crossing a gateway becomes "_GR_.<cluster hash>.<server hash>.<reply>"
 * (hashes: 6 base-62 digits of the SHA-256 of the cluster name and of the server id). A publish
 * on such a subject goes straight to the gateway of that cluster, interest or not; back home, the
 * server named delivers the reply under its original subject (another server of the cluster
 * forwards it there over the route first), so a response never waits for interest to spread.
 * Clients see the reply without the prefix, and their answer to it is sent prefixed (the reply
 * map), as nats-server does.
 *
 * TLS (gateway { tls {} }, or a remote's own tls {} for the dialing side): the handshake comes
 * first, both ways (conn_tls.c), as nats-server's gateways.
 *
 * Toward an optimistic peer dialing us, every account we have is switched to interest-only at its
 * registration (with or without interest, as nats-server 2.9), and a message for an account we
 * do not have gets "A- <account>" once. Not yet: RS- for single subjects (an account is switched
 * before the peer could send any).
 */
#include "net/gateway_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth/auth.h"
#include "net/dial_int.h"
#include "net/listener.h"
#include "net/peer_proto_int.h"
#include "net/route_int.h"
#include "net/tls.h"
#include "natsd/natsd.h"
#include "subj/interest.h"
#include "subj/subject.h"
#include "util/base64.h"
#include "util/gojson.h"
#include "util/log.h"

#define GW_DEFAULT_AUTH_TIMEOUT_S 2.0
#define GW_CMD_GOSSIP             1
#define GW_CMD_ALLSUBS_START      2
#define GW_CMD_ALLSUBS_COMPLETE   3

/* Log prefix of a gateway connection, as nats-server's "<ip>:<port> - gid:<n> - ". */
#define GFMT     "%s:%d - gid:%llu - "
#define GARGS(c) (c)->ip, (c)->port, (unsigned long long)(c)->cid

/* ---- our INFO ---- */

/* Rebuilds our gateway INFO (the URLs changed). Ctx: under g->mu, or before the start. */
static void
build_info(nd_gateways_t *g)
{
    nd_server_t *s = g->srv;
    json_t *o = nd_peer_info_new(s, 1);
    char host[256];
    int port;
    if (nd_route_url_hostport(g->url, host, sizeof host, &port) != 0) {
        snprintf(host, sizeof host, "127.0.0.1");
        port = g->port;
    }
    json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "port", json_integer(port));
    if (g->o->user != NULL)
        json_object_set_new(o, "auth_required", json_true());
    if (g->tls_server != NULL) {
        json_object_set_new(o, "tls_required", json_true());
        json_object_set_new(o, "tls_verify", json_true());
    }
    json_object_set_new(o, "max_payload", json_integer(nd_server_live_get(s, max_payload)));
    json_object_set_new(o, "headers", json_boolean(!s->opts.no_header_support));
    json_object_set_new(o, "gateway", json_string(g->name));
    json_object_set_new(o, "gateway_url", json_string(g->url));
    json_t *urls = json_array();
    for (size_t i = 0; i < g->urls.n; i++)
        json_array_append_new(urls, json_string(g->urls.v[i]));
    json_object_set_new(o, "gateway_urls", urls);
    json_object_set_new(o, "gateway_nrp", json_true());
    json_object_set_new(o, "gateway_iom", json_true());
    size_t n;
    char *line = nd_peer_info_line(o, &n);
    nd_free(g->info);
    g->info = line;
}

static void
write_info(nd_conn_t *c)
{
    nd_gateways_t *g = c->srv->gateways;
    pthread_mutex_lock(&g->mu);
    nd_conn_write(c, g->info, strlen(g->info));
    pthread_mutex_unlock(&g->mu);
}

/* "INFO {"gateway":<ours>,"gateway_cmd":cmd,"gateway_cmd_payload":<account, base64>}\r\n" into
 * out (room: nd_b64_encoded_len + name lengths + 96). Returns: its length. */
static size_t
format_cmd(char *out, const nd_gateways_t *g, int cmd, const char *acct, size_t alen)
{
    char *p = out;
    p += sprintf(p, "INFO {\"gateway\":\"%s\",\"gateway_cmd\":%d,\"gateway_cmd_payload\":\"",
                 g->name, cmd);
    p += nd_b64_encode(ND_B64_STD, acct, alen, p);
    memcpy(p, "\"}\r\n", 4);
    return (size_t)(p + 4 - out);
}

static size_t
cmd_room(const nd_gateways_t *g, size_t alen)
{
    return strlen(g->name) + nd_b64_encoded_len(ND_B64_STD, alen) + 96;
}

/* ---- the cluster's interest, to inbound connections ---- */

/* Whether acct was switched on inbound connection in; switches it (returns false) if not.
 * Ctx: under g->mu. */
static bool
switched(nd_gw_in_t *in, const nd_acct_t *acct)
{
    for (size_t i = 0; i < in->nsw; i++)
        if (strcmp(in->sw[i], acct->name) == 0)
            return true;
    if (in->nsw == in->swcap) {
        in->swcap = in->swcap ? in->swcap * 2 : 8;
        in->sw = nd_xrealloc(in->sw, in->swcap * sizeof(*in->sw));
    }
    in->sw[in->nsw++] = nd_xstrdup(acct->name);
    return false;
}

/* Sends lines (interest of acct) to inbound connection in, after the interest-only switch of
 * the account when it is its first. Ctx: under g->mu. */
static void
send_interest(nd_ctx_t *ctx, nd_gateways_t *g, nd_gw_in_t *in, const nd_acct_t *acct,
              const char *lines, size_t len)
{
    if (switched(in, acct)) {
        if (len > 0)
            nd_route_send_proto(ctx, in->c, lines, len);
        return;
    }
    size_t room = 2 * cmd_room(g, acct->name_len) + len;
    char *buf = nd_xmalloc(room);
    size_t n = format_cmd(buf, g, GW_CMD_ALLSUBS_START, acct->name, acct->name_len);
    n += format_cmd(buf + n, g, GW_CMD_ALLSUBS_COMPLETE, acct->name, acct->name_len);
    if (len > 0) /* (an empty dump: lines is NULL) */
        memcpy(buf + n, lines, len);
    nd_route_send_proto(ctx, in->c, buf, n + len);
    nd_free(buf);
}

/* The accounts' gateway interest hook (subj/interest.h): runs on an account's turn. */
static void
on_interest(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t slen, const char *queue,
            size_t qlen, uint32_t weight, void *arg)
{
    nd_gateways_t *g = arg;
    char small[512];
    size_t room = nd_peer_interest_room(acct, slen, qlen);
    char *buf = room <= sizeof small ? small : nd_xmalloc(room);
    /* A gateway sends queue interest with weight 1. */
    size_t n = nd_peer_format_interest(buf, acct, subj, slen, queue, qlen, weight > 0 ? 1 : 0);
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nins; i++)
        send_interest(ctx, g, g->ins[i], acct, buf, n);
    pthread_mutex_unlock(&g->mu);
    if (buf != small)
        nd_free(buf);
}

/* One account's interest dump (nd_peer_dump_t) for one new inbound connection. */
static void
on_dump(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t slen, const char *queue,
        size_t qlen, uint32_t weight, void *arg)
{
    (void)weight;
    nd_peer_dump_t *d = arg;
    if (subj != NULL) {
        nd_peer_dump_add(d, acct, subj, slen, queue, qlen, 1);
        return;
    }
    /* The end: to the connection, if it is still registered; an account without interest is
     * switched too (as nats-server does for every account), so a peer still in optimistic
     * mode (older than 2.9) sends nothing for it. */
    nd_gateways_t *g = d->c->srv->gateways;
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nins; i++)
        if (g->ins[i]->c == d->c)
            send_interest(ctx, g, g->ins[i], acct, d->buf, d->len);
    pthread_mutex_unlock(&g->mu);
    nd_peer_dump_free(ctx, d);
}

/* ---- remotes and URLs ---- */

/* Ctx: under g->mu. */
static nd_gw_remote_t *
find_remote(nd_gateways_t *g, const char *name)
{
    for (size_t i = 0; i < g->nremotes; i++)
        if (strcmp(g->remotes[i]->name, name) == 0)
            return g->remotes[i];
    return NULL;
}

static bool
listed(const nd_strlist_t *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

/* Adds the "host:port" URLs of the JSON array urls to r (those it lacks). Ctx: under g->mu. */
static void
remote_add_urls(nd_gw_remote_t *r, json_t *urls)
{
    for (size_t i = 0; i < json_array_size(urls); i++) {
        const char *u = json_string_value(json_array_get(urls, i));
        if (u == NULL || u[0] == '\0')
            continue;
        char h[256], hp[300];
        int p;
        bool known = false;
        for (size_t k = 0; k < r->urls.n && !known; k++) {
            if (nd_route_url_hostport(r->urls.v[k], h, sizeof h, &p) == 0) {
                snprintf(hp, sizeof hp, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, p);
                known = strcmp(hp, u) == 0;
            }
        }
        if (!known)
            nd_strlist_add(&r->urls, u);
    }
}

/* A remote we did not know of (an implicit gateway): solicited connect_retries times. Ctx:
 * under g->mu. */
static void
implicit_remote(nd_gateways_t *g, const char *name, json_t *urls)
{
    if (strcmp(name, g->name) == 0)
        return;
    nd_gw_remote_t *r = find_remote(g, name);
    if (r != NULL) {
        remote_add_urls(r, urls);
        if (r->done && r->out == NULL && !r->active) { /* out of retries before: try again */
            r->done = false;
            r->attempts = 0;
            r->due_ns = nd_gw_now_ns();
            pthread_cond_signal(&g->cv);
        }
        return;
    }
    if (json_array_size(urls) == 0)
        return;
    r = nd_new(nd_gw_remote_t);
    r->name = nd_xstrdup(name);
    nd_gw_hash(name, r->hash);
    r->implicit = true;
    r->tls = g->tls_client != NULL ? nd_tls_ctx_ref(g->tls_client) : NULL;
    remote_add_urls(r, urls);
    r->due_ns = nd_gw_now_ns();
    if (g->nremotes == g->rcap) {
        g->rcap = g->rcap ? g->rcap * 2 : 4;
        g->remotes = nd_xrealloc(g->remotes, g->rcap * sizeof(*g->remotes));
    }
    g->remotes[g->nremotes++] = r;
    pthread_cond_signal(&g->cv);
}

void
nd_gateways_from_route(nd_gateways_t *g, json_t *info)
{
    const char *name = json_string_value(json_object_get(info, "gateway"));
    if (name == NULL || json_integer_value(json_object_get(info, "gateway_cmd")) != GW_CMD_GOSSIP)
        return;
    pthread_mutex_lock(&g->mu);
    if (!g->o->reject_unknown || find_remote(g, name) != NULL)
        implicit_remote(g, name, json_object_get(info, "gateway_urls"));
    pthread_mutex_unlock(&g->mu);
}

/* Tells the inbound connections our INFO changed (the cluster's gateway URLs). Ctx: under
 * g->mu. */
static void
info_changed(nd_ctx_t *ctx, nd_gateways_t *g)
{
    build_info(g);
    for (size_t i = 0; i < g->nins; i++)
        nd_route_send_proto(ctx, g->ins[i]->c, g->info, strlen(g->info));
}

void
nd_gateways_add_url(nd_gateways_t *g, const char *url)
{
    pthread_mutex_lock(&g->mu);
    if (!listed(&g->urls, url)) {
        nd_strlist_add(&g->urls, url);
        nd_ctx_t *ctx = nd_ctx_external_new(g->srv->pool);
        info_changed(ctx, g);
        nd_ctx_external_free(ctx);
    }
    pthread_mutex_unlock(&g->mu);
}

const char *
nd_gateways_url(const nd_gateways_t *g)
{
    return g->url;
}

/* Tells the routes that we connected to gateway name, so every server of the cluster does. */
static void
forward_to_cluster(nd_ctx_t *ctx, nd_server_t *s, const char *name, json_t *urls)
{
    if (s->routes == NULL)
        return;
    json_t *o = json_object();
    char id[80];
    snprintf(id, sizeof id, "GW%s", s->server_id);
    json_object_set_new(o, "server_id", json_string(id));
    json_object_set_new(o, "server_name",
                        json_string(s->opts.server_name ? s->opts.server_name : s->server_id));
    json_object_set_new(o, "gateway", json_string(name));
    json_object_set_new(o, "gateway_urls", urls != NULL ? json_incref(urls) : json_array());
    json_object_set_new(o, "gateway_cmd", json_integer(GW_CMD_GOSSIP));
    size_t n;
    char *line = nd_peer_info_line(o, &n);
    nd_routes_broadcast(ctx, s->routes, line, n);
    nd_free(line);
}

/* Tells a new inbound connection of every other gateway we know (a full mesh of clusters). */
static void
gossip_gateways(nd_ctx_t *ctx, nd_gateways_t *g, nd_conn_t *c, const char *except)
{
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nremotes; i++) {
        nd_gw_remote_t *r = g->remotes[i];
        if (strcmp(r->name, except) == 0 || r->urls.n == 0)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "server_id", json_string(g->srv->server_id));
        json_object_set_new(o, "gateway", json_string(r->name));
        json_t *urls = json_array();
        for (size_t k = 0; k < r->urls.n; k++) {
            char h[256], hp[300];
            int p;
            if (nd_route_url_hostport(r->urls.v[k], h, sizeof h, &p) == 0) {
                snprintf(hp, sizeof hp, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, p);
                json_array_append_new(urls, json_string(hp));
            }
        }
        json_object_set_new(o, "gateway_urls", urls);
        json_object_set_new(o, "gateway_cmd", json_integer(GW_CMD_GOSSIP));
        size_t n;
        char *line = nd_peer_info_line(o, &n);
        nd_route_send_proto(ctx, c, line, n);
        nd_free(line);
    }
    pthread_mutex_unlock(&g->mu);
}

/* ---- the connection: handshake ---- */

void
nd_gw_conn_start(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_gateways_t *g = c->srv->gateways;
    if (c->gw->remote != NULL) {
        /* Outbound: nothing until the remote's INFO (it expects CONNECT first). */
        nd_log_info(GFMT "Creating outbound gateway connection to \"%s\"", GARGS(c),
                    c->gw->remote->name);
        return;
    }
    nd_log_info(GFMT "Processing inbound gateway connection", GARGS(c));
    nd_peer_auth_timer(ctx, c, g->o->auth_timeout_s, GW_DEFAULT_AUTH_TIMEOUT_S);
    write_info(c);
}

static void
write_connect(nd_conn_t *c)
{
    nd_gateways_t *g = c->srv->gateways;
    char host[256], user[128], pass[128];
    int port;
    if (nd_route_url_parse(c->gw->url, host, sizeof host, &port, user, sizeof user, pass,
                           sizeof pass) != 0 ||
        user[0] == '\0') {
        snprintf(user, sizeof user, "%s", g->o->user ? g->o->user : "");
        snprintf(pass, sizeof pass, "%s", g->o->pass ? g->o->pass : "");
    }
    json_t *o = nd_peer_connect_new(false, user, pass, c->gw->remote->tls != NULL);
    json_object_set_new(o, "name", json_string(c->srv->server_id));
    json_object_set_new(o, "gateway", json_string(g->name));
    nd_peer_write_op(c, "CONNECT", o);
}

static bool
on_connect(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_gateways_t *g = c->srv->gateways;
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL) {
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    const char *gw = json_string_value(json_object_get(o, "gateway"));
    const char *user = json_string_value(json_object_get(o, "user"));
    const char *pass = json_string_value(json_object_get(o, "pass"));
    const char *name = json_string_value(json_object_get(o, "name"));
    bool ok = true;
    if (gw == NULL || gw[0] == '\0') {
        nd_log_error(GFMT "attempted to connect to gateway port", GARGS(c));
        nd_peer_fail(ctx, c, "attempted to connect to gateway port", ND_CLOSE_WRONG_PORT);
        ok = false;
    } else if (!nd_peer_auth_ok(g->o->user, g->o->pass, user, pass)) {
        nd_log_error(GFMT "authentication error", GARGS(c));
        nd_peer_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
        ok = false;
    } else {
        pthread_mutex_lock(&g->mu);
        bool known = find_remote(g, gw) != NULL;
        pthread_mutex_unlock(&g->mu);
        if (g->o->reject_unknown && !known) {
            char text[300];
            nd_log_error(GFMT "Rejecting connection from gateway \"%s\"", GARGS(c), gw);
            snprintf(text, sizeof text, "Connection to gateway \"%s\" rejected", g->name);
            nd_peer_fail(ctx, c, text, ND_CLOSE_WRONG_GATEWAY);
            ok = false;
        }
    }
    if (ok) {
        c->gw->connect_seen = true;
        c->connected = true;
        nd_timer_cancel(ctx, &c->auth_timer);
        snprintf(c->gw->name, sizeof c->gw->name, "%s", gw);
        if (name != NULL)
            snprintf(c->gw->remote_id, sizeof c->gw->remote_id, "%s", name);
        nd_conn_start_pings(ctx, c);
    }
    json_decref(o);
    return ok;
}

/* Registers outbound connection c to its remote. Returns: false when it has one already. */
static bool
register_outbound(nd_conn_t *c)
{
    nd_gateways_t *g = c->srv->gateways;
    bool ok = false;
    pthread_mutex_lock(&g->mu);
    nd_gw_remote_t *r = c->gw->remote;
    if (r->out == NULL) {
        r->out = c;
        nd_actor_ref(&c->base);
        r->attempts = 0;
        ok = true;
    }
    pthread_mutex_unlock(&g->mu);
    c->gw->registered = ok;
    return ok;
}

static void
register_inbound(nd_ctx_t *ctx, nd_conn_t *c, json_t *info)
{
    nd_gateways_t *g = c->srv->gateways;
    nd_gw_in_t *in = nd_new(nd_gw_in_t);
    in->c = c;
    nd_actor_ref(&c->base);
    snprintf(in->name, sizeof in->name, "%s", c->gw->name);
    pthread_mutex_lock(&g->mu);
    nd_gw_remote_t *r = find_remote(g, c->gw->name);
    in->configured = r != NULL && !r->implicit;
    if (g->nins == g->icap) {
        g->icap = g->icap ? g->icap * 2 : 4;
        g->ins = nd_xrealloc(g->ins, g->icap * sizeof(*g->ins));
    }
    g->ins[g->nins++] = in;
    /* A cluster we did not know of: we connect to it too. */
    if (!g->o->reject_unknown || r != NULL)
        implicit_remote(g, c->gw->name, json_object_get(info, "gateway_urls"));
    pthread_mutex_unlock(&g->mu);
    c->gw->registered = true;
    nd_log_info(GFMT "Inbound gateway connection from \"%s\" (%s) registered", GARGS(c),
                c->gw->name, c->gw->remote_id);
    nd_peer_dump_all(ctx, c, nd_interest_send_dump_gw, on_dump); /* the cluster's interest */
    gossip_gateways(ctx, g, c, c->gw->name);
}

static void catch_all(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_slice_t *name, bool add);
static void catch_all_accounts(nd_ctx_t *ctx, nd_conn_t *c);

static bool
on_info(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_gateways_t *g = c->srv->gateways;
    nd_gw_t *gw = c->gw;
    json_t *o = nd_peer_info_parse(ctx, c, cmd, "gid", "gateway");
    if (o == NULL)
        return false;
    const char *name = json_string_value(json_object_get(o, "gateway"));
    const char *id = json_string_value(json_object_get(o, "server_id"));
    const char *sname = json_string_value(json_object_get(o, "server_name"));
    int gcmd = (int)json_integer_value(json_object_get(o, "gateway_cmd"));
    bool first = !gw->info_received;
    bool ok = true;
    if (gw->remote == NULL) {
        /* Inbound: the first INFO (after CONNECT) registers the connection. */
        if (first) {
            gw->info_received = true;
            if (id != NULL)
                snprintf(gw->remote_id, sizeof gw->remote_id, "%s", id);
            snprintf(gw->remote_name, sizeof gw->remote_name, "%s", sname ? sname : "");
            atomic_store_explicit(&c->headers,
                                  json_is_true(json_object_get(o, "headers")) &&
                                      !c->srv->opts.no_header_support,
                                  memory_order_relaxed);
            register_inbound(ctx, c, o);
        }
        json_decref(o);
        return true;
    }
    const char *want = gw->remote->name;
    if (name == NULL || name[0] == '\0') {
        char text[300];
        snprintf(text, sizeof text, "Attempt to connect to gateway \"%s\" using wrong port", want);
        nd_log_error(GFMT "%s", GARGS(c), text);
        nd_peer_fail(ctx, c, text, ND_CLOSE_WRONG_PORT);
        ok = false;
    } else if (strcmp(name, want) != 0) {
        if (!first && gcmd == GW_CMD_GOSSIP) {
            pthread_mutex_lock(&g->mu);
            if (!g->o->reject_unknown || find_remote(g, name) != NULL)
                implicit_remote(g, name, json_object_get(o, "gateway_urls"));
            pthread_mutex_unlock(&g->mu);
        } else {
            char text[600];
            nd_log_error(GFMT "Failing connection to gateway \"%s\", remote gateway name is \"%s\"",
                         GARGS(c), want, name);
            snprintf(text, sizeof text,
                     "Connection from \"%s\" rejected, wanted to connect to \"%s\", this is \"%s\"",
                     g->name, want, name);
            nd_peer_fail(ctx, c, text, ND_CLOSE_WRONG_GATEWAY);
            ok = false;
        }
    } else if (first) {
        gw->info_received = true;
        snprintf(gw->name, sizeof gw->name, "%s", name);
        snprintf(gw->remote_id, sizeof gw->remote_id, "%s", id ? id : "");
        snprintf(gw->remote_name, sizeof gw->remote_name, "%s", sname ? sname : "");
        atomic_store_explicit(&c->headers,
                              json_is_true(json_object_get(o, "headers")) &&
                                  !c->srv->opts.no_header_support,
                              memory_order_relaxed);
        gw->optimistic = !json_is_true(json_object_get(o, "gateway_iom"));
        pthread_mutex_lock(&g->mu);
        remote_add_urls(gw->remote, json_object_get(o, "gateway_urls"));
        pthread_mutex_unlock(&g->mu);
        write_connect(c);
        write_info(c);
        if (!register_outbound(c)) {
            nd_conn_close(ctx, c, ND_CLOSE_WRONG_GATEWAY);
            ok = false;
        } else {
            nd_log_info(GFMT "Outbound gateway connection to \"%s\" (%s) registered", GARGS(c),
                        name, gw->remote_id);
            c->connected = true;
            nd_conn_start_pings(ctx, c);
            if (gw->optimistic)
                catch_all_accounts(ctx, c);
            forward_to_cluster(ctx, c->srv, name, json_object_get(o, "gateway_urls"));
        }
    } else if (gcmd == GW_CMD_ALLSUBS_START || gcmd == GW_CMD_ALLSUBS_COMPLETE) {
        /* We keep every RS+ as a subscription from the start: the start needs nothing; the
         * completion ends an optimistic account's catch-all. The account must be named. */
        const char *pl = json_string_value(json_object_get(o, "gateway_cmd_payload"));
        uint8_t acct[ND_ACCT_NAME_MAX + 4];
        size_t alen = 0;
        if (pl == NULL || pl[0] == '\0' ||
            !nd_b64_decode(ND_B64_STD, pl, strlen(pl), acct, sizeof acct, &alen)) {
            char text[128];
            snprintf(text, sizeof text, "Account absent from receive-all-subscriptions-%s command",
                     gcmd == GW_CMD_ALLSUBS_START ? "start" : "complete");
            nd_peer_fail(ctx, c, text, ND_CLOSE_PROTOCOL_VIOLATION);
            ok = false;
        } else if (gcmd == GW_CMD_ALLSUBS_COMPLETE && gw->optimistic) {
            nd_proto_slice_t an = {(const char *)acct, alen};
            catch_all(ctx, c, &an, false);
        }
    } else if (gcmd == 0) {
        pthread_mutex_lock(&g->mu);
        remote_add_urls(gw->remote, json_object_get(o, "gateway_urls"));
        pthread_mutex_unlock(&g->mu);
        forward_to_cluster(ctx, c->srv, name, json_object_get(o, "gateway_urls"));
    } else {
        nd_log_warn("Received unknown command %d from gateway \"%s\"", gcmd, name);
    }
    json_decref(o);
    return ok;
}

/* ---- the remote's interest (outbound) ---- */

static nd_acct_t *
gw_acct(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_slice_t *name)
{
    return nd_peer_acct(ctx, c->srv, &c->gw->accts, name);
}

/* An optimistic remote's catch-all in the account named (add) or its end. Ctx: owner. */
static void
catch_all(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_slice_t *name, bool add)
{
    char sid[ND_ACCT_NAME_MAX + 3];
    if (name->len > ND_ACCT_NAME_MAX)
        return;
    memcpy(sid, name->ptr, name->len);
    memcpy(sid + name->len, "\t>", 2);
    size_t n = name->len + 2;
    if (!add) {
        nd_peer_sub_del(ctx, c, NULL, sid, n);
        return;
    }
    if (nd_sidmap_get(&c->subs, sid, n) != NULL)
        return;
    nd_acct_t *acct = gw_acct(ctx, c, name);
    if (acct == NULL)
        return;
    nd_sub_t *sub = nd_sub_new(ctx, &c->base, ">", 1, NULL, 0, sid, n);
    sub->origin = ND_SUB_GATEWAY;
    sub->conn_data = acct;
    nd_sidmap_put(&c->subs, sub);
    c->sub_acks_due++;
    nd_acct_send_sub(ctx, acct, sub, &c->base, ND_CONN_MSG_SUB_ACK);
}

/* A remote that is not in interest-only mode gets everything of every account (nats-server's
 * optimistic mode) until it says otherwise: A- for an account, or its switch to interest-only.
 * (What it says RS- to keeps coming: it drops it. Accounts made later are not covered.) */
static void
catch_all_accounts(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_log_debug(GFMT "Gateway \"%s\" is not in interest-only mode: sending everything until "
                      "it says otherwise",
                 GARGS(c), c->gw->name);
    nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
    for (size_t i = 0; a != NULL && i < a->naccts; i++) {
        nd_acct_t *acct = a->accts[i].acct;
        if (acct == NULL)
            continue;
        nd_proto_slice_t name = {acct->name, acct->name_len};
        catch_all(ctx, c, &name, true);
    }
    nd_auth_unref(ctx, a);
}

/* Counts a subscription of the remote's (delta 1 or -1) for /gatewayz. */
static void
count_remote_sub(nd_gateways_t *g, nd_gw_remote_t *r, const nd_proto_cmd_t *cmd, int delta)
{
    pthread_mutex_lock(&g->mu);
    struct nd_gw_acount *a = NULL;
    for (size_t i = 0; i < r->nac && a == NULL; i++)
        if (strlen(r->ac[i].name) == cmd->account.len &&
            memcmp(r->ac[i].name, cmd->account.ptr, cmd->account.len) == 0)
            a = &r->ac[i];
    if (a == NULL) {
        if (r->nac == r->accap) {
            r->accap = r->accap ? r->accap * 2 : 4;
            r->ac = nd_xrealloc(r->ac, r->accap * sizeof(*r->ac));
        }
        a = &r->ac[r->nac++];
        memset(a, 0, sizeof *a);
        snprintf(a->name, sizeof a->name, "%.*s", (int)cmd->account.len, cmd->account.ptr);
    }
    a->nsubs += delta;
    if (cmd->queue.len > 0)
        a->nqsubs += delta;
    pthread_mutex_unlock(&g->mu);
}

static bool
on_rsub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd, bool add)
{
    if (c->gw->remote == NULL) {
        nd_log_error(GFMT "Received RS%c from gateway on inbound connection", GARGS(c),
                     add ? '+' : '-');
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    nd_peer_sid_t sid;
    nd_peer_sid_init(&sid, cmd, true);
    if (!add) {
        if (nd_peer_sub_del(ctx, c, NULL, sid.p, sid.n))
            count_remote_sub(c->srv->gateways, c->gw->remote, cmd, -1);
    } else if (nd_sidmap_get(&c->subs, sid.p, sid.n) == NULL) {
        nd_acct_t *acct = gw_acct(ctx, c, &cmd->account);
        if (acct == NULL) {
            nd_log_debug(GFMT "Unknown account \"%.*s\" for gateway subject \"%.*s\"", GARGS(c),
                         (int)cmd->account.len, cmd->account.ptr, (int)cmd->subject.len,
                         cmd->subject.ptr);
        } else if (!nd_subj_valid_sub(cmd->subject.ptr, cmd->subject.len) ||
                   (cmd->queue.len > 0 && !nd_subj_valid_queue(cmd->queue.ptr, cmd->queue.len))) {
            nd_log_error(GFMT "Could not insert subscription: invalid subject", GARGS(c));
        } else {
            nd_peer_sub_add(ctx, c, acct, cmd, &sid, ND_SUB_GATEWAY, 1, acct);
            count_remote_sub(c->srv->gateways, c->gw->remote, cmd, 1);
        }
    }
    nd_peer_sid_fini(&sid);
    return true;
}

/* A message for an account we do not have, from a peer in optimistic mode: "A- <account>", once
 * per account (a later A+ is not needed: such an account never gets interest here). */
static void
account_no_interest(nd_conn_t *c, const nd_proto_slice_t *name)
{
    nd_gw_t *gw = c->gw;
    for (size_t i = 0; i < gw->nosent.n; i++)
        if (strlen(gw->nosent.v[i]) == name->len &&
            memcmp(gw->nosent.v[i], name->ptr, name->len) == 0)
            return;
    char acct[ND_ACCT_NAME_MAX + 1];
    snprintf(acct, sizeof acct, "%.*s",
             (int)(name->len > ND_ACCT_NAME_MAX ? ND_ACCT_NAME_MAX : name->len), name->ptr);
    nd_strlist_add(&gw->nosent, acct);
    nd_conn_write(c, "A- ", 3);
    nd_conn_write(c, name->ptr, name->len);
    nd_conn_write(c, "\r\n", 2);
}

static void
on_rmsg(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_proto_cmd_t pub;
    nd_acct_t *acct = nd_peer_rmsg_start(ctx, c, &c->gw->accts, cmd, "gid", "gateway message", &pub);
    if (acct == NULL) {
        if (c->gw->remote == NULL)
            account_no_interest(c, &cmd->account);
        return;
    }
    if (nd_gw_is_reply(pub.subject.ptr, pub.subject.len))
        nd_gw_handle_reply(ctx, c, acct, &pub);
    else
        nd_deliver_gateway_publish(ctx, c, acct, &pub);
}

bool
nd_gw_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_gw_t *gw = c->gw;
    if ((cmd->op == ND_PROTO_OP_RMSG || cmd->op == ND_PROTO_OP_RHMSG) && c->sub_acks_due > 0) {
        c->paused = true; /* after the subscriptions before it (conn.c resumes) */
        return false;
    }
    if (nd_log_enabled(ND_LOG_TRACE))
        nd_peer_trace(c, "gid", cmd);
    if (gw->remote == NULL && !gw->connect_seen && cmd->op != ND_PROTO_OP_CONNECT) {
        /* An inbound connection starts with CONNECT (nats-server: an authorization
         * violation otherwise). */
        nd_log_error(GFMT "Authorization Error", GARGS(c));
        nd_peer_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
        return false;
    }
    if (gw->remote != NULL && !gw->info_received && cmd->op != ND_PROTO_OP_INFO &&
        cmd->op != ND_PROTO_OP_ERR) {
        nd_log_error(GFMT "Expected the gateway INFO first", GARGS(c));
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    switch (cmd->op) {
    case ND_PROTO_OP_RMSG:
    case ND_PROTO_OP_RHMSG:
        on_rmsg(ctx, c, cmd);
        return !c->closing;
    case ND_PROTO_OP_RSUB:
        return on_rsub(ctx, c, cmd, true);
    case ND_PROTO_OP_RUNSUB:
        return on_rsub(ctx, c, cmd, false);
    case ND_PROTO_OP_ASUB:
    case ND_PROTO_OP_AUNSUB:
        /* Interest-only: the RS+ we hold are the whole story (an A- names an account the
         * remote has no interest in, which then has no RS+ either). An optimistic remote's
         * A-/A+ ends and restores the account's catch-all. */
        if (gw->remote != NULL && gw->optimistic)
            catch_all(ctx, c, &cmd->account, cmd->op == ND_PROTO_OP_ASUB);
        return true;
    case ND_PROTO_OP_CONNECT:
        if (gw->remote != NULL || gw->connect_seen)
            return true;
        return on_connect(ctx, c, cmd);
    case ND_PROTO_OP_INFO:
        return on_info(ctx, c, cmd);
    default: /* PING, PONG, +OK, -ERR, unknown */
        return nd_peer_handle_ctl(ctx, c, cmd, "gid", "Gateway Error");
    }
}

nd_tls_ctx_t *
nd_gw_tls(const nd_conn_t *c)
{
    return c->gw->remote != NULL ? c->gw->remote->tls : c->srv->gateways->tls_server;
}

bool
nd_gw_parse_error(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->gw->remote != NULL || c->gw->connect_seen)
        return false;
    nd_log_error(GFMT "Authorization Error", GARGS(c));
    nd_peer_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
    return true;
}

/* ---- close ---- */

void
nd_gw_teardown(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_gateways_t *g = c->srv->gateways;
    nd_gw_t *gw = c->gw;
    nd_peer_unsub_all(ctx, c, &gw->accts);
    nd_conn_t *drop = NULL;
    nd_gw_in_t *gone = NULL;
    pthread_mutex_lock(&g->mu);
    if (gw->registered) {
        if (gw->remote != NULL) {
            if (gw->remote->out == c) {
                gw->remote->out = NULL;
                gw->remote->nac = 0;
                drop = c;
            }
        } else {
            for (size_t i = 0; i < g->nins; i++)
                if (g->ins[i]->c == c) {
                    gone = g->ins[i];
                    g->ins[i] = g->ins[--g->nins];
                    break;
                }
        }
        gw->registered = false;
    }
    pthread_mutex_unlock(&g->mu);
    if (drop != NULL)
        nd_actor_unref(ctx, &drop->base);
    if (gone != NULL) {
        for (size_t i = 0; i < gone->nsw; i++)
            nd_free(gone->sw[i]);
        nd_free(gone->sw);
        nd_actor_unref(ctx, &gone->c->base);
        nd_free(gone);
    }
    nd_log_info(GFMT "Gateway connection closed: %s", GARGS(c), nd_close_reason_text(c->reason));
    if (gw->remote != NULL)
        nd_gw_dial_closed(g, gw->remote);
}

void
nd_gw_fini(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_gw_t *gw = c->gw;
    if (gw == NULL)
        return;
    nd_peer_accts_free(ctx, &gw->accts);
    nd_strlist_free(&gw->nosent);
    nd_free(gw);
    c->gw = NULL;
}

/* ---- listener, start, stop ---- */

static void
on_accept(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_server_t *s = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nd_gw_spawn(ctx, s, fd, NULL, NULL);
}

bool
nd_gateways_configured(const nd_opts_t *o)
{
    return o->gateway != NULL && o->gateway->name != NULL && o->gateway->name[0] != '\0' &&
           o->gateway->port != 0;
}

int
nd_gateways_check(const nd_opts_t *o, char *err, size_t cap)
{
    const nd_gateway_opts_t *g = o->gateway;
    if (g == NULL || g->port == 0)
        return 0;
    if (g->name == NULL || g->name[0] == '\0') {
        snprintf(err, cap, "gateway has no name");
        return -1;
    }
    for (size_t i = 0; i < g->ngateways; i++) {
        if (g->gateways[i].urls.n == 0) {
            snprintf(err, cap, "gateway \"%s\" has no URL",
                     g->gateways[i].name ? g->gateways[i].name : "");
            return -1;
        }
    }
    const char *cluster = o->cluster_name != NULL && o->cluster_name[0] != '\0' ? o->cluster_name
                          : o->cluster != NULL                                  ? o->cluster->name
                                                                                : NULL;
    if (cluster != NULL && cluster[0] != '\0' && strcmp(cluster, g->name) != 0) {
        snprintf(err, cap, "cluster name conflicts between cluster and gateway definitions");
        return -1;
    }
    return 0;
}

nd_gateways_t *
nd_gateways_new(nd_server_t *s)
{
    nd_gateways_t *g = nd_new(nd_gateways_t);
    g->srv = s;
    g->o = s->opts.gateway;
    snprintf(g->name, sizeof g->name, "%s", g->o->name);
    pthread_mutex_init(&g->mu, NULL);
    pthread_mutex_init(&g->rm_mu, NULL);
    nd_dial_cond_init(&g->cv);
    g->listener = nd_listener_bind(&(nd_listener_decl_t){
        .host = g->o->host,
        .port = g->o->port < 0 ? 0 : g->o->port,
        .backlog = 1024,
        .what = "gateway port",
        .ready = "Listening for gateways connections on",
        .accept_name = "Gateway",
        .errlog = ND_LISTENER_ERRLOG_NATS,
        .on_accept = on_accept,
        .arg = s,
    });
    if (g->listener == NULL) {
        nd_gateways_free(g);
        return NULL;
    }
    g->port = nd_listener_port(g->listener);
    char err[512];
    if (g->o->tls != NULL) {
        g->tls_server = nd_tls_ctx_new(g->o->tls, err, sizeof err);
        if (g->tls_server != NULL)
            g->tls_client = nd_tls_ctx_new_client(g->o->tls, err, sizeof err);
        if (g->tls_client == NULL) {
            nd_log_error("Gateway TLS: %s", err);
            nd_gateways_free(g);
            return NULL;
        }
    }
    char ch[ND_GW_HASH_LEN + 1], sh[ND_GW_HASH_LEN + 1];
    nd_gw_hash(g->name, ch);
    nd_gw_hash(s->server_id, sh);
    g->reply_pfx_len =
        (size_t)snprintf(g->reply_pfx, sizeof g->reply_pfx, ND_GW_REPLY_PREFIX "%s.%s.", ch, sh);
    if (g->o->advertise != NULL && g->o->advertise[0] != '\0') {
        snprintf(g->url, sizeof g->url, "%s", g->o->advertise);
        if (strchr(g->url, ':') == NULL)
            snprintf(g->url + strlen(g->url), sizeof g->url - strlen(g->url), ":%d", g->port);
    } else {
        const char *h = g->o->host;
        if (h == NULL || h[0] == '\0' || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0)
            h = "127.0.0.1"; /* nats-server picks a non-local address; ours is the loopback */
        snprintf(g->url, sizeof g->url, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, g->port);
    }
    nd_strlist_add(&g->urls, g->url);
    for (size_t i = 0; i < g->o->ngateways; i++) {
        const nd_gateway_remote_t *rg = &g->o->gateways[i];
        if (rg->name == NULL || strcmp(rg->name, g->name) == 0)
            continue; /* our own cluster's entry: nats-server keeps it for monitoring only */
        nd_gw_remote_t *r = nd_new(nd_gw_remote_t);
        r->name = nd_xstrdup(rg->name);
        nd_gw_hash(r->name, r->hash);
        for (size_t k = 0; k < rg->urls.n; k++)
            nd_strlist_add(&r->urls, rg->urls.v[k]);
        r->ncfg = r->urls.n;
        if (rg->tls != NULL) {
            r->tls = nd_tls_ctx_new_client(rg->tls, err, sizeof err);
            if (r->tls == NULL) {
                nd_log_error("Gateway \"%s\" TLS: %s", rg->name, err);
                nd_free(r->name);
                nd_strlist_free(&r->urls);
                nd_free(r);
                nd_gateways_free(g);
                return NULL;
            }
        } else if (g->tls_client != NULL) {
            r->tls = nd_tls_ctx_ref(g->tls_client);
        }
        if (g->nremotes == g->rcap) {
            g->rcap = g->rcap ? g->rcap * 2 : 4;
            g->remotes = nd_xrealloc(g->remotes, g->rcap * sizeof(*g->remotes));
        }
        g->remotes[g->nremotes++] = r;
    }
    build_info(g);
    g->hook.fn = on_interest;
    g->hook.arg = g;
    return g;
}

void
nd_gateways_attach(nd_gateways_t *g, nd_acct_t *gacct)
{
    nd_interest_attach_gw(gacct, &g->hook);
}

void
nd_gateways_start(nd_gateways_t *g)
{
    nd_log_info("Gateway name is %s", g->name);
    nd_listener_start(g->listener, g->srv->pool, g->srv->poller);
    nd_listener_log_ready(g->listener);
    nd_log_info("Address for gateway \"%s\" is %s", g->name, g->url);
    int64_t now = nd_gw_now_ns();
    for (size_t i = 0; i < g->nremotes; i++)
        g->remotes[i]->due_ns = now;
    if (pthread_create(&g->th, NULL, nd_gw_dialer_main, g) != 0)
        nd_fatal("gateway: cannot start the dialer thread");
    g->started = true;
}

void
nd_gateways_stop(nd_gateways_t *g)
{
    if (g == NULL || g->stopped)
        return;
    g->stopped = true;
    atomic_store_explicit(&g->stopping, true, memory_order_relaxed);
    if (g->listener != NULL)
        nd_listener_stop(g->listener);
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->th, NULL);
        g->started = false;
    }
    /* The table's references would keep the pool's shutdown waiting. */
    nd_ctx_t *ctx = nd_ctx_external_new(g->srv->pool);
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nremotes; i++)
        if (g->remotes[i]->out != NULL)
            nd_conn_send_shutdown(ctx, &g->remotes[i]->out->base);
    for (size_t i = 0; i < g->nins; i++)
        nd_conn_send_shutdown(ctx, &g->ins[i]->c->base);
    pthread_mutex_unlock(&g->mu);
    nd_ctx_external_free(ctx);
}

void
nd_gateways_free(nd_gateways_t *g)
{
    if (g == NULL)
        return;
    nd_listener_free(g->listener);
    /* The pool is gone: its shutdown freed the actors; only our copies remain. */
    for (size_t i = 0; i < g->nremotes; i++) {
        nd_free(g->remotes[i]->name);
        nd_free(g->remotes[i]->ac);
        nd_tls_ctx_unref(g->remotes[i]->tls);
        nd_strlist_free(&g->remotes[i]->urls);
        nd_free(g->remotes[i]);
    }
    nd_free(g->remotes);
    for (size_t i = 0; i < g->nins; i++) {
        for (size_t k = 0; k < g->ins[i]->nsw; k++)
            nd_free(g->ins[i]->sw[k]);
        nd_free(g->ins[i]->sw);
        nd_free(g->ins[i]);
    }
    nd_free(g->ins);
    nd_strlist_free(&g->urls);
    nd_free(g->info);
    nd_gw_rmap_clear(g);
    nd_tls_ctx_unref(g->tls_server);
    nd_tls_ctx_unref(g->tls_client);
    pthread_mutex_destroy(&g->rm_mu);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    nd_free(g);
}

/* ---- monitoring ---- */

void
nd_gateways_count(nd_gateways_t *g, size_t *out, size_t *in)
{
    size_t o = 0;
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nremotes; i++)
        o += g->remotes[i]->out != NULL;
    *in = g->nins;
    pthread_mutex_unlock(&g->mu);
    *out = o;
}

size_t
nd_gateways_varz(nd_gateways_t *g, json_t *o)
{
    json_object_set_new(o, "name", json_string(g->name));
    json_object_set_new(o, "host", json_string(g->o->host ? g->o->host : "0.0.0.0"));
    json_object_set_new(o, "port", json_integer(g->port));
    double at = g->o->auth_timeout_s > 0 ? g->o->auth_timeout_s : GW_DEFAULT_AUTH_TIMEOUT_S;
    json_object_set_new(o, "auth_timeout",
                        at == (double)(int64_t)at ? json_integer((json_int_t)at) : json_real(at));
    json_object_set_new(o, "tls_timeout", json_integer(2));
    if (g->o->advertise != NULL)
        json_object_set_new(o, "advertise", json_string(g->o->advertise));
    if (g->o->connect_retries != 0)
        json_object_set_new(o, "connect_retries", json_integer(g->o->connect_retries));
    json_t *arr = json_array();
    size_t n = 0;
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nremotes; i++) {
        const nd_gw_remote_t *r = g->remotes[i];
        json_t *e = json_object();
        json_object_set_new(e, "name", json_string(r->name));
        json_t *urls = json_array();
        for (size_t k = 0; k < r->urls.n; k++) {
            char h[256], hp[300];
            int p;
            if (nd_route_url_hostport(r->urls.v[k], h, sizeof h, &p) == 0) {
                snprintf(hp, sizeof hp, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, p);
                json_array_append_new(urls, json_string(hp));
            }
        }
        json_object_set_new(e, "urls", urls);
        json_array_append_new(arr, e);
        n += r->out != NULL;
    }
    n += g->nins;
    pthread_mutex_unlock(&g->mu);
    json_object_set_new(o, "gateways", arr);
    if (g->o->reject_unknown)
        json_object_set_new(o, "reject_unknown", json_true());
    return n;
}

static void
stat_of(nd_gw_stat_t *s, const nd_conn_t *c, const char *name, bool configured, bool outbound)
{
    const nd_mon_conn_t *m = &c->mon;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->outbound = outbound;
    s->configured = configured;
    s->cid = c->cid;
    snprintf(s->ip, sizeof s->ip, "%s", c->ip);
    s->port = c->port;
    s->start_wall_ns = m->start_ns;
    s->last_ns = atomic_load_explicit(&m->last_ns, memory_order_relaxed);
    s->rtt_ns = atomic_load_explicit(&m->rtt_ns, memory_order_relaxed);
    s->pending = atomic_load_explicit(&c->pending, memory_order_relaxed);
    s->in_msgs = atomic_load_explicit(&m->in_msgs, memory_order_relaxed);
    s->in_bytes = atomic_load_explicit(&m->in_bytes, memory_order_relaxed);
    s->out_msgs = atomic_load_explicit(&m->out_msgs, memory_order_relaxed);
    s->out_bytes = atomic_load_explicit(&m->out_bytes, memory_order_relaxed);
    s->subs = atomic_load_explicit(&m->num_subs, memory_order_relaxed);
}

size_t
nd_gateways_stats(nd_gateways_t *g, nd_gw_stat_t **out)
{
    pthread_mutex_lock(&g->mu);
    size_t cap = g->nremotes + g->nins;
    nd_gw_stat_t *v = nd_xcalloc(cap > 0 ? cap : 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < g->nremotes; i++) {
        const nd_gw_remote_t *r = g->remotes[i];
        if (r->out != NULL) {
            stat_of(&v[n], r->out, r->name, !r->implicit, true);
            snprintf(v[n].remote_id, sizeof v[n].remote_id, "%s", r->out->gw->remote_id);
            v[n].accounts = json_array();
            for (size_t k = 0; k < r->nac; k++) {
                json_t *e = json_object();
                json_object_set_new(e, "name", json_string(r->ac[k].name));
                json_object_set_new(e, "interest_mode", json_string("Interest-Only"));
                json_object_set_new(e, "interest_only_threshold", json_integer(1000));
                if (r->ac[k].nsubs > 0)
                    json_object_set_new(e, "num_subs", json_integer(r->ac[k].nsubs));
                if (r->ac[k].nqsubs > 0)
                    json_object_set_new(e, "num_queue_subs", json_integer(r->ac[k].nqsubs));
                json_array_append_new(v[n].accounts, e);
            }
        } else {
            snprintf(v[n].name, sizeof v[n].name, "%s", r->name);
            v[n].outbound = true;
            v[n].configured = !r->implicit;
            v[n].cid = 0; /* not connected */
        }
        n++;
    }
    for (size_t i = 0; i < g->nins; i++) {
        const nd_gw_in_t *in = g->ins[i];
        /* nats-server shows an inbound connection as not configured (it has no remote). */
        stat_of(&v[n], in->c, in->name, false, false);
        snprintf(v[n].remote_id, sizeof v[n].remote_id, "%s", in->c->gw->remote_id);
        v[n].accounts = json_array();
        for (size_t k = 0; k < in->nsw; k++) {
            json_t *e = json_object();
            json_object_set_new(e, "name", json_string(in->sw[k]));
            json_object_set_new(e, "interest_mode", json_string("Interest-Only"));
            json_object_set_new(e, "interest_only_threshold", json_integer(1000));
            json_array_append_new(v[n].accounts, e);
        }
        n++;
    }
    pthread_mutex_unlock(&g->mu);
    *out = v;
    return n;
}

const char *
nd_gateways_name(const nd_gateways_t *g)
{
    return g->name;
}

const char *
nd_gateways_host(const nd_gateways_t *g)
{
    return g->o->host ? g->o->host : "0.0.0.0";
}

int
nd_gateways_port(const nd_gateways_t *g)
{
    return g->port;
}
