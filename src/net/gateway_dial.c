/* The gateway dialer: one thread that solicits the remote gateways (nats-server's
 * solicitGateway and reconnectGateway), so name resolution and connect timeouts never block a
 * worker.
 *
 * Each remote (nd_gw_remote_t, in the gateway table) is dialed while it has no connection: its
 * URLs in turn (the configured ones, then those its servers' INFO gave), one attempt a second.
 * A configured remote is retried forever; an implicit one connect_retries times after a failure
 * (then it is done until it is heard of again). Failures are logged at error level on the first
 * attempt and every 3600th, at debug level otherwise. The dialer shares the table's mutex and
 * waits on its condition variable.
 */
#include "net/gateway_int.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/dial_int.h"
#include "net/route_int.h"
#include "util/log.h"

#define GW_RECONNECT_NS    1000000000ll /* nats-server's gateway reconnect delay */
#define GW_DIAL_TIMEOUT_MS 2000

int64_t
nd_gw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Connects to url with a timeout. Returns: the connected non-blocking socket, or -1 with the
 * error text in err. */
static int
dial(const char *url, char *err, size_t ecap)
{
    char host[256];
    int p;
    if (nd_route_url_hostport(url, host, sizeof host, &p) != 0) {
        snprintf(err, ecap, "invalid URL %.200s", url);
        return -1;
    }
    return nd_dial_tcp(host, p, GW_DIAL_TIMEOUT_MS, err, ecap);
}

void
nd_gw_spawn(nd_ctx_t *ctx, nd_server_t *s, int fd, nd_gw_remote_t *r, const char *url)
{
    nd_gw_t *gw = nd_new(nd_gw_t);
    gw->remote = r;
    int port;
    if (url != NULL) {
        snprintf(gw->url, sizeof gw->url, "%s", url);
        if (nd_route_url_hostport(url, gw->host, sizeof gw->host, &port) != 0)
            gw->host[0] = '\0';
    }
    nd_conn_spawn_gateway(ctx, s, fd, gw);
}

void *
nd_gw_dialer_main(void *arg)
{
    nd_gateways_t *g = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(g->srv->pool);
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        int64_t now = nd_gw_now_ns(), next = now + 3600ll * 1000000000ll;
        nd_gw_remote_t *r = NULL;
        for (size_t i = 0; i < g->nremotes; i++) {
            nd_gw_remote_t *x = g->remotes[i];
            if (x->active || x->done || x->urls.n == 0)
                continue;
            if (x->due_ns <= now) {
                r = x;
                break;
            }
            if (x->due_ns < next)
                next = x->due_ns;
        }
        if (r == NULL) {
            nd_dial_wait(&g->cv, &g->mu, next - now);
            continue;
        }
        char url[512];
        snprintf(url, sizeof url, "%s", r->urls.v[r->next++ % r->urls.n]);
        r->active = true;
        pthread_mutex_unlock(&g->mu);
        char err[320];
        nd_log_debug("Connecting to explicit gateway \"%s\" (%s) at %s", r->name, url, url);
        int fd = dial(url, err, sizeof err);
        pthread_mutex_lock(&g->mu);
        if (g->stop) {
            if (fd >= 0)
                close(fd);
            break;
        }
        if (fd >= 0) {
            nd_gw_spawn(ctx, g->srv, fd, r, url); /* active until it closes */
            continue;
        }
        r->active = false;
        r->attempts++;
        if (r->attempts == 1 || r->attempts % 3600 == 0)
            nd_log_error("Error connecting to %s gateway \"%s\" (attempt %d): %s",
                         r->implicit ? "implicit" : "explicit", r->name, r->attempts, err);
        else
            nd_log_debug("Error connecting to %s gateway \"%s\" (attempt %d): %s",
                         r->implicit ? "implicit" : "explicit", r->name, r->attempts, err);
        if (r->implicit && r->attempts > g->o->connect_retries)
            r->done = true;
        r->due_ns = nd_gw_now_ns() + GW_RECONNECT_NS;
    }
    pthread_mutex_unlock(&g->mu);
    nd_ctx_external_free(ctx);
    return NULL;
}

void
nd_gw_dial_closed(nd_gateways_t *g, nd_gw_remote_t *r)
{
    pthread_mutex_lock(&g->mu);
    r->active = false;
    r->due_ns = nd_gw_now_ns() + GW_RECONNECT_NS;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}
