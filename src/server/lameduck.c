/* Lame duck mode, as nats-server's Server.lameDuckMode does it (server/server.go), run by one
 * actor so that no thread ever sleeps for it:
 *
 *  1. nd_lameduck_start (the signal thread): log "Entering lame duck mode, stop accepting new
 *     clients", set s->ldm (every INFO sent from now on carries "ldm":true), close the listener and
 *     spawn the actor.
 *  2. START: every registered client is told to send its client the INFO with "ldm":true (2.10's
 *     sendLDMToClients; only clients past CONNECT with protocol 1 get it, as nats-server only sends
 *     async INFOs to those). With no client at all, lame duck mode ends at once, as in nats-server.
 *  3. After lame_duck_grace_period: log "Closing existing clients", list the clients again (a
 *     connection accepted just before the listener closed is on the second list) and close them
 *     one by one ("Server Shutdown") spread over lame_duck_duration - grace: an interval
 *     si = (duration - grace) / clients, at most one second, each wait random in [si/2, si);
 *     when si would be under the timer's resolution, clients are closed in batches instead.
 *  4. After the last close: mark lame duck mode done and close the actor. Whoever waits
 *     (nd_lameduck_wait: main's signal loop, or the embedder) then stops the server.
 *
 * The registry (src/net/connreg.h) gives the clients with a reference on each actor, so messages
 * can be sent to them after the list was taken; a client that closed meanwhile discards them.
 */
#include "server/lameduck.h"
#include "net/route.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "net/conn.h"
#include "util/log.h"
#include "net/connreg.h"
#include "actors/alloc.h"
#include "actors/timer.h"

#define MAX_INTERVAL_NS 1000000000ull /* nats-server never waits more than 1 s between closes */

/* The state waiters share with the actor (the actor's memory goes when it closes). */
typedef struct nd_lameduck {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    bool started, done;
} nd_lameduck_t;

enum {
    LDM_MSG_START = ND_MSG_USER_BASE,
    LDM_MSG_TIMER,
};

typedef struct ldm_actor {
    nd_actor_t base;
    /* immutable after spawn */
    nd_server_t *srv;
    nd_lameduck_t *st;
    /* owner only */
    nd_timer_t timer;
    bool closing_phase;       /* the grace period is over */
    nd_conn_info_t **clients; /* the clients to close, each holding a reference on its actor */
    size_t n, next;           /* clients listed, and the next one to close */
    uint64_t si_ns;           /* the interval between closes */
    size_t batch;             /* closes per interval */
} ldm_actor_t;

static uint64_t
ms_ns(int64_t ms)
{
    return ms > 0 ? (uint64_t)ms * 1000000ull : 0;
}

/* Lists the live clients (routes and other kinds would be handled apart, as nats-server does).
 * Returns: their count; *out holds only clients. */
static size_t
list_clients(nd_ctx_t *ctx, nd_server_t *s, nd_conn_info_t ***out)
{
    nd_conn_info_t **all = NULL;
    size_t n = nd_connreg_live(s->connreg, 0, &all), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i]->kind == ND_CONN_CLIENT)
            all[k++] = all[i];
        else
            nd_conn_info_unref(ctx, all[i]);
    }
    *out = all;
    return k;
}

static void
mark_done(nd_lameduck_t *st)
{
    pthread_mutex_lock(&st->mu);
    st->done = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static void
release_clients(nd_ctx_t *ctx, ldm_actor_t *a)
{
    if (a->clients != NULL)
        nd_connreg_release_all(ctx, a->clients, a->n);
    a->clients = NULL;
    a->n = a->next = 0;
}

static void
finish(nd_ctx_t *ctx, ldm_actor_t *a)
{
    release_clients(ctx, a);
    mark_done(a->st);
    nd_actor_close(ctx, &a->base);
}

static void
on_start(nd_ctx_t *ctx, ldm_actor_t *a)
{
    nd_server_t *s = a->srv;
    if (s->routes != NULL)
        nd_routes_send_ldm(ctx, s->routes); /* members drop our client URLs */
    nd_conn_info_t **clients = NULL;
    size_t n = list_clients(ctx, s, &clients);
    for (size_t i = 0; i < n; i++)
        nd_conn_send_ldm(ctx, clients[i]->actor);
    nd_connreg_release_all(ctx, clients, n);
    if (n == 0) {
        finish(ctx, a);
        return;
    }
    int64_t grace = s->opts.lame_duck_grace_period_ms;
    if (grace < 0) /* nats-server's tests use a negative grace to pass validation; flip it */
        grace = -grace;
    nd_timer_start(ctx, &a->timer, ms_ns(grace), 0);
}

/* Closes the next client (or batch), then waits or finishes. */
static void
close_next(nd_ctx_t *ctx, ldm_actor_t *a)
{
    while (a->next < a->n) {
        size_t i = a->next++;
        nd_conn_send_shutdown(ctx, a->clients[i]->actor);
        if (a->next == a->n)
            break;
        if (a->batch <= 1 || i % a->batch == 0) {
            uint64_t v = nd_ctx_rand(ctx) % a->si_ns;
            if (v < a->si_ns / 2)
                v = a->si_ns / 2;
            nd_timer_start(ctx, &a->timer, v > 0 ? v : 1, 0);
            return;
        }
    }
    finish(ctx, a);
}

static void
on_grace_over(nd_ctx_t *ctx, ldm_actor_t *a)
{
    nd_server_t *s = a->srv;
    a->closing_phase = true;
    a->n = list_clients(ctx, s, &a->clients);
    a->next = 0;
    nd_log_info("Closing existing clients");
    if (a->n == 0) {
        finish(ctx, a);
        return;
    }
    int64_t grace = s->opts.lame_duck_grace_period_ms;
    int64_t duration = s->opts.lame_duck_duration_ms;
    if (grace < 0)
        grace = -grace;
    if (duration <= 0)
        duration = ND_DEFAULT_LAME_DUCK_DURATION_MS;
    int64_t dur_ms = duration - grace;
    uint64_t dur = dur_ms > 0 ? ms_ns(dur_ms) : 1000000000ull;
    a->batch = 1;
    a->si_ns = dur / a->n;
    if (a->si_ns < 1) {
        a->si_ns = 1;
        a->batch = (size_t)(a->n / dur);
    } else if (a->si_ns > MAX_INTERVAL_NS) {
        a->si_ns = MAX_INTERVAL_NS;
    }
    close_next(ctx, a);
}

static void
dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    ldm_actor_t *a = (ldm_actor_t *)self;
    switch (msg->id) {
    case LDM_MSG_START:
        on_start(ctx, a);
        return;
    case LDM_MSG_TIMER:
        if (!nd_timer_fired(&a->timer, msg))
            return;
        if (a->closing_phase)
            close_next(ctx, a);
        else
            on_grace_over(ctx, a);
        return;
    default:
        nd_fatal("lameduck: unknown message id %u", msg->id);
    }
}

static void
on_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    ldm_actor_t *a = (ldm_actor_t *)self;
    nd_timer_cancel(ctx, &a->timer);
    release_clients(ctx, a);
    mark_done(a->st); /* closed by the pool's shutdown before it finished: nobody waits longer */
}

static const nd_actor_type_t ldm_type = {
    .name = "lameduck",
    .size = sizeof(ldm_actor_t),
    .dispatch = dispatch,
    .final = on_final,
};

void
nd_lameduck_init(nd_server_t *s)
{
    nd_lameduck_t *st = nd_new(nd_lameduck_t);
    pthread_mutex_init(&st->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&st->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->lameduck = st;
}

bool
nd_lameduck_start(nd_server_t *s)
{
    nd_lameduck_t *st = s->lameduck;
    pthread_mutex_lock(&st->mu);
    bool already = st->started;
    st->started = true;
    pthread_mutex_unlock(&st->mu);
    if (already)
        return false;
    nd_log_info("Entering lame duck mode, stop accepting new clients");
    /* Before the clients are listed (by the actor, after the send below): see on_start in
     * conn.c for why a connection then either is on the list or sees the flag. */
    atomic_store_explicit(&s->ldm, true, memory_order_relaxed);
    nd_server_stop_listening(s);
    nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
    ldm_actor_t *a = (ldm_actor_t *)nd_actor_spawn(ctx, &ldm_type);
    a->srv = s;
    a->st = st;
    nd_timer_init(&a->timer, &a->base, LDM_MSG_TIMER);
    nd_actor_send(ctx, &a->base, nd_msg_new(ctx, sizeof(nd_msg_t), LDM_MSG_START));
    nd_actor_unref(ctx, &a->base); /* it lives until it closes itself or the pool shuts down */
    nd_ctx_external_free(ctx);
    return true;
}

bool
nd_lameduck_wait(nd_server_t *s, int timeout_ms)
{
    nd_lameduck_t *st = s->lameduck;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&st->mu);
    while (st->started && !st->done && timeout_ms != 0) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&st->cv, &st->mu);
        } else if (pthread_cond_timedwait(&st->cv, &st->mu, &until) == ETIMEDOUT) {
            break;
        }
    }
    bool done = st->done;
    pthread_mutex_unlock(&st->mu);
    return done;
}

void
nd_lameduck_free(nd_server_t *s)
{
    nd_lameduck_t *st = s->lameduck;
    if (st == NULL)
        return;
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    nd_free(st);
    s->lameduck = NULL;
}
