/* The route dialer: one thread that solicits routes (nats-server's connectToRoute and
 * reConnectToRoute), so name resolution and connect timeouts never block a worker.
 *
 * A job is one URL to solicit. Explicit jobs (the configured routes) are retried forever, every
 * second; implicit ones (members learned through gossip) connect_retries times. A job whose
 * connection is up is "active" and waits; when the connection closes (nd_route_dial_closed) it
 * reconnects after a second, unless it reached ourselves (then it stops), the same server is
 * connected another way (an explicit job re-checks that every few seconds and dials again once
 * that route is gone; an implicit one stops), or it was implicit.
 * Resolution picks a random address among those a name resolves to (a Kubernetes headless
 * service names several pods), leaving out our own addresses on our route port (nats-server's
 * routesToSelf), so a seed list that names every pod, this one included, just works.
 * Failures are logged as nats-server does: the first attempt and every 3600th of a route never
 * connected (connect_error_reports), every attempt of one that was (reconnect_error_reports),
 * at debug level otherwise.
 */
#include "net/route_int.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "actors/ctx.h"
#include "net/dial_int.h"
#include "util/log.h"

#define RETRY_NS        1000000000ll  /* nats-server's routeConnectDelay */
#define PARKED_CHECK_NS 3000000000ll  /* an explicit job parked behind another route */
#define DIAL_TIMEOUT_MS 2000          /* DEFAULT_ROUTE_DIAL */
#define CONNECT_ERROR_REPORTS 3600

struct nd_route_job {
    struct nd_route_job *next;
    char *url;
    char host[256];
    int port;
    nd_route_job_cred_t cred;
    bool explicit_route;
    bool active;    /* dialing, or its connection is up */
    bool done;      /* never again */
    bool parked;    /* explicit, waiting while remote_id is connected another way */
    bool connected_once;
    int attempts;
    int64_t due_ns;
    char remote_id[64];
};

struct nd_route_dialer {
    nd_server_t *srv;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    nd_route_job_t *jobs;
    char (*self_ips)[48];
    size_t nself;
};

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int
nd_route_url_parse(const char *url, char *host, size_t hcap, int *port, char *user, size_t ucap,
                   char *pass, size_t pcap)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *end = p + strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@')
            at = q;
    if (user != NULL)
        user[0] = '\0';
    if (pass != NULL)
        pass[0] = '\0';
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t ul = colon ? (size_t)(colon - p) : (size_t)(at - p);
        if (user != NULL)
            snprintf(user, ucap, "%.*s", (int)ul, p);
        if (colon != NULL && pass != NULL)
            snprintf(pass, pcap, "%.*s", (int)(at - colon - 1), colon + 1);
        p = at + 1;
    }
    const char *hs = p, *he;
    const char *ps = NULL;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (rb == NULL)
            return -1;
        hs = p + 1;
        he = rb;
        if (rb + 1 < end && rb[1] == ':')
            ps = rb + 2;
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        he = colon ? colon : end;
        if (colon != NULL)
            ps = colon + 1;
    }
    if (he <= hs || (size_t)(he - hs) >= hcap)
        return -1;
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    *port = 6222;
    if (ps != NULL && ps < end) {
        char *e;
        long v = strtol(ps, &e, 10);
        if (e != end || v <= 0 || v > 65535)
            return -1;
        *port = (int)v;
    }
    return 0;
}

int
nd_route_url_hostport(const char *url, char *host, size_t hcap, int *port)
{
    return nd_route_url_parse(url, host, hcap, port, NULL, 0, NULL, 0);
}

void
nd_route_job_creds(const nd_route_job_t *job, nd_route_job_cred_t *out)
{
    if (job != NULL)
        *out = job->cred;
}

void
nd_route_job_learned(nd_route_dialer_t *d, nd_route_job_t *job, const char *remote_id)
{
    pthread_mutex_lock(&d->mu);
    snprintf(job->remote_id, sizeof job->remote_id, "%s", remote_id);
    job->connected_once = true;
    job->attempts = 0;
    pthread_mutex_unlock(&d->mu);
}

/* Our own addresses, to leave out on our route port. */
static void
load_self(nd_route_dialer_t *d)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr == NULL)
            continue;
        char ip[48];
        if (i->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof ip);
        else if (i->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, ip, sizeof ip);
        else
            continue;
        d->self_ips = nd_xrealloc(d->self_ips, (d->nself + 1) * sizeof(*d->self_ips));
        memcpy(d->self_ips[d->nself++], ip, sizeof ip);
    }
    freeifaddrs(ifs);
}

static bool
is_self(const nd_route_dialer_t *d, const struct sockaddr *sa)
{
    char ip[48];
    int port;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof ip);
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    if (port != d->srv->routes->port)
        return false;
    for (size_t i = 0; i < d->nself; i++)
        if (strcmp(d->self_ips[i], ip) == 0)
            return true;
    return false;
}

/* Connects to job's host with a timeout. Returns: the connected non-blocking socket, -1 with
 * the error text in err, or -2 when every address is our own. */
static int
dial(nd_route_dialer_t *d, const nd_route_job_t *job, char *err, size_t ecap)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[8];
    snprintf(port, sizeof port, "%d", job->port);
    int rc = getaddrinfo(job->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, ecap, "lookup %s: %s", job->host, gai_strerror(rc));
        return -1;
    }
    struct addrinfo *cand[64];
    size_t n = 0;
    for (struct addrinfo *a = res; a != NULL && n < 64; a = a->ai_next)
        if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && !is_self(d, a->ai_addr))
            cand[n++] = a;
    if (n == 0) {
        freeaddrinfo(res);
        return -2;
    }
    struct addrinfo *a = cand[(size_t)rand() % n];
    char ip[48];
    if (a->ai_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)a->ai_addr)->sin_addr, ip, sizeof ip);
    else
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, ip, sizeof ip);
    nd_log_debug("Trying to connect to route on %s:%d (%s:%d)", job->host, job->port, ip,
                 job->port);
    int fd = nd_dial_connect(a->ai_addr, a->ai_addrlen, DIAL_TIMEOUT_MS, ip, job->port, err, ecap);
    freeaddrinfo(res);
    return fd;
}

static void *
dialer_main(void *arg)
{
    nd_route_dialer_t *d = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(d->srv->pool);
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        int64_t now = now_ns(), next = now + 3600ll * 1000000000ll;
        nd_route_job_t *job = NULL;
        for (nd_route_job_t *j = d->jobs; j != NULL; j = j->next) {
            if (j->done || j->active)
                continue;
            if (j->parked && j->due_ns <= now) {
                /* Parked behind a route that another connection made: dial once it is gone. */
                if (nd_routes_connected(d->srv->routes, j->remote_id))
                    j->due_ns = now + PARKED_CHECK_NS;
                else
                    j->parked = false;
            }
            if (!j->parked && j->due_ns <= now) {
                job = j;
                break;
            }
            if (j->due_ns < next)
                next = j->due_ns;
        }
        if (job == NULL) {
            nd_dial_wait(&d->cv, &d->mu, next - now);
            continue;
        }
        job->active = true;
        pthread_mutex_unlock(&d->mu);
        char err[320];
        int fd = dial(d, job, err, sizeof err);
        pthread_mutex_lock(&d->mu);
        if (d->stop) {
            if (fd >= 0)
                close(fd);
            job->active = false;
            break;
        }
        if (fd >= 0) {
            nd_route_spawn(ctx, d->srv, fd, job, job->url); /* active until it closes */
            continue;
        }
        job->active = false;
        if (fd == -2) { /* only ourselves behind that name */
            nd_log_debug("Detected route to self, ignoring \"%s\"", job->url);
            job->done = true;
            continue;
        }
        job->attempts++;
        bool report = job->connected_once ? true
                                          : job->attempts == 1 ||
                                                job->attempts % CONNECT_ERROR_REPORTS == 0;
        if (report)
            nd_log_error("Error trying to connect to route (attempt %d): %s", job->attempts,
                         err);
        else
            nd_log_debug("Error trying to connect to route (attempt %d): %s", job->attempts,
                         err);
        int retries = d->srv->routes->cfg.connect_retries;
        if (!job->explicit_route && (retries <= 0 || job->attempts > retries)) {
            job->done = true;
            continue;
        }
        job->due_ns = now_ns() + RETRY_NS;
    }
    pthread_mutex_unlock(&d->mu);
    nd_ctx_external_free(ctx);
    return NULL;
}

nd_route_dialer_t *
nd_route_dialer_new(nd_server_t *srv)
{
    nd_route_dialer_t *d = nd_new(nd_route_dialer_t);
    d->srv = srv;
    pthread_mutex_init(&d->mu, NULL);
    nd_dial_cond_init(&d->cv);
    load_self(d);
    if (pthread_create(&d->th, NULL, dialer_main, d) != 0)
        nd_fatal("route: cannot start the dialer thread");
    d->started = true;
    return d;
}

void
nd_route_dial(nd_route_dialer_t *d, const char *url, bool explicit_route)
{
    pthread_mutex_lock(&d->mu);
    for (nd_route_job_t *j = d->jobs; j != NULL; j = j->next) {
        if (strcmp(j->url, url) != 0)
            continue;
        if (j->done && !j->active && !explicit_route) { /* an implicit job may start again */
            j->done = false;
            j->attempts = 0;
            j->due_ns = now_ns();
            pthread_cond_signal(&d->cv);
        }
        pthread_mutex_unlock(&d->mu);
        return;
    }
    nd_route_job_t *j = nd_new(nd_route_job_t);
    j->url = nd_xstrdup(url);
    if (nd_route_url_parse(url, j->host, sizeof j->host, &j->port, j->cred.user,
                           sizeof j->cred.user, j->cred.pass, sizeof j->cred.pass) < 0) {
        nd_log_error("Error parsing route URL \"%s\"", url);
        j->done = true;
    }
    j->explicit_route = explicit_route;
    j->due_ns = now_ns();
    j->next = d->jobs;
    d->jobs = j;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

void
nd_route_dial_remove(nd_route_dialer_t *d, const char *url)
{
    pthread_mutex_lock(&d->mu);
    for (nd_route_job_t *j = d->jobs; j != NULL; j = j->next)
        if (strcmp(j->url, url) == 0) {
            j->done = true;
            j->explicit_route = false;
        }
    pthread_mutex_unlock(&d->mu);
}

void
nd_route_dial_closed(nd_route_dialer_t *d, nd_route_job_t *job, const char *remote_id, bool self)
{
    pthread_mutex_lock(&d->mu);
    job->active = false;
    if (d->stop) {
        job->done = true;
    } else if (self) {
        nd_log_debug("Detected route to self, ignoring \"%s\"", job->url);
        job->done = true;
    } else if (remote_id[0] != '\0' && nd_routes_connected(d->srv->routes, remote_id)) {
        nd_log_debug("Not attempting reconnect for solicited route, already connected to \"%s\"",
                     remote_id);
        if (job->explicit_route) {
            job->parked = true;
            job->due_ns = now_ns() + PARKED_CHECK_NS;
        } else {
            job->done = true;
        }
    } else if (job->explicit_route) {
        nd_log_debug("Attempting reconnect for solicited route \"%s\"", job->url);
        job->due_ns = now_ns() + RETRY_NS;
    } else {
        job->done = true;
    }
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

void
nd_route_dialer_stop(nd_route_dialer_t *d)
{
    if (d == NULL || !d->started)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->th, NULL);
    d->started = false;
}

void
nd_route_dialer_free(nd_route_dialer_t *d)
{
    if (d == NULL)
        return;
    nd_route_dialer_stop(d);
    while (d->jobs != NULL) {
        nd_route_job_t *j = d->jobs;
        d->jobs = j->next;
        nd_free(j->url);
        nd_free(j);
    }
    nd_free(d->self_ips);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    nd_free(d);
}
