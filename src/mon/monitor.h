/* HTTP monitoring: the listener of the monitoring port and its lifetime (the HTTP connections and
 * the endpoints are in http.c and the endpoint files of src/mon).
 *
 * server/natsd.c binds the port before the server starts (so a client that sees the server ready can
 * reach the monitoring port too, as with nats-server, and a port in use fails the start cleanly),
 * attaches it to the server's poller after the server started and before the pool starts, stops it
 * before the pool's shutdown, which closes every HTTP connection actor, and frees it after.
 * Ctx: the main thread.
 */
#ifndef ND_MONITOR_H
#define ND_MONITOR_H

#include "cfg/opts.h"

typedef struct nd_mon nd_mon_t;
struct nd_server;
struct nd_ctx;

/* Listens on opts.http_host (default: opts.host) : opts.http_port (-1: a random port) when
 * http_port is set. Returns: 0 with *out = NULL when monitoring is off, 0 with *out set when
 * listening, -1 after logging why it could not listen. */
int nd_mon_listen(const nd_opts_t *opts, nd_mon_t **out);
/* Starts accepting through the server's poller (m may be NULL). */
void nd_mon_attach(nd_mon_t *m, struct nd_server *srv);
/* Stops accepting HTTP connections (waits until no accept can run any more). */
void nd_mon_stop_accepting(nd_mon_t *m);
/* Frees the monitor after the pool's shutdown. NULL is fine. */
void nd_mon_free(nd_mon_t *m);
/* Config reload: installs o's http_auth {} for the requests that follow (a request already
 * checked is not checked again). Returns: false when m is NULL (monitoring is off). Ctx: the
 * reloading thread, with its external ctx. */
bool nd_mon_set_auth(struct nd_ctx *ctx, nd_mon_t *m, const nd_opts_t *o);
/* The bound monitoring port. */
int nd_mon_port(const nd_mon_t *m);

#endif
