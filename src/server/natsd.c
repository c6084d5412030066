/* natsd embedding API; see include/natsd/natsd.h. */
#include "cfg/opts.h"
#include "natsd/natsd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actors/alloc.h"
#include "actors/pool.h"
#include "cfg/opts_parse.h"
#include "js/js.h"
#include "mon/monitor.h"
#include "mon/sysevents.h"
#include "mqtt/mqtt.h"
#include "server/lameduck.h"
#include "server/reload.h"
#include "net/server.h"
#include "util/log.h"

struct natsd {
    nd_pool_t *pool;
    nd_server_t *server;
    nd_mon_t *mon; /* HTTP monitoring, or NULL when off */
    nd_js_t *js;   /* JetStream, or NULL when off */
    nd_mqtt_t *mqtt; /* the MQTT listener, or NULL when off */
    char url[320]; /* natsd_client_url */
    /* any thread, atomic (relaxed: a flag read by natsd_ready, nothing published with it) */
    atomic_bool ready; /* accepting clients: set at the end of natsd_start, cleared by lame duck
                        * mode and natsd_stop */
};

_Static_assert((int)NATSD_LOG_TRACE == (int)ND_LOG_TRACE &&
                   (int)NATSD_LOG_FATAL == (int)ND_LOG_FATAL,
               "natsd_log_level_t mirrors nd_log_level_t");

natsd_opts_t *
natsd_opts_new(void)
{
    nd_opts_t *o = nd_new(nd_opts_t);
    nd_opts_defaults(o);
    return o;
}

void
natsd_opts_free(natsd_opts_t *o)
{
    if (o == NULL)
        return;
    nd_opts_free(o);
    nd_free(o);
}

/* nd_opts_apply_config's 1 (a warning nats-server's -t treats as fatal) runs as 0 does. */
static int
api_rc(int rc)
{
    return rc < 0 ? -1 : 0;
}

int
natsd_opts_set(natsd_opts_t *o, const char *name, const char *value, char *err, size_t errlen)
{
    return api_rc(nd_opts_set_option(o, name, value, err, errlen));
}

int
natsd_opts_load_file(natsd_opts_t *o, const char *path, char *err, size_t errlen)
{
    int rc = api_rc(nd_opts_apply_config(o, path, err, errlen));
    if (rc == 0)
        nd_set_str(&o->config_file, path);
    return rc;
}

int
natsd_opts_load_string(natsd_opts_t *o, const char *text, char *err, size_t errlen)
{
    return api_rc(nd_opts_apply_config_string(o, text, "natsd_opts_load_string", err, errlen));
}

/* "nats://host:port" for a client of this machine: loopback when the server listens on every
 * address. */
static void
set_client_url(natsd_t *s)
{
    const char *h = s->server->opts.host;
    if (h == NULL || h[0] == '\0' || strcmp(h, "0.0.0.0") == 0)
        h = "127.0.0.1";
    else if (strcmp(h, "::") == 0 || strcmp(h, "[::]") == 0)
        h = "::1";
    bool v6 = strchr(h, ':') != NULL && h[0] != '[';
    snprintf(s->url, sizeof s->url, "nats://%s%s%s:%d", v6 ? "[" : "", h, v6 ? "]" : "",
             s->server->port);
}

natsd_t *
natsd_start(const nd_opts_t *opts)
{
    nd_opts_t dflt;
    if (opts == NULL) {
        nd_opts_defaults(&dflt);
        opts = &dflt;
    }
    natsd_t *s = nd_new(natsd_t);
    char err[1024];
    /* The options' log settings apply to an embedded server too (the binary has set them
     * already; opening the same sink again changes nothing). */
    if (nd_opts_configure_log(opts, err, sizeof err) != 0) {
        nd_log_error("%s", err);
        if (opts == &dflt)
            nd_opts_free(&dflt);
        nd_free(s);
        return NULL;
    }
    if (nd_mqtt_check(opts, err, sizeof err) != 0) {
        nd_log_error("%s", err);
        if (opts == &dflt)
            nd_opts_free(&dflt);
        nd_free(s);
        return NULL;
    }
    if (nd_mon_listen(opts, &s->mon) != 0) {
        /* nats-server does not run without the monitoring port it was asked for. */
        if (opts == &dflt)
            nd_opts_free(&dflt);
        nd_free(s);
        return NULL;
    }
    s->pool = nd_pool_new(opts->workers);
    s->server = nd_server_start(opts, s->pool);
    if (s->server != NULL) {
        nd_reload_init(s->server, opts);
        nd_lameduck_init(s->server);
    }
    if (opts == &dflt)
        nd_opts_free(&dflt);
    bool mqtt_failed = false;
    if (s->server != NULL)
        s->mqtt = nd_mqtt_new(s->server, &mqtt_failed);
    if (mqtt_failed) {
        nd_lameduck_free(s->server);
        nd_reload_free(s->server);
        nd_server_free(s->server);
        s->server = NULL;
    }
    if (s->server == NULL) {
        nd_mon_free(s->mon);
        nd_pool_free(s->pool);
        nd_free(s);
        return NULL;
    }
    nd_mon_attach(s->mon, s->server);
    nd_reload_set_mqtt(s->server, s->mqtt);
    nd_sys_init(s->server); /* hooks set before the first client can connect */
    nd_pool_start(s->pool);
    nd_sys_start(s->server); /* $SYS services and the periodic STATSZ, with a system account */
    s->js = nd_js_start(s->server);
    nd_mqtt_start(s->mqtt);
    nd_server_accept(s->server);
    set_client_url(s);
    atomic_store_explicit(&s->ready, true, memory_order_relaxed);
    return s;
}

void
natsd_stop(natsd_t *s)
{
    if (s == NULL)
        return;
    atomic_store_explicit(&s->ready, false, memory_order_relaxed);
    nd_mon_stop_accepting(s->mon);
    /* The MQTT listener first: its connections start in the global account, which
     * nd_server_stop_accepting lets go (an accept after that had no account to join). */
    nd_mqtt_stop(s->mqtt);
    nd_server_stop_accepting(s->server);
    nd_js_stop(s->js);
    nd_pool_shutdown(s->pool); /* closes every connection, stream and account */
    nd_js_free(s->js);
    nd_mqtt_free(s->mqtt);
    nd_mon_free(s->mon);
    nd_lameduck_free(s->server);
    nd_reload_free(s->server);
    nd_server_free(s->server); /* the poller goes after the connections it served */
    nd_pool_free(s->pool);
    nd_free(s);
}

void
natsd_set_args(natsd_t *s, int argc, char *const *argv)
{
    nd_reload_set_args(s->server, argc, argv);
}

int
natsd_reload(natsd_t *s, const char *config)
{
    return nd_reload_run(s->server, config);
}

bool
natsd_lame_duck(natsd_t *s)
{
    atomic_store_explicit(&s->ready, false, memory_order_relaxed);
    return nd_lameduck_start(s->server);
}

bool
natsd_lame_duck_wait(natsd_t *s, int timeout_ms)
{
    return nd_lameduck_wait(s->server, timeout_ms);
}

int
natsd_port(const natsd_t *s)
{
    return s->server->port;
}

int
natsd_http_port(const natsd_t *s)
{
    return s->mon != NULL ? nd_mon_port(s->mon) : 0;
}

unsigned
natsd_workers(const natsd_t *s)
{
    return nd_pool_workers(s->pool);
}

const char *
natsd_version(void)
{
    return NATSD_VERSION;
}

bool
natsd_ready(natsd_t *s, int timeout_ms)
{
    if (s == NULL)
        return false;
    /* Polled in 5 ms steps: readiness changes only at start and at the start of the end. */
    for (int waited = 0;; waited += 5) {
        if (atomic_load_explicit(&s->ready, memory_order_relaxed))
            return true;
        if (timeout_ms >= 0 && waited >= timeout_ms)
            return false;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
}

const char *
natsd_client_url(const natsd_t *s)
{
    return s->url;
}

/* The embedder's callback and its argument, passed to the log's hook as one pointer. */
typedef struct log_cb {
    natsd_log_fn fn;
    void *arg;
} log_cb_t;

static void
log_trampoline(void *arg, nd_log_level_t level, const char *msg)
{
    const log_cb_t *cb = arg;
    cb->fn(cb->arg, (natsd_log_level_t)level, msg);
}

void
natsd_set_log_callback(natsd_log_fn fn, void *arg)
{
    /* Serialises callers; the old pair is freed once the log's hook (which delivers lines under
     * the log's mutex) no longer points at it. */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static log_cb_t *cur;
    pthread_mutex_lock(&mu);
    log_cb_t *old = cur;
    cur = NULL;
    if (fn != NULL) {
        cur = nd_new(log_cb_t);
        cur->fn = fn;
        cur->arg = arg;
    }
    nd_log_set_hook(cur != NULL ? log_trampoline : NULL, cur);
    nd_free(old);
    pthread_mutex_unlock(&mu);
}

void
natsd_set_log_level(natsd_log_level_t level)
{
    nd_log_set_cap((nd_log_level_t)level);
}
