/* Dialers: what the three dialer threads (routes: route_dial.c, gateways: gateway_dial.c, leaf
 * nodes: leaf.c) share. Private to src/net.
 *
 * Each dialer is one thread that sleeps on its own condition variable (on the monotonic clock)
 * until its next job is due or it is woken, then connects with a timeout and hands the socket
 * to a new connection actor, so name resolution and slow connects never block a worker. The
 * calls here block; none runs on a worker.
 */
#ifndef ND_DIAL_INT_H
#define ND_DIAL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Initializes cv on CLOCK_MONOTONIC (what nd_dial_wait measures with). */
void nd_dial_cond_init(pthread_cond_t *cv);
/* Waits on cv (mu held) until woken or wait_ns have passed. */
void nd_dial_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t wait_ns);

/* A non-blocking socket connected to sa within timeout_ms, TCP_NODELAY set. name and port are
 * the address as the caller shows it in the error text. Returns: the socket, or -1 with
 * nats-server's text in err ("socket: ...", "dial tcp <name>:<port>: connect: ..."). */
int nd_dial_connect(const struct sockaddr *sa, socklen_t salen, int timeout_ms, const char *name,
                    int port, char *err, size_t ecap);
/* nd_dial_connect to the first address getaddrinfo gives for host:port. Returns: as
 * nd_dial_connect, or -1 with "lookup <host>: ..." in err. */
int nd_dial_tcp(const char *host, int port, int timeout_ms, char *err, size_t ecap);

#endif
