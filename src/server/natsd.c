/* natsd embedding API; see include/natsd/natsd.h. */
#include "cfg/opts.h"
#include "natsd/natsd.h"

#include <stdio.h>

#include "actors/alloc.h"
#include "actors/pool.h"
#include "cfg/opts_parse.h"
#include "js/js.h"
#include "mon/monitor.h"
#include "mon/sysevents.h"
#include "server/lameduck.h"
#include "server/reload.h"
#include "net/server.h"

struct natsd {
    nd_pool_t *pool;
    nd_server_t *server;
    nd_mon_t *mon; /* HTTP monitoring, or NULL when off */
    nd_js_t *js;   /* JetStream, or NULL when off */
};

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

natsd_t *
natsd_start(const nd_opts_t *opts)
{
    nd_opts_t dflt;
    if (opts == NULL) {
        nd_opts_defaults(&dflt);
        opts = &dflt;
    }
    natsd_t *s = nd_new(natsd_t);
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
    if (s->server == NULL) {
        nd_mon_free(s->mon);
        nd_pool_free(s->pool);
        nd_free(s);
        return NULL;
    }
    nd_mon_attach(s->mon, s->server);
    nd_sys_init(s->server); /* hooks set before the first client can connect */
    nd_pool_start(s->pool);
    nd_sys_start(s->server); /* $SYS services and the periodic STATSZ, with a system account */
    s->js = nd_js_start(s->server);
    nd_server_accept(s->server);
    return s;
}

void
natsd_stop(natsd_t *s)
{
    if (s == NULL)
        return;
    nd_mon_stop_accepting(s->mon);
    nd_server_stop_accepting(s->server);
    nd_js_stop(s->js);
    nd_pool_shutdown(s->pool); /* closes every connection, stream and account */
    nd_js_free(s->js);
    nd_mon_free(s->mon);
    nd_lameduck_free(s->server);
    nd_reload_free(s->server);
    nd_server_free(s->server);  /* the poller goes after the connections it served */
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
