/* natsd embedding API: run a natsd server inside another program.
 *
 * natsd_start() starts the worker pool (and, as the server grows, listeners and services) and
 * returns at once; natsd_stop() stops everything and frees it. Ctx: the embedding thread.
 */
#ifndef NATSD_NATSD_H
#define NATSD_NATSD_H

#define NATSD_VERSION "0.1.0"

typedef struct natsd_opts {
    unsigned workers; /* worker threads; 0 = one per online CPU */
} natsd_opts_t;

typedef struct natsd natsd_t;

/* Returns: a running server, or NULL with a message on stderr. */
natsd_t *natsd_start(const natsd_opts_t *opts);
void natsd_stop(natsd_t *s);
unsigned natsd_workers(const natsd_t *s);
const char *natsd_version(void);

#endif
