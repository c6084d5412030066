/* natsd embedding API; see include/natsd/natsd.h. */
#include "natsd/natsd.h"

#include "natsd/alloc.h"
#include "natsd/pool.h"
#include "net/server.h"

struct natsd {
    nd_pool_t *pool;
    nd_server_t *server;
};

natsd_t *
natsd_start(const nd_opts_t *opts)
{
    nd_opts_t dflt;
    if (opts == NULL) {
        nd_opts_defaults(&dflt);
        opts = &dflt;
    }
    natsd_t *s = nd_new(natsd_t);
    s->pool = nd_pool_new(opts->workers);
    s->server = nd_server_start(opts, s->pool);
    if (opts == &dflt)
        nd_opts_free(&dflt);
    if (s->server == NULL) {
        nd_pool_free(s->pool);
        nd_free(s);
        return NULL;
    }
    nd_pool_start(s->pool);
    return s;
}

void
natsd_stop(natsd_t *s)
{
    if (s == NULL)
        return;
    nd_server_stop_accepting(s->server);
    nd_pool_shutdown(s->pool); /* closes every connection and account */
    nd_server_free(s->server);  /* the poller goes after the connections it served */
    nd_pool_free(s->pool);
    nd_free(s);
}

int
natsd_port(const natsd_t *s)
{
    return s->server->port;
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
