/* natsd embedding API: run a natsd server inside another program.
 *
 * natsd_start() starts the worker pool, the poller and the client listener and returns at once;
 * natsd_stop() closes every connection, stops every thread and frees everything.
 * Ctx: the embedding thread.
 */
#ifndef NATSD_NATSD_H
#define NATSD_NATSD_H

#include "natsd/opts.h"

#define NATSD_VERSION "0.1.0"
/* The nats-server version natsd reports to clients (INFO "version", --version). */
#define NATSD_COMPAT_VERSION "2.10.0"

typedef struct natsd natsd_t;

/* Starts a server with opts (copied; NULL = defaults). Returns: NULL after logging why. */
natsd_t *natsd_start(const nd_opts_t *opts);
void natsd_stop(natsd_t *s);
/* The bound client port (useful with port -1 = random). */
int natsd_port(const natsd_t *s);
unsigned natsd_workers(const natsd_t *s);
const char *natsd_version(void);

#endif
