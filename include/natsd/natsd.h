/* natsd embedding API: run a natsd server inside another program.
 *
 * natsd_start() starts the worker pool, the poller and the client listener and returns at once;
 * natsd_stop() closes every connection, stops every thread and frees everything. In between,
 * natsd_reload() applies a changed config file and natsd_lame_duck() drains the clients.
 * Ctx: the embedding thread.
 */
#ifndef NATSD_NATSD_H
#define NATSD_NATSD_H

#include <stdbool.h>

/* The options are opaque to an embedding program: build them with the natsd_opts_* functions. */
typedef struct nd_opts natsd_opts_t;

#define NATSD_VERSION "0.1.0"
/* The nats-server version natsd reports to clients (INFO "version", --version). */
#define NATSD_COMPAT_VERSION "2.10.0"

typedef struct natsd natsd_t;

/* Options hold natsd's defaults (nats-server's) until set; the config-file keys are the names.
 * Returns: new options; free them with natsd_opts_free (NULL is fine). */
natsd_opts_t *natsd_opts_new(void);
void natsd_opts_free(natsd_opts_t *o);
/* Sets one option by its config-file key (any alias, any case; blocks too), its value written as
 * in a config file ("4222", "2m", "true", "\"a b\"", "[a, b]", "{ user: a, password: b }"): the
 * same checks and error texts as the line `name: value` in a file. A later set overrides.
 * Returns: 0, or -1 with nats-server's error text in err (o may be partly updated). */
int natsd_opts_set(natsd_opts_t *o, const char *name, const char *value, char *err, size_t errlen);
/* Applies a config file over o, as -c does (natsd_reload with NULL re-reads it).
 * Returns: 0, or -1 with the error in err. */
int natsd_opts_load_file(natsd_opts_t *o, const char *path, char *err, size_t errlen);
/* Applies config text over o (includes are relative to the working directory).
 * Returns: 0, or -1 with the error in err. */
int natsd_opts_load_string(natsd_opts_t *o, const char *text, char *err, size_t errlen);

/* Starts a server with opts (copied; NULL = defaults). Returns: NULL after logging why. */
natsd_t *natsd_start(const natsd_opts_t *opts);
void natsd_stop(natsd_t *s);

/* The command line whose flags natsd_reload re-applies over the re-read file, so that flags keep
 * winning over the file (main passes its argv). Without it a reload compares the file alone with
 * the options in force, so an option an embedder set over the file counts as a change (and, for
 * host or port, refuses the reload): such an embedder passes its overrides here as flags.
 * Borrows: argv is copied. */
void natsd_set_args(natsd_t *s, int argc, char *const *argv);
/* Reloads the configuration file (config, or NULL for the file the server started with) and
 * applies what nats-server can change live; an option that cannot change, or a bad file, leaves
 * everything as it was. Logs the outcome. Returns: 0 when reloaded, -1 otherwise.
 * Ctx: any thread of the embedder (not a natsd worker); calls are serialised. */
int natsd_reload(natsd_t *s, const char *config);
/* Enters lame duck mode: stops accepting, tells clients to move ("ldm":true), and after
 * lame_duck_grace_period closes them spread over lame_duck_duration. The server keeps running
 * until natsd_stop: wait for natsd_lame_duck_wait first. Returns: false if already in lame duck
 * mode. Ctx: the embedder's thread, not concurrently with natsd_stop. */
bool natsd_lame_duck(natsd_t *s);
/* Waits up to timeout_ms (-1: forever; 0: just look) for lame duck mode to have closed every
 * client. Returns: true once it has; false on timeout or when lame duck mode was not started. */
bool natsd_lame_duck_wait(natsd_t *s, int timeout_ms);
/* The bound client port (useful with port -1 = random). */
int natsd_port(const natsd_t *s);
/* The bound HTTP monitoring port, or 0 when monitoring is off (for the ports file). */
int natsd_http_port(const natsd_t *s);
unsigned natsd_workers(const natsd_t *s);
const char *natsd_version(void);

#endif
