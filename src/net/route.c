/* Routes: the route connection's protocol and the route table (nats-server 2.9's route.go).
 *
 * Handshake. Both sides send INFO (the route INFO: our id, name, cluster name, cluster port,
 * client connect_urls) as soon as the connection exists; the soliciting side sends CONNECT
 * (credentials from the route URL, the cluster name, our id as "name") before it. The accepting
 * side expects CONNECT first (anything else is an authorization violation), checks the cluster
 * authorization and name, and the peer's first INFO registers the route on both sides: one
 * route per remote server id, a second connection to the same server is closed as "Duplicate
 * Route", one to ourselves likewise (the dialer then stops), a peer with our server name is
 * refused. Cluster names: a configured name must match; a dynamic one (none configured) takes
 * the peer's when the peer's is configured or greater, as nats-server's.
 *
 * Interest. Once registered, each account sends the route its local interest (subj/interest.h:
 * a dump, then every change as it happens), written as RS+/RS- lines. The peer's RS+ becomes a
 * subscription of this connection (origin ND_SUB_ROUTE, sid "<account> <subject>[ <queue>]",
 * the queue weight in qweight) in that account's sublist; RS- removes it. An RMSG waits until
 * every RS+ before it is in place (the connection pauses, as a client does before a PUB), so
 * a responder's reply to a request finds the requester's interest. Publishers find them
 * like any subscription and send RMSG/HMSG (deliver.c); the peer's RMSG is delivered to local
 * subscribers only (nd_deliver_route_publish), so a message crosses one route at most.
 *
 * Gossip. When a route registers, its INFO (with "ip" set to the address we see) is forwarded
 * to every other route; a server that hears of a member it has no route to solicits it (an
 * implicit route, retried connect_retries times), so any seed list forms a full mesh. Clients
 * get every member's client URLs in connect_urls and an async INFO when that list changes,
 * unless no_advertise.
 *
 * Permissions: the cluster's import (publish) list filters the interest we send, so peers send
 * us only what we import; its export (subscribe) list filters the RS+ we accept.
 *
 * TLS (cluster tls {}): the handshake comes first, before INFO, both ways (conn_tls.c); the
 * soliciting side checks the server's certificate against the CA and the host it dialed.
 *
 * Not yet: route pooling and pinned accounts (2.10; a 2.10+ peer falls back to one route when
 * the INFO has no pool size), compression (declined: never
 * offered), leaf-origin LS+ (lnoc is not advertised, so peers send RS+).
 */
#include "net/route_int.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth/auth.h"
#include "net/connreg.h"
#include "net/gateway_int.h"
#include "net/leaf.h"
#include "net/listener.h"
#include "net/peer_int.h"
#include "net/peer_proto_int.h"
#include "net/tls.h"
#include "natsd/natsd.h"
#include "subj/acct_resp.h"
#include "subj/interest.h"
#include "subj/subject.h"
#include "util/gojson.h"
#include "util/log.h"

#define ROUTE_DEFAULT_AUTH_TIMEOUT_S 2.0

/* Log prefix of a route connection, as nats-server's "<ip>:<port> - rid:<n> - ". */
#define RFMT     "%s:%d - rid:%llu - "
#define RARGS(c) (c)->ip, (c)->port, (unsigned long long)(c)->cid

/* ---- the route table ---- */

/* Frees an entry; with ctx, also drops its reference on the connection (after the pool's
 * shutdown there is none to drop). */
static void
ent_free(nd_ctx_t *ctx, nd_route_ent_t *e)
{
    if (ctx != NULL && e->c != NULL)
        nd_actor_unref(ctx, &e->c->base);
    nd_free(e->remote_name);
    nd_free(e->ip);
    nd_free(e->url);
    nd_free(e->remote_host);
    nd_free(e->gossip);
    nd_strlist_free(&e->connect_urls);
    nd_strlist_free(&e->leaf_urls);
    nd_strlist_free(&e->ws_connect_urls);
    nd_free(e);
}

bool
nd_routes_connected(nd_routes_t *r, const char *id)
{
    pthread_mutex_lock(&r->mu);
    bool found = false;
    for (size_t i = 0; i < r->nents && !found; i++)
        found = strcmp(r->ents[i]->remote_id, id) == 0;
    pthread_mutex_unlock(&r->mu);
    return found;
}

/* A protocol line (or several) for a route to write as it is. */
typedef struct rproto_msg {
    nd_msg_t hdr;
    uint32_t len;
    char data[];
} rproto_msg_t;

static void
send_proto(nd_ctx_t *ctx, nd_conn_t *c, const char *data, size_t len)
{
    rproto_msg_t *m = (rproto_msg_t *)nd_msg_new(ctx, sizeof(*m) + len, ND_CONN_MSG_RPROTO);
    m->len = (uint32_t)len;
    memcpy(m->data, data, len);
    nd_actor_send(ctx, &c->base, &m->hdr);
}

void
nd_route_send_proto(nd_ctx_t *ctx, nd_conn_t *c, const char *data, size_t len)
{
    send_proto(ctx, c, data, len);
}

void
nd_routes_broadcast(nd_ctx_t *ctx, nd_routes_t *r, const char *data, size_t len)
{
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nents; i++)
        send_proto(ctx, r->ents[i]->c, data, len);
    pthread_mutex_unlock(&r->mu);
}

nd_conn_t *
nd_routes_by_gw_hash(nd_routes_t *r, const char *hash, size_t len)
{
    nd_conn_t *found = NULL;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nents && found == NULL; i++) {
        char h[ND_GW_HASH_LEN + 1];
        nd_gw_hash(r->ents[i]->remote_id, h);
        if (len == ND_GW_HASH_LEN && memcmp(h, hash, len) == 0) {
            found = r->ents[i]->c;
            nd_actor_ref(&found->base);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

void
nd_route_on_proto(nd_conn_t *c, nd_msg_t *msg)
{
    rproto_msg_t *m = (rproto_msg_t *)msg;
    if (!c->closing)
        nd_conn_write(c, m->data, m->len);
}

/* ---- interest: RS+ / RS- ---- */

/* The accounts' interest hook (subj/interest.h): runs on an account's turn. */
static void
on_interest(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t slen, const char *queue,
            size_t qlen, uint32_t weight, void *arg)
{
    nd_routes_t *r = arg;
    if (r->perms != NULL && !nd_perms_pub_allowed(r->perms, subj, slen))
        return; /* not imported: the other servers must not send us these */
    char small[512];
    size_t room = nd_peer_interest_room(acct, slen, qlen);
    char *buf = room <= sizeof small ? small : nd_xmalloc(room);
    size_t n = nd_peer_format_interest(buf, acct, subj, slen, queue, qlen, weight);
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nents; i++)
        send_proto(ctx, r->ents[i]->c, buf, n);
    pthread_mutex_unlock(&r->mu);
    if (buf != small)
        nd_free(buf);
}

/* One account's interest dump (nd_peer_dump_t) for one new route. */
static void
on_dump(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t slen, const char *queue,
        size_t qlen, uint32_t weight, void *arg)
{
    nd_peer_dump_t *d = arg;
    if (subj == NULL) { /* the end */
        /* An exporter of services: the responses to requests made here (route_imp.c). */
        char rw[ND_ACCT_RESP_WC_LEN];
        size_t rn = acct != NULL ? nd_route_imp_resp_wildcard(ctx, acct, rw) : 0;
        nd_permset_t *rperms = d->c->srv->routes->perms;
        if (rn > 0 && (rperms == NULL || nd_perms_pub_allowed(rperms, rw, rn)))
            nd_peer_dump_add(d, acct, rw, rn, NULL, 0, 1);
        if (d->len > 0)
            send_proto(ctx, d->c, d->buf, d->len);
        nd_peer_dump_free(ctx, d);
        return;
    }
    nd_permset_t *perms = d->c->srv->routes->perms;
    if (perms != NULL && !nd_perms_pub_allowed(perms, subj, slen))
        return;
    nd_peer_dump_add(d, acct, subj, slen, queue, qlen, weight);
}

/* ---- our route INFO and CONNECT ---- */

static void
build_info(nd_routes_t *r)
{
    nd_server_t *s = r->srv;
    json_t *o = nd_peer_info_new(s, 2);
    json_object_set_new(o, "host", json_string(r->cfg.host ? r->cfg.host : "0.0.0.0"));
    json_object_set_new(o, "port", json_integer(r->port));
    json_object_set_new(o, "headers", json_boolean(!s->opts.no_header_support));
    if (r->cfg.user != NULL)
        json_object_set_new(o, "auth_required", json_true());
    if (r->tls_server != NULL) {
        json_object_set_new(o, "tls_required", json_true());
        json_object_set_new(o, "tls_verify", json_boolean(r->tls_server->verify));
    }
    json_object_set_new(o, "max_payload", json_integer(nd_server_live_get(s, max_payload)));
    if (r->cfg.advertise != NULL) {
        char ip[300];
        snprintf(ip, sizeof ip, "nats-route://%s/", r->cfg.advertise);
        json_object_set_new(o, "ip", json_string(ip));
    }
    json_object_set_new(o, "cluster", json_string(r->name));
    if (r->dynamic)
        json_object_set_new(o, "dynamic", json_true());
    if (s->gateways != NULL) /* so that our peers list us in their gateway_urls */
        json_object_set_new(o, "gateway_url", json_string(nd_gateways_url(s->gateways)));
    if (!r->cfg.no_advertise) {
        json_t *urls = json_array();
        nd_server_own_connect_urls(s, urls);
        json_object_set_new(o, "connect_urls", urls);
        if (s->ws != NULL) {
            urls = json_array();
            nd_server_own_ws_urls(s, urls);
            json_object_set_new(o, "ws_connect_urls", urls);
        }
    }
    char lurl[300];
    if (s->leafs != NULL && nd_leafs_own_url(s->leafs, true, lurl, sizeof lurl)) {
        /* The cluster's leafs learn every member's leafnode URL (leafnode_urls gossip). */
        json_t *urls = json_array();
        json_array_append_new(urls, json_string(lurl));
        json_object_set_new(o, "leafnode_urls", urls);
    }
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    size_t n = strlen(js);
    char *info = nd_xmalloc(n + 6);
    memcpy(info, "INFO ", 5);
    memcpy(info + 5, js, n - 1); /* without the closing brace: a connection adds its nonce */
    info[n + 4] = '\0';
    free(js);
    nd_free(r->info_json);
    r->info_json = info;
}

static void
write_route_info(nd_conn_t *c)
{
    nd_routes_t *r = c->srv->routes;
    char tail[64];
    char nonce[12];
    uint8_t raw[8];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        memset(raw, 7, sizeof raw);
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (size_t i = 0; i < 11; i++)
        nonce[i] = b64[(raw[i % 8] >> (i / 8)) & 63];
    nonce[11] = '\0';
    int n = snprintf(tail, sizeof tail, ",\"nonce\":\"%s\"} \r\n", nonce);
    pthread_mutex_lock(&r->mu);
    nd_conn_write(c, r->info_json, strlen(r->info_json));
    pthread_mutex_unlock(&r->mu);
    nd_conn_write(c, tail, (size_t)n);
}

static void
write_connect(nd_conn_t *c)
{
    nd_routes_t *r = c->srv->routes;
    nd_route_job_cred_t cred = {0};
    nd_route_job_creds(c->route->job, &cred);
    json_t *o = nd_peer_connect_new(true, cred.user, cred.pass, r->tls_client != NULL);
    json_object_set_new(o, "headers", json_boolean(!c->srv->opts.no_header_support));
    json_object_set_new(o, "name", json_string(c->srv->server_id));
    pthread_mutex_lock(&r->mu);
    json_object_set_new(o, "cluster", json_string(r->name));
    if (r->dynamic)
        json_object_set_new(o, "dynamic", json_true());
    pthread_mutex_unlock(&r->mu);
    nd_peer_write_op(c, "CONNECT", o);
}

void
nd_route_conn_start(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_routes_t *r = c->srv->routes;
    nd_log_info(RFMT "Route connection created", RARGS(c));
    if (c->route->job != NULL) {
        nd_log_debug(RFMT "Route connect msg sent", RARGS(c));
        write_connect(c);
    } else if (r->cfg.user != NULL) {
        nd_peer_auth_timer(ctx, c, r->cfg.auth_timeout_s, ROUTE_DEFAULT_AUTH_TIMEOUT_S);
    }
    write_route_info(c);
    nd_conn_start_pings(ctx, c);
}

/* ---- the peer's CONNECT and INFO ---- */

/* Cluster names: a dynamic name gives way to a configured or greater one. Returns: false when
 * the connection must be refused. */
static bool
cluster_name_ok(nd_routes_t *r, const char *theirs, bool their_dynamic)
{
    bool ok;
    pthread_mutex_lock(&r->mu);
    if (theirs == NULL || theirs[0] == '\0' || strcmp(theirs, r->name) == 0) {
        ok = true;
    } else if (r->dynamic && (!their_dynamic || strcmp(r->name, theirs) < 0)) {
        snprintf(r->name, sizeof r->name, "%s", theirs);
        r->dynamic = their_dynamic;
        build_info(r);
        ok = true;
    } else {
        ok = false;
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static bool
on_connect(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_routes_t *r = c->srv->routes;
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL) {
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    bool ok = true;
    const char *lang = json_string_value(json_object_get(o, "lang"));
    const char *gw = json_string_value(json_object_get(o, "gateway"));
    const char *user = json_string_value(json_object_get(o, "user"));
    const char *pass = json_string_value(json_object_get(o, "pass"));
    const char *cluster = json_string_value(json_object_get(o, "cluster"));
    const char *name = json_string_value(json_object_get(o, "name"));
    bool dynamic = json_is_true(json_object_get(o, "dynamic"));
    if (lang != NULL && lang[0] != '\0') {
        nd_log_error(RFMT "attempted to connect to route port", RARGS(c));
        nd_peer_fail(ctx, c, "attempted to connect to route port", ND_CLOSE_WRONG_PORT);
        ok = false;
    } else if (gw != NULL && gw[0] != '\0') {
        char text[300];
        snprintf(text, sizeof text, "Rejecting connection from gateway \"%s\" on the Route port",
                 gw);
        nd_log_error(RFMT "%s", RARGS(c), text);
        nd_peer_fail(ctx, c, text, ND_CLOSE_WRONG_PORT);
        ok = false;
    } else if (!nd_peer_auth_ok(r->cfg.user, r->cfg.pass, user, pass)) {
        nd_log_error(RFMT "authentication error", RARGS(c));
        nd_peer_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
        ok = false;
    } else if (!cluster_name_ok(r, cluster, dynamic)) {
        char ours[128], text[400];
        nd_routes_name(r, ours, sizeof ours);
        snprintf(text, sizeof text, "Rejecting connection, cluster name \"%s\" does not match \"%s\"",
                 cluster ? cluster : "", ours);
        nd_log_error(RFMT "%s", RARGS(c), text);
        nd_peer_fail(ctx, c, text, ND_CLOSE_CLUSTER_NAME_CONFLICT);
        ok = false;
    }
    if (ok) {
        c->route->connect_seen = true;
        c->connected = true;
        nd_timer_cancel(ctx, &c->auth_timer);
        if (name != NULL)
            snprintf(c->route->remote_id, sizeof c->route->remote_id, "%s", name);
        atomic_store_explicit(&c->headers,
                              json_is_true(json_object_get(o, "headers")) &&
                                  !c->srv->opts.no_header_support,
                              memory_order_relaxed);
    }
    json_decref(o);
    return ok;
}

void
nd_routes_leaf_urls(nd_routes_t *r, json_t *arr)
{
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nents; i++) {
        if (r->ents[i]->ldm)
            continue;
        for (size_t k = 0; k < r->ents[i]->leaf_urls.n; k++) {
            const char *u = r->ents[i]->leaf_urls.v[k];
            bool dup = false;
            for (size_t j = 0; j < json_array_size(arr) && !dup; j++)
                dup = strcmp(json_string_value(json_array_get(arr, j)), u) == 0;
            if (!dup)
                json_array_append_new(arr, json_string(u));
        }
    }
    pthread_mutex_unlock(&r->mu);
}

/* The URLs of every route (client ones, or WebSocket ones when ws), for the client INFO. */
static void
routes_urls(nd_routes_t *r, json_t *arr, bool ws)
{
    pthread_mutex_lock(&r->mu);
    if (!r->cfg.no_advertise) {
        for (size_t i = 0; i < r->nents; i++) {
            if (r->ents[i]->ldm)
                continue;
            const nd_strlist_t *l = ws ? &r->ents[i]->ws_connect_urls : &r->ents[i]->connect_urls;
            for (size_t k = 0; k < l->n; k++) {
                const char *u = l->v[k];
                bool dup = false;
                for (size_t j = 0; j < json_array_size(arr) && !dup; j++)
                    dup = strcmp(json_string_value(json_array_get(arr, j)), u) == 0;
                if (!dup)
                    json_array_append_new(arr, json_string(u));
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
}

void
nd_routes_connect_urls(nd_routes_t *r, json_t *arr)
{
    routes_urls(r, arr, false);
}

void
nd_routes_ws_connect_urls(nd_routes_t *r, json_t *arr)
{
    routes_urls(r, arr, true);
}

bool
nd_routes_no_advertise(const nd_routes_t *r)
{
    return r->cfg.no_advertise;
}

void
nd_routes_name(nd_routes_t *r, char *out, size_t cap)
{
    pthread_mutex_lock(&r->mu);
    snprintf(out, cap, "%s", r->name);
    pthread_mutex_unlock(&r->mu);
}

/* The client INFO changed (a member joined, left or went lame duck): republish it and tell
 * clients. */
static void
client_urls_changed(nd_ctx_t *ctx, nd_server_t *s)
{
    nd_server_publish_info(ctx, s);
    nd_conn_info_t **all = NULL;
    size_t n = nd_connreg_live(s->connreg, 0, &all);
    for (size_t i = 0; i < n; i++)
        nd_conn_send_info_update(ctx, all[i]->actor);
    nd_connreg_release_all(ctx, all, n);
}

/* Whether host:port is one of our configured (explicit) route URLs. */
static bool
configured(nd_routes_t *r, const char *host, int port)
{
    bool found = false;
    pthread_mutex_lock(&r->mu); /* a reload may replace the list */
    for (size_t i = 0; i < r->cfg.routes.n && !found; i++) {
        char h[256];
        int p;
        found = nd_route_url_hostport(r->cfg.routes.v[i], h, sizeof h, &p) == 0 && p == port &&
                strcasecmp(h, host) == 0;
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

/* Whether url is one of our configured (explicit) route URLs, as written. Ctx: under r->mu. */
static bool
configured_url(nd_routes_t *r, const char *url)
{
    for (size_t i = 0; i < r->cfg.routes.n; i++)
        if (strcmp(r->cfg.routes.v[i], url) == 0)
            return true;
    return false;
}

/* An INFO about another member, gossiped by a route: solicit it unless we know it. */
static void
implicit_route(nd_routes_t *r, json_t *o)
{
    const char *id = json_string_value(json_object_get(o, "server_id"));
    const char *ip = json_string_value(json_object_get(o, "ip"));
    const char *host = json_string_value(json_object_get(o, "host"));
    int port = (int)json_integer_value(json_object_get(o, "port"));
    if (id == NULL || ip == NULL || strcmp(id, r->srv->server_id) == 0 ||
        nd_routes_connected(r, id) || (host != NULL && configured(r, host, port)))
        return;
    char url[512];
    const char *rest = strstr(ip, "://");
    if (json_is_true(json_object_get(o, "auth_required")) && r->cfg.user != NULL && rest != NULL)
        snprintf(url, sizeof url, "nats-route://%s:%s@%s", r->cfg.user,
                 r->cfg.pass ? r->cfg.pass : "", rest + 3);
    else
        snprintf(url, sizeof url, "%s", ip);
    nd_route_dial(r->dialer, url, false);
}

/* Registers c as the route to its remote server. Returns: false when one exists already. */
static bool
register_route(nd_ctx_t *ctx, nd_conn_t *c, json_t *info)
{
    nd_routes_t *r = c->srv->routes;
    const char *host = json_string_value(json_object_get(info, "host"));
    int rport = (int)json_integer_value(json_object_get(info, "port"));
    /* What we forward to the others: the peer's INFO, with the address we reach it at. */
    json_object_del(info, "nonce");
    if (json_string_value(json_object_get(info, "ip")) == NULL ||
        json_string_value(json_object_get(info, "ip"))[0] == '\0') {
        char ip[128];
        snprintf(ip, sizeof ip, strchr(c->ip, ':') ? "nats-route://[%s]:%d/" : "nats-route://%s:%d/",
                 c->ip, rport);
        json_object_set_new(info, "ip", json_string(ip));
    }
    char *js = json_dumps(info, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t jn = strlen(js);

    nd_route_ent_t *e = nd_new(nd_route_ent_t);
    e->c = c;
    e->rid = c->cid;
    snprintf(e->remote_id, sizeof e->remote_id, "%s", c->route->remote_id);
    e->remote_name = nd_xstrdup(c->route->remote_name ? c->route->remote_name : "");
    e->ip = nd_xstrdup(c->ip);
    e->port = c->port;
    e->solicited = c->route->job != NULL;
    e->url = c->route->url ? nd_xstrdup(c->route->url) : NULL;
    e->remote_host = nd_xstrdup(host ? host : "");
    e->remote_port = rport;
    e->gossip = nd_xmalloc(jn + 10);
    memcpy(e->gossip, "INFO ", 5);
    memcpy(e->gossip + 5, js, jn);
    memcpy(e->gossip + 5 + jn, "\r\n", 3);
    free(js);
    json_t *urls = json_object_get(info, "connect_urls");
    for (size_t i = 0; i < json_array_size(urls); i++)
        if (json_is_string(json_array_get(urls, i)))
            nd_strlist_add(&e->connect_urls, json_string_value(json_array_get(urls, i)));
    urls = json_object_get(info, "leafnode_urls");
    for (size_t i = 0; i < json_array_size(urls); i++)
        if (json_is_string(json_array_get(urls, i)))
            nd_strlist_add(&e->leaf_urls, json_string_value(json_array_get(urls, i)));
    urls = json_object_get(info, "ws_connect_urls");
    for (size_t i = 0; i < json_array_size(urls); i++)
        if (json_is_string(json_array_get(urls, i)))
            nd_strlist_add(&e->ws_connect_urls, json_string_value(json_array_get(urls, i)));
    e->start_wall_ns = c->mon.start_ns;

    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nents; i++) {
        if (strcmp(r->ents[i]->remote_id, e->remote_id) == 0) {
            pthread_mutex_unlock(&r->mu);
            e->c = NULL; /* no reference taken yet */
            ent_free(ctx, e);
            return false;
        }
    }
    nd_actor_ref(&c->base);
    /* Tell the others about the newcomer: they solicit it if they do not know it. */
    for (size_t i = 0; i < r->nents; i++)
        send_proto(ctx, r->ents[i]->c, e->gossip, strlen(e->gossip));
    if (r->nents == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->ents = nd_xrealloc(r->ents, r->cap * sizeof(*r->ents));
    }
    r->ents[r->nents++] = e;
    bool urls_changed =
        (e->connect_urls.n > 0 || e->ws_connect_urls.n > 0) && !r->cfg.no_advertise;
    bool leaf_urls_changed = e->leaf_urls.n > 0;
    pthread_mutex_unlock(&r->mu);
    if (leaf_urls_changed && c->srv->leafs != NULL)
        nd_leafs_urls_changed(ctx, c->srv->leafs);

    c->route->registered = true;
    nd_log_debug(RFMT "Registering remote route \"%s\"", RARGS(c), c->route->remote_id);
    nd_peer_dump_all(ctx, c, nd_interest_send_dump, on_dump); /* every account's interest */
    nd_log_debug(RFMT "Sent local subscriptions to route", RARGS(c));
    if (urls_changed)
        client_urls_changed(ctx, c->srv);
    return true;
}

static bool
on_info(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_routes_t *r = c->srv->routes;
    nd_route_t *rt = c->route;
    json_t *o = nd_peer_info_parse(ctx, c, cmd, "rid", "route");
    if (o == NULL)
        return false;
    const char *id = json_string_value(json_object_get(o, "server_id"));
    const char *name = json_string_value(json_object_get(o, "server_name"));
    const char *cluster = json_string_value(json_object_get(o, "cluster"));
    const char *gw = json_string_value(json_object_get(o, "gateway"));
    if (gw != NULL && gw[0] != '\0' && rt->info_received) {
        /* A peer connected to a gateway: we connect to it too (gateway.c). */
        if (c->srv->gateways != NULL)
            nd_gateways_from_route(c->srv->gateways, o);
        json_decref(o);
        return true;
    }
    const char *gw_url = json_string_value(json_object_get(o, "gateway_url"));
    if (gw_url != NULL && gw_url[0] != '\0' && c->srv->gateways != NULL)
        nd_gateways_add_url(c->srv->gateways, gw_url);
    if (id == NULL)
        id = "";
    if (strcmp(id, c->srv->server_id) == 0) {
        /* A route to ourselves (a seed list that names this server). */
        snprintf(rt->remote_id, sizeof rt->remote_id, "%s", id);
        json_decref(o);
        nd_conn_close(ctx, c, ND_CLOSE_DUPLICATE_ROUTE);
        return false;
    }
    if (!cluster_name_ok(r, cluster, json_is_true(json_object_get(o, "dynamic")))) {
        json_decref(o);
        nd_conn_close(ctx, c, ND_CLOSE_CLUSTER_NAME_CONFLICT);
        return false;
    }
    if (rt->info_received) {
        if (rt->remote_id[0] != '\0' && strcmp(rt->remote_id, id) != 0) {
            implicit_route(r, o); /* gossip about another member */
        } else if (json_is_true(json_object_get(o, "ldm"))) {
            bool changed = false;
            pthread_mutex_lock(&r->mu);
            for (size_t i = 0; i < r->nents; i++)
                if (r->ents[i]->c == c && !r->ents[i]->ldm) {
                    r->ents[i]->ldm = true;
                    changed = (r->ents[i]->connect_urls.n > 0 ||
                               r->ents[i]->ws_connect_urls.n > 0) &&
                              !r->cfg.no_advertise;
                }
            pthread_mutex_unlock(&r->mu);
            if (changed)
                client_urls_changed(ctx, c->srv);
        }
        json_decref(o);
        return true;
    }
    const char *own = c->srv->opts.server_name;
    if (rt->job == NULL && name != NULL && own != NULL && strcmp(name, own) == 0) {
        nd_log_error(RFMT "Remote server has a duplicate name: \"%s\"", RARGS(c), name);
        json_decref(o);
        nd_conn_close(ctx, c, ND_CLOSE_DUPLICATE_SERVER_NAME);
        return false;
    }
    rt->info_received = true;
    snprintf(rt->remote_id, sizeof rt->remote_id, "%s", id);
    nd_free(rt->remote_name);
    rt->remote_name = nd_xstrdup(name ? name : "");
    atomic_store_explicit(&c->headers,
                          json_is_true(json_object_get(o, "headers")) &&
                              !c->srv->opts.no_header_support,
                          memory_order_relaxed);
    if (rt->job != NULL)
        nd_route_job_learned(r->dialer, rt->job, id);
    bool ok = register_route(ctx, c, o);
    json_decref(o);
    if (!ok) {
        nd_log_debug(RFMT "Detected duplicate remote route \"%s\"", RARGS(c), rt->remote_id);
        nd_conn_close(ctx, c, ND_CLOSE_DUPLICATE_ROUTE);
        return false;
    }
    return true;
}

/* ---- the peer's interest ---- */

/* The account named by a route command (the route's cached list, then the auth snapshot).
 * Returns: NULL when no such account exists. */
static nd_acct_t *
route_acct(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_slice_t *name)
{
    return nd_peer_acct(ctx, c->srv, &c->route->accts, name);
}

static void
on_rsub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_acct_t *acct = route_acct(ctx, c, &cmd->account);
    if (acct == NULL) {
        /* Once per route at error level (a peer's $SYS interest alone is dozens of lines);
         * while the server stops, its accounts are gone: not an error. */
        bool stopping = atomic_load_explicit(&c->srv->routes->stopping, memory_order_relaxed);
        nd_log(c->route->unknown_logged || stopping ? ND_LOG_DEBUG : ND_LOG_ERROR,
               RFMT "Unknown account \"%.*s\" for remote subject \"%.*s\"", RARGS(c),
               (int)cmd->account.len, cmd->account.ptr, (int)cmd->subject.len, cmd->subject.ptr);
        c->route->unknown_logged = true;
        return;
    }
    if (!nd_subj_valid_sub(cmd->subject.ptr, cmd->subject.len) ||
        (cmd->queue.len > 0 && !nd_subj_valid_queue(cmd->queue.ptr, cmd->queue.len))) {
        nd_log_error(RFMT "Could not insert subscription: invalid subject", RARGS(c));
        nd_conn_write(c, "-ERR 'Invalid Subscription'\r\n", 29);
        return;
    }
    nd_permset_t *perms = c->srv->routes->perms;
    if (perms != NULL && !nd_perms_sub_allowed(perms, cmd->subject.ptr, cmd->subject.len,
                                               cmd->queue.ptr, cmd->queue.len)) {
        nd_log_debug(RFMT "Can not export \"%.*s\", ignoring remote subscription request",
                     RARGS(c), (int)cmd->subject.len, cmd->subject.ptr);
        return;
    }
    nd_peer_sid_t sid;
    nd_peer_sid_init(&sid, cmd, true);
    uint16_t w = nd_peer_qweight(cmd);
    nd_sub_t *sub = nd_sidmap_get(&c->subs, sid.p, sid.n);
    if (sub != NULL) {
        if (cmd->queue.len > 0)
            atomic_store_explicit(&sub->qweight, w, memory_order_relaxed);
    } else {
        /* Acknowledged: a message that follows waits for it (nd_route_handle). */
        nd_peer_sub_add(ctx, c, acct, cmd, &sid, ND_SUB_ROUTE, w, acct);
    }
    nd_peer_sid_fini(&sid);
}

static void
on_runsub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_peer_sid_t sid;
    nd_peer_sid_init(&sid, cmd, true);
    nd_peer_sub_del(ctx, c, NULL, sid.p, sid.n);
    nd_peer_sid_fini(&sid);
}

static void
on_rmsg(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_proto_cmd_t pub;
    nd_acct_t *acct =
        nd_peer_rmsg_start(ctx, c, &c->route->accts, cmd, "rid", "routed message", &pub);
    if (acct == NULL)
        return;
    if (c->srv->gateways != NULL && nd_gw_route_reply(ctx, c, acct, &pub))
        return;
    nd_deliver_route_publish(ctx, c, acct, &pub);
}

bool
nd_route_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_route_t *rt = c->route;
    if ((cmd->op == ND_PROTO_OP_RMSG || cmd->op == ND_PROTO_OP_RHMSG) && c->sub_acks_due > 0) {
        /* nats-server inserts a remote subscription before it reads on; we wait for the
         * account's acknowledgement before delivering what follows (conn.c resumes). */
        c->paused = true;
        return false;
    }
    if (nd_log_enabled(ND_LOG_TRACE))
        nd_peer_trace(c, "rid", cmd);
    if (rt->job == NULL && !rt->connect_seen && cmd->op != ND_PROTO_OP_CONNECT &&
        c->srv->routes->cfg.user != NULL) {
        /* With cluster authorization, an accepted route must say CONNECT first (nats-server's
         * expectConnect with awaitingAuth); without, a PING before it is answered. */
        nd_log_error(RFMT "authentication error", RARGS(c));
        nd_peer_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
        return false;
    }
    switch (cmd->op) {
    case ND_PROTO_OP_RMSG:
    case ND_PROTO_OP_RHMSG:
        on_rmsg(ctx, c, cmd);
        return !c->closing;
    case ND_PROTO_OP_RSUB:
        on_rsub(ctx, c, cmd);
        return true;
    case ND_PROTO_OP_RUNSUB:
        on_runsub(ctx, c, cmd);
        return true;
    case ND_PROTO_OP_CONNECT:
        if (rt->job != NULL || rt->connect_seen)
            return true; /* nothing to learn from a second one */
        return on_connect(ctx, c, cmd);
    case ND_PROTO_OP_INFO:
        return on_info(ctx, c, cmd);
    default: /* PING, PONG, +OK, -ERR, unknown */
        return nd_peer_handle_ctl(ctx, c, cmd, "rid", "Route Error");
    }
}

/* ---- close ---- */

void
nd_route_teardown(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_routes_t *r = c->srv->routes;
    nd_route_t *rt = c->route;
    /* The peer's subscriptions, account by account. */
    nd_peer_unsub_all(ctx, c, &rt->accts);
    bool urls_changed = false;
    if (rt->registered) {
        nd_route_ent_t *gone = NULL;
        pthread_mutex_lock(&r->mu);
        for (size_t i = 0; i < r->nents; i++)
            if (r->ents[i]->c == c) {
                gone = r->ents[i];
                r->ents[i] = r->ents[--r->nents];
                break;
            }
        pthread_mutex_unlock(&r->mu);
        if (gone != NULL) {
            urls_changed = (gone->connect_urls.n > 0 || gone->ws_connect_urls.n > 0) &&
                           !gone->ldm && !r->cfg.no_advertise;
            if (gone->leaf_urls.n > 0 && c->srv->leafs != NULL &&
                !atomic_load_explicit(&r->stopping, memory_order_relaxed))
                nd_leafs_urls_changed(ctx, c->srv->leafs); /* it is out of the table */
            ent_free(ctx, gone);
        }
        rt->registered = false;
    }
    nd_log_info(RFMT "Router connection closed: %s", RARGS(c), nd_close_reason_text(c->reason));
    if (rt->job != NULL) {
        bool self = strcmp(rt->remote_id, c->srv->server_id) == 0;
        nd_route_dial_closed(r->dialer, rt->job, rt->remote_id, self);
        rt->job = NULL;
    }
    if (urls_changed)
        client_urls_changed(ctx, c->srv);
}

void
nd_route_fini(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_route_t *rt = c->route;
    if (rt == NULL)
        return;
    nd_peer_accts_free(ctx, &rt->accts);
    nd_free(rt->remote_name);
    nd_free(rt->url);
    nd_free(rt);
    c->route = NULL;
}

void
nd_route_spawn(nd_ctx_t *ctx, nd_server_t *srv, int fd, nd_route_job_t *job, const char *url)
{
    nd_route_t *rt = nd_new(nd_route_t);
    rt->job = job;
    rt->url = url != NULL ? nd_xstrdup(url) : NULL;
    int port;
    if (url != NULL && nd_route_url_hostport(url, rt->host, sizeof rt->host, &port) != 0)
        rt->host[0] = '\0';
    nd_conn_spawn_route(ctx, srv, fd, rt);
}

/* ---- listener, start, stop ---- */

static void
on_accept(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_server_t *s = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nd_route_spawn(ctx, s, fd, NULL, NULL);
}

bool
nd_routes_configured(const nd_opts_t *o)
{
    /* nats-server routes only with a cluster port (-1: a random one); a block without one,
     * or with port 0, does not cluster. */
    return (o->cluster != NULL && o->cluster->port != 0) ||
           (o->cluster_url != NULL && o->cluster_url[0] != '\0');
}

/* Splits a comma-separated --routes value into l. */
static void
split_routes(const char *s, nd_strlist_t *l)
{
    while (s != NULL && *s != '\0') {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        while (n > 0 && (*s == ' ')) {
            s++;
            n--;
        }
        while (n > 0 && s[n - 1] == ' ')
            n--;
        if (n > 0) {
            char *u = nd_xmalloc(n + 1);
            memcpy(u, s, n);
            u[n] = '\0';
            nd_strlist_add(l, u);
            nd_free(u);
        }
        s = e ? e + 1 : NULL;
    }
}

/* The cluster block with the command-line flags over it (nats-server's MergeOptions). */
static void
build_cfg(nd_routes_t *r, const nd_opts_t *o)
{
    nd_route_cfg_t *c = &r->cfg;
    const nd_cluster_opts_t *b = o->cluster;
    if (b != NULL) {
        c->host = b->host ? nd_xstrdup(b->host) : NULL;
        c->port = b->port;
        c->user = b->user ? nd_xstrdup(b->user) : NULL;
        c->pass = b->pass ? nd_xstrdup(b->pass) : NULL;
        c->auth_timeout_s = b->auth_timeout_s;
        c->advertise = b->advertise ? nd_xstrdup(b->advertise) : NULL;
        c->no_advertise = b->no_advertise;
        c->connect_retries = b->connect_retries;
        for (size_t i = 0; i < b->routes.n; i++)
            nd_strlist_add(&c->routes, b->routes.v[i]);
        if (b->name != NULL)
            snprintf(r->name, sizeof r->name, "%s", b->name);
    }
    if (o->cluster_url != NULL && o->cluster_url[0] != '\0') {
        char h[256], user[128], pass[128];
        int p;
        if (nd_route_url_parse(o->cluster_url, h, sizeof h, &p, user, sizeof user, pass,
                               sizeof pass) == 0) {
            nd_free(c->host);
            c->host = nd_xstrdup(h);
            c->port = p;
            if (user[0] != '\0') {
                nd_free(c->user);
                nd_free(c->pass);
                c->user = nd_xstrdup(user);
                c->pass = nd_xstrdup(pass);
            }
        }
    }
    if (o->routes != NULL) {
        nd_strlist_free(&c->routes);
        split_routes(o->routes, &c->routes);
    }
    if (o->cluster_name != NULL && o->cluster_name[0] != '\0')
        snprintf(r->name, sizeof r->name, "%s", o->cluster_name);
    if (r->name[0] == '\0' && o->gateway != NULL && o->gateway->name != NULL)
        snprintf(r->name, sizeof r->name, "%s", o->gateway->name); /* as nats-server */
    if (o->cluster_advertise != NULL) {
        nd_free(c->advertise);
        c->advertise = nd_xstrdup(o->cluster_advertise);
    }
    if (o->cluster_no_advertise)
        c->no_advertise = true;
    if (o->cluster_connect_retries != 0)
        c->connect_retries = o->cluster_connect_retries;
    if (r->name[0] == '\0') {
        /* nats-server names a cluster without a name with a random id and lets it change. */
        char id[57];
        uint8_t raw[16];
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
            memset(raw, 1, sizeof raw);
        static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (size_t i = 0; i < 22; i++)
            id[i] = al[raw[i % 16] % 36 ^ (i / 16)];
        id[22] = '\0';
        snprintf(r->name, sizeof r->name, "%s", id);
        r->dynamic = true;
    }
}

nd_routes_t *
nd_routes_new(nd_server_t *s)
{
    nd_routes_t *r = nd_new(nd_routes_t);
    r->srv = s;
    pthread_mutex_init(&r->mu, NULL);
    build_cfg(r, &s->opts);
    r->listener = nd_listener_bind(&(nd_listener_decl_t){
        .host = r->cfg.host,
        .port = r->cfg.port,
        .backlog = 1024,
        .what = "router port",
        .ready = "Listening for route connections on",
        .accept_name = "Route",
        .errlog = ND_LISTENER_ERRLOG_NATS,
        .on_accept = on_accept,
        .arg = s,
    });
    if (r->listener == NULL) {
        nd_routes_free(r);
        return NULL;
    }
    r->port = nd_listener_port(r->listener);
    if (s->opts.cluster != NULL && s->opts.cluster->has_perms)
        r->perms = nd_perms_build(&s->opts.cluster->perms);
    if (s->opts.cluster != NULL && s->opts.cluster->tls != NULL) {
        char err[512];
        r->tls_server = nd_tls_ctx_new(s->opts.cluster->tls, err, sizeof err);
        if (r->tls_server != NULL)
            r->tls_client = nd_tls_ctx_new_client(s->opts.cluster->tls, err, sizeof err);
        if (r->tls_client == NULL) {
            nd_log_error("Cluster TLS: %s", err);
            nd_routes_free(r);
            return NULL;
        }
    }
    build_info(r);
    r->hook.fn = on_interest;
    r->hook.arg = r;
    r->hook.imports = nd_route_imp_on_sub;
    return r;
}

void
nd_routes_start(nd_routes_t *r)
{
    nd_log_info("Cluster name is %s", r->name);
    if (r->dynamic)
        nd_log_warn("Cluster name was dynamically generated, consider setting one");
    /* The dialer first: an accepted route's gossip may ask it to solicit at once. */
    r->dialer = nd_route_dialer_new(r->srv);
    nd_listener_start(r->listener, r->srv->pool, r->srv->poller);
    nd_listener_log_ready(r->listener);
    for (size_t i = 0; i < r->cfg.routes.n; i++)
        nd_route_dial(r->dialer, r->cfg.routes.v[i], true);
}

void
nd_routes_stop(nd_routes_t *r)
{
    if (r == NULL)
        return;
    atomic_store_explicit(&r->stopping, true, memory_order_relaxed);
    if (r->listener != NULL)
        nd_listener_stop(r->listener);
    nd_route_dialer_stop(r->dialer);
    /* The table's references would keep the pool's shutdown waiting. */
    nd_ctx_t *ctx = nd_ctx_external_new(r->srv->pool);
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nents; i++)
        nd_conn_send_shutdown(ctx, &r->ents[i]->c->base);
    pthread_mutex_unlock(&r->mu);
    nd_ctx_external_free(ctx);
}

void
nd_routes_free(nd_routes_t *r)
{
    if (r == NULL)
        return;
    nd_listener_free(r->listener);
    nd_route_dialer_free(r->dialer);
    /* The pool is gone: its shutdown freed the actors; only our copies remain. */
    for (size_t i = 0; i < r->nents; i++)
        ent_free(NULL, r->ents[i]);
    nd_free(r->ents);
    nd_free(r->info_json);
    nd_free(r->cfg.host);
    nd_free(r->cfg.user);
    nd_free(r->cfg.pass);
    nd_free(r->cfg.advertise);
    nd_strlist_free(&r->cfg.routes);
    if (r->perms != NULL)
        nd_perms_unref(r->perms);
    nd_tls_ctx_unref(r->tls_server);
    nd_tls_ctx_unref(r->tls_client);
    pthread_mutex_destroy(&r->mu);
    nd_free(r);
}

size_t
nd_routes_stats(nd_routes_t *r, nd_route_stat_t **out, nd_conn_info_t ***infos)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->nents;
    nd_route_stat_t *v = nd_xcalloc(n > 0 ? n : 1, sizeof(*v));
    if (infos != NULL) {
        *infos = nd_xcalloc(n > 0 ? n : 1, sizeof(**infos));
        for (size_t i = 0; i < n; i++) {
            nd_conn_info_t *ci = nd_new(nd_conn_info_t);
            atomic_init(&ci->refs, 1);
            ci->cid = r->ents[i]->rid;
            ci->kind = ND_CONN_ROUTER;
            ci->actor = &r->ents[i]->c->base;
            nd_actor_ref(ci->actor);
            (*infos)[i] = ci;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const nd_route_ent_t *e = r->ents[i];
        nd_route_stat_t *s = &v[i];
        const nd_mon_conn_t *m = &e->c->mon;
        s->rid = e->rid;
        snprintf(s->remote_id, sizeof s->remote_id, "%s", e->remote_id);
        snprintf(s->remote_name, sizeof s->remote_name, "%s", e->remote_name);
        s->did_solicit = e->solicited;
        s->is_configured = e->solicited && e->url != NULL && configured_url(r, e->url);
        snprintf(s->ip, sizeof s->ip, "%s", e->ip);
        s->port = e->port;
        s->start_wall_ns = e->start_wall_ns;
        s->last_ns = atomic_load_explicit(&m->last_ns, memory_order_relaxed);
        s->rtt_ns = atomic_load_explicit(&m->rtt_ns, memory_order_relaxed);
        s->pending = atomic_load_explicit(&e->c->pending, memory_order_relaxed);
        s->in_msgs = atomic_load_explicit(&m->in_msgs, memory_order_relaxed);
        s->in_bytes = atomic_load_explicit(&m->in_bytes, memory_order_relaxed);
        s->out_msgs = atomic_load_explicit(&m->out_msgs, memory_order_relaxed);
        s->out_bytes = atomic_load_explicit(&m->out_bytes, memory_order_relaxed);
        s->subs = atomic_load_explicit(&m->num_subs, memory_order_relaxed);
    }
    pthread_mutex_unlock(&r->mu);
    *out = v;
    return n;
}

size_t
nd_routes_varz(nd_routes_t *r, json_t *o)
{
    pthread_mutex_lock(&r->mu);
    json_object_set_new(o, "name", json_string(r->name));
    size_t n = r->nents;
    pthread_mutex_unlock(&r->mu);
    json_object_set_new(o, "addr", json_string(r->cfg.host ? r->cfg.host : "0.0.0.0"));
    json_object_set_new(o, "cluster_port", json_integer(r->port));
    double at = r->cfg.auth_timeout_s > 0 ? r->cfg.auth_timeout_s : ROUTE_DEFAULT_AUTH_TIMEOUT_S;
    /* Go prints a whole float64 without a fraction. */
    json_object_set_new(o, "auth_timeout", at == (double)(int64_t)at ? json_integer((json_int_t)at)
                                                                      : json_real(at));
    json_t *urls = json_array();
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->cfg.routes.n; i++) {
        char h[256];
        int p;
        if (nd_route_url_hostport(r->cfg.routes.v[i], h, sizeof h, &p) == 0) {
            char u[300];
            snprintf(u, sizeof u, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, p);
            json_array_append_new(urls, json_string(u));
        }
    }
    pthread_mutex_unlock(&r->mu);
    json_object_set_new(o, "urls", urls);
    json_object_set_new(o, "tls_timeout", json_integer(2));
    return n;
}

void
nd_routes_send_ldm(nd_ctx_t *ctx, nd_routes_t *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = strlen(r->info_json);
    char *line = nd_xmalloc(n + 32);
    memcpy(line, r->info_json, n);
    memcpy(line + n, ",\"ldm\":true} \r\n", 15);
    for (size_t i = 0; i < r->nents; i++)
        send_proto(ctx, r->ents[i]->c, line, n + 15);
    pthread_mutex_unlock(&r->mu);
    nd_free(line);
}

static bool
listed(const nd_strlist_t *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

void
nd_routes_reload(nd_routes_t *r, const nd_opts_t *o)
{
    nd_routes_t n = {0};
    build_cfg(&n, o);
    nd_ctx_t *ctx = nd_ctx_external_new(r->srv->pool);
    /* Lock order: the dialer's mutex before the table's, so the dialer is called after. */
    pthread_mutex_lock(&r->mu);
    nd_strlist_t old = r->cfg.routes;
    r->cfg.routes = n.cfg.routes;
    n.cfg.routes = nd_strlist_dup(&r->cfg.routes);
    nd_conn_t **gone = nd_xmalloc((r->nents + 1) * sizeof(*gone));
    size_t ngone = 0;
    for (size_t k = 0; k < r->nents; k++)
        if (r->ents[k]->url != NULL && listed(&old, r->ents[k]->url) &&
            !listed(&n.cfg.routes, r->ents[k]->url)) {
            gone[ngone] = r->ents[k]->c;
            nd_actor_ref(&gone[ngone++]->base);
        }
    pthread_mutex_unlock(&r->mu);
    /* Removed: no more dialing, and its connection closes ("Route Removed"). */
    for (size_t i = 0; i < old.n; i++)
        if (!listed(&n.cfg.routes, old.v[i]))
            nd_route_dial_remove(r->dialer, old.v[i]);
    for (size_t i = 0; i < ngone; i++) {
        nd_conn_send_close(ctx, &gone[i]->base, ND_CLOSE_ROUTE_REMOVED);
        nd_actor_unref(ctx, &gone[i]->base);
    }
    nd_free(gone);
    for (size_t i = 0; i < n.cfg.routes.n; i++)
        if (!listed(&old, n.cfg.routes.v[i]))
            nd_route_dial(r->dialer, n.cfg.routes.v[i], true);
    nd_ctx_external_free(ctx);
    nd_strlist_free(&old);
    nd_free(n.cfg.host);
    nd_free(n.cfg.user);
    nd_free(n.cfg.pass);
    nd_free(n.cfg.advertise);
    nd_strlist_free(&n.cfg.routes);
}

void
nd_routes_attach(nd_routes_t *r, nd_acct_t *gacct)
{
    nd_interest_attach(gacct, &r->hook);
}
