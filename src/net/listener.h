/* A listening TCP port: bind, accept with back-off, stop. One helper for every port the server
 * opens (client and monitoring today; route, gateway, leaf, websocket and mqtt later), so each
 * of them is a declaration (nd_listener_decl_t), not another copy of the accept loop.
 *
 * Accepting runs on an actor of its own, never on the poller's epoll loop: the socket is
 * registered edge-triggered with the listener actor as owner, and each readiness message makes
 * the actor accept until EAGAIN, calling on_accept for every new socket (which spawns the actor
 * that serves it). When accept fails for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) the
 * actor stops accepting and arms a timer (actors/timer.h) instead of sleeping: 10 ms at first,
 * doubling up to 1 s as nats-server's ACCEPT_MIN_SLEEP/ACCEPT_MAX_SLEEP, reset by a successful
 * accept. The timer's message resumes the loop; readiness messages that arrive meanwhile are
 * taken and ignored. No worker ever sleeps, so connections already open keep being served while
 * the process is out of descriptors. The error is logged as nats-server logs it (see
 * nd_listener_errlog_t).
 *
 * Lifecycle: nd_listener_bind (before the pool exists: a port in use fails the start at once)
 * -> nd_listener_start (registers with the poller) -> nd_listener_stop (unregisters, closes, and
 * returns once no accept can run any more) -> nd_listener_free. A started listener must be
 * stopped before the pool's shutdown (the listener's actor reference would keep it waiting).
 */
#ifndef ND_LISTENER_H
#define ND_LISTENER_H

#include <stdint.h>

#include "actors/ctx.h"
#include "net/poller.h"

/* Called for each accepted socket on the listener actor's turn: spawns the actor that serves
 * fd. Owns: fd (non-blocking, close-on-exec). Ctx: a worker (the listener actor's turn). */
typedef void nd_listener_accept_fn(nd_ctx_t *ctx, int fd, void *arg);

/* Which server's words and back-off a resource error is reported with (nats-server 2.9). */
typedef enum nd_listener_errlog {
    /* nats-server's acceptError (client, route, gateway, leaf, websocket, mqtt ports):
     * "Temporary <accept_name> Accept Error(<err>), sleeping 10ms", 10 ms doubling to 1 s;
     * other errors "<accept_name> Accept error: <err>". */
    ND_LISTENER_ERRLOG_NATS,
    /* Go's net/http Server.Serve as nats-server logs it for the monitoring port (its
     * captureHTTPServerLog drops "http: " and prefixes accept_name, "monitoring: "):
     * "monitoring: Accept error: <err>; retrying in 5ms", 5 ms doubling to 1 s. */
    ND_LISTENER_ERRLOG_HTTP,
} nd_listener_errlog_t;

/* A listener's declaration. Borrowed by nd_listener_bind, which copies what it keeps except the
 * string literals marked static. */
typedef struct nd_listener_decl {
    const char *host; /* as given and as logged; NULL or "" binds 0.0.0.0 */
    int port;         /* 0 or negative: any free port */
    int backlog;
    const char *what;  /* static; "Error listening on <what>: host:port, ..." (nd_tcp_listen) */
    const char *ready; /* static; the ready line's words: "Listening for client connections on" */
    const char *ready_suffix; /* printed after host:port (the monitor's base path); NULL: none */
    const char *accept_name;  /* static; "Client", or "monitoring: " for ERRLOG_HTTP */
    nd_listener_errlog_t errlog;
    nd_listener_accept_fn *on_accept;
    void *arg; /* passed to on_accept; must outlive the listener's stop */
} nd_listener_decl_t;

typedef struct nd_listener nd_listener_t;

/* Binds and listens (nd_tcp_listen). Returns: the listener, or NULL after logging why.
 * Ctx: any thread; no pool needed. */
nd_listener_t *nd_listener_bind(const nd_listener_decl_t *decl);
/* Logs the declaration's ready line, "<ready> <host>:<bound port><ready_suffix>". Each user
 * calls it where its start sequence announces the port (the monitor right after binding, the
 * client port once it is registered), which is where nats-server prints it. */
void nd_listener_log_ready(const nd_listener_t *l);
/* Spawns the listener actor and registers the socket with poller: accepting starts when the
 * pool runs. Ctx: a non-worker thread (the starting thread, before or after nd_pool_start). */
void nd_listener_start(nd_listener_t *l, nd_pool_t *pool, nd_poller_t *poller);
/* Unregisters and closes the socket, and returns once no accept can run any more (so nothing
 * is spawned after the pool's shutdown began closing actors). Idempotent; a listener never
 * started is just closed. Ctx: a non-worker thread, not concurrently with itself. */
void nd_listener_stop(nd_listener_t *l);
/* Stops (if needed) and frees. NULL is fine. */
void nd_listener_free(nd_listener_t *l);
/* Returns: the bound port (the kernel's choice for port 0). */
int nd_listener_port(const nd_listener_t *l);

/* Counters for tests and diagnostics: accept attempts that failed for lack of resources (each
 * one armed the back-off timer), and sockets accepted. Ctx: any thread (relaxed snapshots). */
uint64_t nd_listener_backoffs(const nd_listener_t *l);
uint64_t nd_listener_accepted(const nd_listener_t *l);

#endif
