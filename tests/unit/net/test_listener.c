/* Unit tests for net/listener.h: binding and the ready line, accepting, stop (no accept after it
 * returns), and the back-off when the process is out of descriptors.
 *
 * The back-off tests lower RLIMIT_NOFILE in this (forked) test process and fill every descriptor
 * slot, then connect: the kernel completes the handshakes, the listener's accept4 fails with
 * EMFILE. They check that the listener logs nats-server's text with delays that double (10, 20,
 * 40 ms: each retry came from the timer, not from a loop), that no worker thread ever sleeps
 * (usleep and nanosleep are interposed below and count calls made on the pool's one worker), that
 * the worker keeps running other actors meanwhile, and that once descriptors are freed every
 * waiting connection is accepted and served.
 *
 * Nothing here asserts on how long something took; waits have a 10 s hang guard (test_wait.h).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "actors/pool.h"
#include "net/listener.h"
#include "net/poller.h"
#include "util/log.h"
#include "../actors/test_wait.h"

#define MAX_CONNS 16

/* ---- sleeps on the worker: interposed (the static libnd_core resolves to these) ---- */

static pthread_t worker_thread;
static _Atomic bool worker_known;
static _Atomic int worker_sleeps;

static void
note_sleep(void)
{
    if (atomic_load(&worker_known) && pthread_equal(pthread_self(), worker_thread))
        atomic_fetch_add(&worker_sleeps, 1);
}

int
usleep(useconds_t us)
{
    note_sleep();
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
    return 0;
}

int
nanosleep(const struct timespec *req, struct timespec *rem)
{
    note_sleep();
    int r = clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
    if (r != 0) {
        errno = r;
        return -1;
    }
    return 0;
}

/* ---- a ping actor: learns which thread the worker is, and shows the worker is free ---- */

enum { MSG_PING = ND_MSG_USER_BASE };

static sem_t pong;

static void
ping_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    (void)ctx, (void)self, (void)msg;
    worker_thread = pthread_self();
    atomic_store(&worker_known, true);
    sem_post(&pong);
}

static const nd_actor_type_t ping_type = {
    .name = "ping",
    .size = sizeof(nd_actor_t),
    .dispatch = ping_dispatch,
};

/* ---- the fixture: a one-worker pool, its poller, one listener on 127.0.0.1 ---- */

static nd_pool_t *pool;
static nd_poller_t *poller;
static nd_listener_t *lis;
static nd_ctx_t *ctx;
static nd_actor_t *pinger;
static char logpath[64];
static _Atomic int naccepted;
static int accepted_fds[MAX_CONNS];

static void
on_accept(nd_ctx_t *c, int fd, void *arg)
{
    (void)c;
    cr_assert_eq(arg, &naccepted);
    int i = atomic_fetch_add(&naccepted, 1);
    if (i < MAX_CONNS)
        accepted_fds[i] = fd;
    else
        close(fd);
}

static void
ping(void)
{
    nd_actor_send(ctx, pinger, ND_MSG_NEW(ctx, nd_msg_t, MSG_PING));
    cr_assert(sem_wait_10s(&pong), "the worker did not run the ping actor");
}

static nd_listener_decl_t
decl(nd_listener_errlog_t style, const char *name)
{
    return (nd_listener_decl_t){
        .host = "127.0.0.1",
        .port = 0,
        .backlog = MAX_CONNS,
        .what = "test port",
        .ready = "Listening for test connections on",
        .accept_name = name,
        .errlog = style,
        .on_accept = on_accept,
        .arg = &naccepted,
    };
}

static void
start(nd_listener_errlog_t style, const char *name)
{
    snprintf(logpath, sizeof logpath, "/tmp/nd_listener_%d.log", (int)getpid());
    nd_log_setup(false, false, false, logpath);
    sem_init(&pong, 0, 0);
    pool = nd_pool_new(1);
    poller = nd_poller_new(pool, false);
    nd_pool_idle_t idle;
    nd_poller_idle(&idle, poller);
    nd_pool_set_idle(pool, &idle);
    nd_listener_decl_t d = decl(style, name);
    lis = nd_listener_bind(&d);
    cr_assert_not_null(lis);
    nd_listener_start(lis, pool, poller);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
    pinger = nd_actor_spawn(ctx, &ping_type);
    ping();
}

static void
finish(void)
{
    nd_listener_stop(lis);
    for (int i = 0; i < atomic_load(&naccepted) && i < MAX_CONNS; i++)
        close(accepted_fds[i]);
    nd_actor_close(ctx, pinger);
    nd_actor_unref(ctx, pinger);
    nd_ctx_external_free(ctx);
    nd_pool_shutdown(pool);
    nd_poller_free(poller);
    nd_listener_free(lis);
    nd_pool_free(pool);
    nd_log_close();
    unlink(logpath);
}

static char *
slurp_log(void)
{
    FILE *f = fopen(logpath, "r");
    cr_assert_not_null(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int
client_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    return fd;
}

/* Returns: 0, or the errno of connect. */
static int
client_connect(int fd, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ? 0 : errno;
}

/* ---- tests ---- */

Test(listener, ready_line_accept_and_stop)
{
    start(ND_LISTENER_ERRLOG_NATS, "Test");
    int port = nd_listener_port(lis);
    cr_assert(port > 0);
    nd_listener_log_ready(lis);
    char want[128];
    snprintf(want, sizeof want, "[INF] Listening for test connections on 127.0.0.1:%d\n", port);
    cr_assert_not_null(strstr(slurp_log(), want), "%s", slurp_log());

    int c = client_socket();
    cr_assert_eq(client_connect(c, port), 0);
    WAIT_UNTIL(atomic_load(&naccepted) == 1);
    cr_assert_eq(nd_listener_accepted(lis), 1);
    cr_assert_eq(send(c, "x", 1, 0), 1);
    char b;
    WAIT_UNTIL(recv(accepted_fds[0], &b, 1, 0) == 1);
    cr_assert_eq(b, 'x');

    /* Once stop returns the port is closed and nothing more is accepted; stop is idempotent. */
    nd_listener_stop(lis);
    nd_listener_stop(lis);
    int c2 = client_socket();
    cr_assert_eq(client_connect(c2, port), ECONNREFUSED);
    ping();
    cr_assert_eq(atomic_load(&naccepted), 1);
    close(c), close(c2);
    finish();
}

Test(listener, bind_error_is_logged)
{
    start(ND_LISTENER_ERRLOG_NATS, "Test");
    nd_listener_decl_t d = decl(ND_LISTENER_ERRLOG_NATS, "Test");
    d.port = nd_listener_port(lis);
    cr_assert_null(nd_listener_bind(&d));
    char want[128];
    snprintf(want, sizeof want,
             "[ERR] Error listening on test port: 127.0.0.1:%d, \"Address already in use\"",
             d.port);
    cr_assert_not_null(strstr(slurp_log(), want), "%s", slurp_log());
    finish();
}

/* Fills every descriptor slot, connects n clients, waits for `rounds` back-offs, checks that the
 * worker never slept and still runs actors, frees the slots and waits for all n to be served. */
static void
exhaust_and_recover(int n, unsigned rounds)
{
    int port = nd_listener_port(lis);
    int clients[MAX_CONNS];
    for (int i = 0; i < n; i++)
        clients[i] = client_socket(); /* before the slots run out */

    struct rlimit old, low;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 256;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    static int fillers[256];
    int nfill = 0;
    int fd;
    while (nfill < 256 && (fd = dup(0)) >= 0)
        fillers[nfill++] = fd;
    cr_assert_eq(errno, EMFILE);
    cr_assert(nfill >= n, "only %d free descriptor slots below 256", nfill);

    for (int i = 0; i < n; i++)
        cr_assert_eq(client_connect(clients[i], port), 0); /* the kernel's backlog takes them */
    WAIT_UNTIL(nd_listener_backoffs(lis) >= rounds);
    cr_assert_eq(atomic_load(&naccepted), 0);
    ping(); /* the one worker is free: it runs other actors while the listener waits */
    cr_assert_eq(atomic_load(&worker_sleeps), 0, "a worker slept");

    for (int i = 0; i < nfill; i++)
        close(fillers[i]);
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    WAIT_UNTIL(atomic_load(&naccepted) == n);

    /* Every connection that waited is served: a byte from each client reaches its socket. */
    for (int i = 0; i < n; i++)
        cr_assert_eq(send(clients[i], "y", 1, 0), 1);
    for (int i = 0; i < n; i++) {
        char b;
        WAIT_UNTIL(recv(accepted_fds[i], &b, 1, 0) == 1);
        cr_assert_eq(b, 'y');
    }
    cr_assert_eq(atomic_load(&worker_sleeps), 0, "a worker slept");
    for (int i = 0; i < n; i++)
        close(clients[i]);
}

/* The first `rounds` back-off lines, in order, are fmt (with the port and the delay in ms)
 * for delays first_ms, 2 * first_ms, ... */
static void
assert_backoff_lines(const char *fmt, int first_ms, int rounds)
{
    const char *p = slurp_log();
    for (int i = 0, ms = first_ms; i < rounds; i++, ms *= 2) {
        char want[192];
        snprintf(want, sizeof want, fmt, nd_listener_port(lis), ms);
        const char *line = strstr(p, "[ERR] ");
        cr_assert_not_null(line, "line %d missing: %s", i, slurp_log());
        line += strlen("[ERR] ");
        cr_assert(strncmp(line, want, strlen(want)) == 0 && line[strlen(want)] == '\n',
                  "line %d: want \"%s\" in\n%s", i, want, slurp_log());
        p = line;
    }
}

Test(listener, emfile_backs_off_on_a_timer_and_recovers)
{
    start(ND_LISTENER_ERRLOG_NATS, "Client");
    exhaust_and_recover(3, 3);
    assert_backoff_lines("Temporary Client Accept Error(accept tcp 127.0.0.1:%d: accept4: too "
                         "many open files), sleeping %dms",
                         10, 3);
    finish();
}

Test(listener, emfile_http_style)
{
    start(ND_LISTENER_ERRLOG_HTTP, "monitoring: ");
    exhaust_and_recover(2, 2);
    assert_backoff_lines("monitoring: Accept error: accept tcp 127.0.0.1:%d: accept4: too many "
                         "open files; retrying in %dms",
                         5, 2);
    finish();
}
