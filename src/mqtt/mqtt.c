/* The MQTT service: option checks, the listener and the table of connected client identifiers
 * (see mqtt.h). The protocol of each connection is mqtt_sess.c. */
#include "mqtt/mqtt_int.h"

#include <stdio.h>
#include <string.h>

#include "actors/alloc.h"
#include "cfg/opts_parse.h"
#include "cfg/opts_table.h"
#include "net/tls.h"
#include "util/log.h"

int
nd_mqtt_check(const nd_opts_t *o, char *err, size_t errlen)
{
    const nd_mqtt_opts_t *mo = o->mqtt;
    if (mo == NULL || mo->port == 0)
        return 0;
    /* nats-server 2.9.10 wants the name even when standalone (2.10 only in a cluster). */
    if (o->server_name == NULL || o->server_name[0] == '\0') {
        snprintf(err, errlen, "mqtt requires server name to be explicitly set");
        return -1;
    }
    bool clustered = o->cluster != NULL && o->cluster->port != 0;
    bool gateway = o->gateway != NULL && o->gateway->port != 0;
    bool leaf = o->leaf != NULL && (o->leaf->port != 0 || o->leaf->nremotes > 0);
    if (!o->jetstream && !clustered && !gateway && !leaf) {
        snprintf(err, errlen,
                 "mqtt requires JetStream to be enabled if running in standalone mode");
        return -1;
    }
    if (mo->consumer_replicas > 0 && mo->stream_replicas > 0 &&
        mo->consumer_replicas > mo->stream_replicas) {
        snprintf(err, errlen, "mqtt: consumer_replicas (%d) cannot be higher than stream_replicas (%d)",
                 mo->consumer_replicas, mo->stream_replicas);
        return -1;
    }
    return 0;
}

static void
on_accept(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_mqtt_t *m = arg;
    nd_pconn_spawn(ctx, m->srv, fd, &nd_mqtt_proto, m, m->tls);
}

static void
live_set(nd_mqtt_t *m, const nd_mqtt_opts_t *o)
{
    atomic_store(&m->ack_wait_ms, o->ack_wait_ms);
    atomic_store(&m->max_ack_pending, o->max_ack_pending);
    atomic_store(&m->stream_replicas, o->stream_replicas);
    atomic_store(&m->consumer_replicas, o->consumer_replicas);
    atomic_store(&m->consumer_memory, o->consumer_memory_storage);
    atomic_store(&m->inactive_ms, o->consumer_inactive_threshold_ms);
}

void
nd_mqtt_reload(nd_mqtt_t *m, const nd_mqtt_opts_t *n)
{
    live_set(m, n);
    char d[64];
    nd_cfg_go_dur_string(n->ack_wait_ms, d, sizeof d);
    nd_log_info("Reloaded: MQTT ack_wait = %s", d);
    nd_log_info("Reloaded: MQTT max_ack_pending = %d", n->max_ack_pending);
    nd_log_info("Reloaded: MQTT stream_replicas = %d", n->stream_replicas);
    nd_log_info("Reloaded: MQTT consumer_replicas = %d", n->consumer_replicas);
    nd_log_info("Reloaded: MQTT consumer_memory_storage = %s",
                n->consumer_memory_storage ? "true" : "false");
    nd_cfg_go_dur_string(n->consumer_inactive_threshold_ms, d, sizeof d);
    nd_log_info("Reloaded: MQTT consumer_inactive_threshold = %s", d);
    if (!nd_opt_equal(&nd_opt_tls_block, m->mo->tls, n->tls, 0))
        nd_log_warn("Reload: mqtt tls changed; not applied (the listener keeps its TLS context)");
}

nd_mqtt_t *
nd_mqtt_new(nd_server_t *srv, bool *failed)
{
    *failed = false;
    const nd_mqtt_opts_t *mo = srv->opts.mqtt;
    if (mo == NULL || mo->port == 0)
        return NULL;
    nd_mqtt_t *m = nd_new(nd_mqtt_t);
    m->srv = srv;
    m->mo = mo;
    live_set(m, mo);
    pthread_mutex_init(&m->mu, NULL);
    m->auth.user = mo->user;
    m->auth.pass = mo->pass;
    m->auth.token = mo->token;
    m->auth.no_auth_user = mo->no_auth_user;
    if (mo->tls != NULL) {
        char err[256];
        m->tls = nd_tls_ctx_new(mo->tls, err, sizeof err);
        if (m->tls == NULL) {
            nd_log_error("mqtt: %s", err);
            *failed = true;
            pthread_mutex_destroy(&m->mu);
            nd_free(m);
            return NULL;
        }
    }
    m->listener = nd_listener_bind(&(nd_listener_decl_t){
        .host = mo->host,
        .port = mo->port,
        .backlog = 128,
        .what = "mqtt",
        .ready = "Listening for MQTT clients on",
        .accept_name = "MQTT",
        .errlog = ND_LISTENER_ERRLOG_NATS,
        .on_accept = on_accept,
        .arg = m,
    });
    if (m->listener == NULL) {
        *failed = true;
        nd_tls_ctx_unref(m->tls);
        pthread_mutex_destroy(&m->mu);
        nd_free(m);
        return NULL;
    }
    m->port = nd_listener_port(m->listener);
    srv->mqtt_port = m->port; /* for /varz: before the pool starts, as server.h says */
    nd_pconn_register_ws(srv, &nd_mqtt_proto, m); /* the websocket port's /mqtt (conn_ws.c) */
    return m;
}

void
nd_mqtt_start(nd_mqtt_t *m)
{
    if (m == NULL)
        return;
    nd_listener_start(m->listener, m->srv->pool, m->srv->poller);
    const char *h = m->mo->host != NULL && m->mo->host[0] ? m->mo->host : "0.0.0.0";
    nd_log_info("Listening for MQTT clients on %s://%s:%d", m->tls != NULL ? "tls" : "mqtt", h,
                m->port);
}

void
nd_mqtt_stop(nd_mqtt_t *m)
{
    if (m != NULL)
        nd_listener_stop(m->listener);
}

void
nd_mqtt_free(nd_mqtt_t *m)
{
    if (m == NULL)
        return;
    nd_listener_free(m->listener);
    nd_tls_ctx_unref(m->tls);
    nd_mqtt_acct_free_all(m);
    pthread_mutex_destroy(&m->mu);
    nd_free(m);
}

int
nd_mqtt_port(const nd_mqtt_t *m)
{
    return m != NULL ? m->port : 0;
}

/* ---- client identifiers ---- */

static uint32_t
cid_hash(const void *acct, const char *id)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)acct;
    for (const char *p = id; *p; p++) {
        h ^= (uint8_t)*p;
        h *= 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

nd_actor_t *
nd_mqtt_cid_take(nd_mqtt_t *m, nd_mqtt_cid_t *e, int64_t now_ns, bool *jailed)
{
    e->hash = cid_hash(e->acct, e->id);
    nd_mqtt_cid_t **b = &m->buckets[e->hash % ND_MQTT_CID_BUCKETS];
    nd_actor_t *old = NULL;
    *jailed = false;
    pthread_mutex_lock(&m->mu);
    for (nd_mqtt_cid_t **pp = b; *pp != NULL; pp = &(*pp)->next) {
        nd_mqtt_cid_t *o = *pp;
        if (o->hash == e->hash && o->acct == e->acct && strcmp(o->id, e->id) == 0) {
            if (o->took_over_ns != 0 && now_ns - o->took_over_ns < ND_MQTT_JAIL_NS) {
                /* The id changed hands less than a second ago: a flapping pair of clients.
                 * The newcomer does not take it (nats-server's flappers). */
                *jailed = true;
                pthread_mutex_unlock(&m->mu);
                return NULL;
            }
            /* Listed means its connection has not run its close yet, so it is alive. */
            e->took_over_ns = now_ns;
            *pp = o->next;
            o->listed = false;
            o->replaced = true;
            old = o->actor;
            nd_actor_ref(old);
            break;
        }
    }
    e->next = *b;
    *b = e;
    e->listed = true;
    e->replaced = false;
    pthread_mutex_unlock(&m->mu);
    return old;
}

bool
nd_mqtt_cid_drop(nd_mqtt_t *m, nd_mqtt_cid_t *e)
{
    pthread_mutex_lock(&m->mu);
    bool replaced = e->replaced;
    if (e->listed) {
        for (nd_mqtt_cid_t **pp = &m->buckets[e->hash % ND_MQTT_CID_BUCKETS]; *pp != NULL;
             pp = &(*pp)->next)
            if (*pp == e) {
                *pp = e->next;
                break;
            }
        e->listed = false;
    }
    pthread_mutex_unlock(&m->mu);
    return replaced;
}
