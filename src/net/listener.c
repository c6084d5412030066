/* Listening ports; see listener.h for the contract.
 *
 * The listener actor owns the accept loop. Its socket is registered edge-triggered, so the loop
 * must run to EAGAIN, or be continued by the actor itself: by nd_io_again after a long burst (other
 * actors on this worker get their turn), or by the back-off timer after a resource error. Between
 * a resource error and the timer's message the actor ignores readiness: a new connection cannot
 * be accepted without a descriptor anyway, and accepting again right away is what would spin.
 */
#include "net/listener.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "actors/timer.h"
#include "net/transport.h"
#include "util/log.h"

#define ACCEPT_MIN_SLEEP_NS      10000000ull   /* nats-server's ACCEPT_MIN_SLEEP, 10 ms */
#define ACCEPT_MAX_SLEEP_NS      1000000000ull /* nats-server's ACCEPT_MAX_SLEEP, 1 s */
#define HTTP_ACCEPT_MIN_SLEEP_NS 5000000ull    /* Go's net/http Server.Serve starts at 5 ms */
#define ACCEPT_BURST             256           /* accepts per turn before yielding */

enum {
    LISTEN_MSG_IO = ND_MSG_USER_BASE, /* the socket is readable (embedded in io) */
    LISTEN_MSG_RESUME,                /* the back-off timer fired */
};

typedef struct listen_actor listen_actor_t;

struct nd_listener {
    /* immutable after bind */
    char *host;         /* as declared, NULL when none was given */
    char *ready_suffix; /* NULL: none */
    const char *what, *ready, *accept_name;
    nd_listener_errlog_t errlog;
    nd_listener_accept_fn *on_accept;
    void *arg;
    int port;
    /* the starting and stopping thread */
    int fd; /* -1 once handed to the poller's removal or closed */
    nd_pool_t *pool;
    listen_actor_t *actor; /* a reference; NULL before start and after stop */
    /* any thread, atomic */
    _Atomic uint64_t backoffs, accepted;
};

struct listen_actor {
    nd_actor_t base;
    /* immutable after start. l is not used after the actor closed, which stop waits for. */
    nd_listener_t *l;
    nd_poller_t *poller;
    nd_io_t io;
    nd_timer_t timer;
    /* owner actor only */
    uint64_t delay_ns; /* the next back-off */
    bool waiting;      /* the back-off timer is armed: readiness is ignored until it fires */
};

static uint64_t
min_delay(const nd_listener_t *l)
{
    return l->errlog == ND_LISTENER_ERRLOG_HTTP ? HTTP_ACCEPT_MIN_SLEEP_NS : ACCEPT_MIN_SLEEP_NS;
}

/* Go's %v of the accept error: "accept tcp 0.0.0.0:4222: accept4: too many open files" (Go's
 * errno texts are glibc's with a lower-case first letter). */
static void
format_error(const nd_listener_t *l, int err, char *out, size_t outlen)
{
    char text[128];
    snprintf(text, sizeof text, "%s", strerror(err));
    text[0] = (char)tolower((unsigned char)text[0]);
    const char *host = l->host != NULL && *l->host ? l->host : "0.0.0.0";
    bool v6 = strchr(host, ':') != NULL;
    snprintf(out, outlen, "accept tcp %s%s%s:%d: accept4: %s", v6 ? "[" : "", host, v6 ? "]" : "",
             l->port, text);
}

/* Go prints a time.Duration of whole milliseconds as "5ms", and one second as "1s". */
static void
format_delay(uint64_t ns, char out[32])
{
    uint64_t ms = ns / 1000000ull;
    if (ms >= 1000 && ms % 1000 == 0)
        snprintf(out, 32, "%llus", (unsigned long long)(ms / 1000));
    else
        snprintf(out, 32, "%llums", (unsigned long long)ms);
}

static void
log_error(const nd_listener_t *l, int err, bool temporary, uint64_t delay_ns)
{
    char text[256];
    format_error(l, err, text, sizeof text);
    if (l->errlog == ND_LISTENER_ERRLOG_HTTP) {
        char d[32];
        format_delay(delay_ns, d);
        if (temporary)
            nd_log_error("%sAccept error: %s; retrying in %s", l->accept_name, text, d);
        else
            nd_log_error("%sAccept error: %s", l->accept_name, text);
    } else if (temporary) {
        nd_log_error("Temporary %s Accept Error(%s), sleeping %llums", l->accept_name, text,
                     (unsigned long long)(delay_ns / 1000000ull));
    } else {
        nd_log_error("%s Accept error: %s", l->accept_name, text);
    }
}

/* Out of descriptors or memory: stop accepting until the timer's message. */
static void
back_off(nd_ctx_t *ctx, listen_actor_t *a, int err)
{
    nd_listener_t *l = a->l;
    atomic_fetch_add_explicit(&l->backoffs, 1, memory_order_relaxed);
    log_error(l, err, true, a->delay_ns);
    a->waiting = true;
    nd_timer_start(ctx, &a->timer, a->delay_ns, 0);
    a->delay_ns *= 2;
    if (a->delay_ns > ACCEPT_MAX_SLEEP_NS)
        a->delay_ns = ACCEPT_MAX_SLEEP_NS;
}

static void
accept_ready(nd_ctx_t *ctx, listen_actor_t *a)
{
    nd_listener_t *l = a->l;
    for (int n = 0;; n++) {
        if (n == ACCEPT_BURST) {
            nd_io_again(ctx, &a->io, ND_IO_READ); /* continue in a later turn */
            return;
        }
        int fd = accept4(a->io.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            a->delay_ns = min_delay(l);
            atomic_fetch_add_explicit(&l->accepted, 1, memory_order_relaxed);
            l->on_accept(ctx, fd, l->arg);
            continue;
        }
        int err = errno;
        switch (err) {
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
            return;
        case EINTR:
        case ECONNABORTED:
            continue;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
            back_off(ctx, a, err);
            return;
        case EBADF:
        case EFAULT:
        case EINVAL:
        case ENOTSOCK:
            /* Not a listening socket any more: retrying cannot help. */
            log_error(l, err, false, 0);
            return;
        default:
            /* accept(2): a pending network error of one connection (EPROTO, EPERM, ENETDOWN...)
             * is reported by accept; that connection is gone, the next may be fine. */
            log_error(l, err, false, 0);
            continue;
        }
    }
}

static void
on_io(nd_ctx_t *ctx, listen_actor_t *a)
{
    nd_io_take(&a->io);
    if (!a->waiting)
        accept_ready(ctx, a);
}

static void
on_resume(nd_ctx_t *ctx, listen_actor_t *a, const nd_msg_t *msg)
{
    if (!nd_timer_fired(&a->timer, msg))
        return;
    a->waiting = false;
    /* No edge comes for connections that queued meanwhile: look for them now. */
    accept_ready(ctx, a);
}

static void
listen_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    listen_actor_t *a = (listen_actor_t *)self;
    switch (msg->id) {
    case LISTEN_MSG_IO:
        on_io(ctx, a);
        break;
    case LISTEN_MSG_RESUME:
        on_resume(ctx, a, msg);
        break;
    }
}

static void
listen_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    listen_actor_t *a = (listen_actor_t *)self;
    nd_timer_cancel(ctx, &a->timer);
    /* The poller closes the socket, then sets io.removed (what nd_listener_stop waits for). */
    nd_poller_remove(a->poller, &a->io);
}

static const nd_actor_type_t listen_type = {
    .name = "listener",
    .size = sizeof(listen_actor_t),
    .dispatch = listen_dispatch,
    .final = listen_final,
};

nd_listener_t *
nd_listener_bind(const nd_listener_decl_t *d)
{
    const char *host = d->host != NULL && *d->host ? d->host : "0.0.0.0";
    int port;
    int fd = nd_tcp_listen(host, d->port, d->backlog, d->what, &port);
    if (fd < 0)
        return NULL;
    nd_listener_t *l = nd_new(nd_listener_t);
    l->host = d->host != NULL ? nd_xstrdup(d->host) : NULL;
    l->ready_suffix = d->ready_suffix != NULL ? nd_xstrdup(d->ready_suffix) : NULL;
    l->what = d->what;
    l->ready = d->ready;
    l->accept_name = d->accept_name;
    l->errlog = d->errlog;
    l->on_accept = d->on_accept;
    l->arg = d->arg;
    l->fd = fd;
    l->port = port;
    atomic_init(&l->backoffs, 0);
    atomic_init(&l->accepted, 0);
    return l;
}

void
nd_listener_log_ready(const nd_listener_t *l)
{
    nd_log_info("%s %s:%d%s", l->ready, l->host != NULL ? l->host : "0.0.0.0", l->port,
                l->ready_suffix != NULL ? l->ready_suffix : "");
}

void
nd_listener_start(nd_listener_t *l, nd_pool_t *pool, nd_poller_t *poller)
{
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    listen_actor_t *a = (listen_actor_t *)nd_actor_spawn(ctx, &listen_type);
    a->l = l;
    a->poller = poller;
    a->delay_ns = min_delay(l);
    nd_timer_init(&a->timer, &a->base, LISTEN_MSG_RESUME);
    l->pool = pool;
    l->actor = a; /* the spawn's reference */
    /* The registration takes the poller's own reference. Connections already queued are
     * reported at once (epoll checks readiness when a socket is added). */
    int err = nd_poller_add(poller, &a->io, l->fd, &a->base, LISTEN_MSG_IO);
    if (err != 0)
        nd_fatal("cannot register the listener on %s: %s", l->what, strerror(err));
    nd_ctx_external_free(ctx);
}

void
nd_listener_stop(nd_listener_t *l)
{
    if (l == NULL)
        return;
    listen_actor_t *a = l->actor;
    if (a == NULL) {
        if (l->fd >= 0)
            close(l->fd); /* never handed to the poller */
        l->fd = -1;
        return;
    }
    nd_ctx_t *ctx = nd_ctx_external_new(l->pool);
    nd_actor_close(ctx, &a->base);
    /* Wait until no accept can run any more: the actor's final() ran (no turn follows it) and
     * asked the poller to remove the socket, which closed it. acquire: pairs with the poller's
     * release store in apply_removals. Our reference keeps io readable until the unref. */
    while (!atomic_load_explicit(&a->io.removed, memory_order_acquire))
        usleep(1000);
    nd_actor_unref(ctx, &a->base);
    nd_ctx_external_free(ctx);
    l->actor = NULL;
    l->fd = -1;
}

void
nd_listener_free(nd_listener_t *l)
{
    if (l == NULL)
        return;
    nd_listener_stop(l);
    nd_free(l->host);
    nd_free(l->ready_suffix);
    nd_free(l);
}

int
nd_listener_port(const nd_listener_t *l)
{
    return l->port;
}

uint64_t
nd_listener_backoffs(const nd_listener_t *l)
{
    return atomic_load_explicit(&l->backoffs, memory_order_relaxed);
}

uint64_t
nd_listener_accepted(const nd_listener_t *l)
{
    return atomic_load_explicit(&l->accepted, memory_order_relaxed);
}
