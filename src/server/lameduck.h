/* Lame duck mode (SIGUSR2, `-sl ldm`, natsd_lame_duck): stop accepting, tell clients to move
 * ("ldm":true in an INFO), wait lame_duck_grace_period, close the clients spread over
 * lame_duck_duration, then report that the server may shut down. See lameduck.c.
 */
#ifndef ND_LAMEDUCK_H
#define ND_LAMEDUCK_H

#include <stdbool.h>

#include "net/server.h"

/* Sets up the lame-duck state of s. Ctx: the thread that starts the server, before anyone can
 * call the functions below. */
void nd_lameduck_init(nd_server_t *s);

/* Enters lame duck mode: closes the listener (waiting until no accept runs) and starts the
 * lame-duck actor, which does the rest through the runtime. Returns: false when lame duck mode
 * had already started. Ctx: a non-worker thread, not concurrently with natsd_stop. */
bool nd_lameduck_start(nd_server_t *s);

/* Waits up to timeout_ms (-1: without limit) until lame duck mode has closed every client.
 * Returns: true when it has (the server can now be stopped), false on timeout or when lame duck
 * mode was never started. Ctx: any non-worker thread. */
bool nd_lameduck_wait(nd_server_t *s, int timeout_ms);

/* Frees the lame-duck state. Ctx: after the pool has shut down. */
void nd_lameduck_free(nd_server_t *s);

#endif
