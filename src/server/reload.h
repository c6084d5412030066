/* Config reload (SIGHUP, `-sl reload`, natsd_reload): re-read the config file, re-apply the
 * command-line flags over it, compare with the options in force and apply what nats-server can
 * apply live, or refuse the whole reload. See reload.c.
 */
#ifndef ND_RELOAD_H
#define ND_RELOAD_H

#include "cfg/opts.h"
#include "net/server.h"

/* Sets up the reload state of s with opts as the options in force (copied).
 * Ctx: the thread that started the server, before anyone can reload. */
void nd_reload_init(nd_server_t *s, const nd_opts_t *opts);
/* Frees the reload state. Ctx: after the last reload returned. */
void nd_reload_free(nd_server_t *s);

/* The MQTT service a reload of the mqtt block applies to (NULL: none). Ctx: the thread that
 * started the server, before anyone can reload. */
struct nd_mqtt;
void nd_reload_set_mqtt(nd_server_t *s, struct nd_mqtt *m);

/* The command line whose flags are re-applied over the file on every reload, so that flags keep
 * winning over the file as they did at start (nats-server's FlagSnapshot). Borrows: argv is
 * copied. Ctx: any non-worker thread. */
void nd_reload_set_args(nd_server_t *s, int argc, char *const *argv);

/* Reloads the config file `config` (NULL: the file the server started with). On success every
 * change is applied and logged ("Reloaded: ..." lines, then "Reloaded server configuration"); on
 * any error (no file, a parse error, an option that cannot change while running, an invalid
 * combination) nothing changes and "Failed to reload server configuration: <why>" is logged.
 * Returns: 0 on success, -1 on error. Ctx: any non-worker thread (it waits for an epoch grace
 * period); concurrent calls are serialised. */
int nd_reload_run(nd_server_t *s, const char *config);

#endif
