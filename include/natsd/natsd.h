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
#include <stddef.h>

/* The embedding API is all that libnatsd.so exports: the library is built with
 * -fvisibility=hidden and each natsd_ function is marked here. */
#if defined(__GNUC__)
#define NATSD_API __attribute__((visibility("default")))
#else
#define NATSD_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The options are opaque to an embedding program: build them with the natsd_opts_* functions. */
typedef struct nd_opts natsd_opts_t;

#define NATSD_VERSION "0.1.0"
/* The nats-server version natsd reports to clients (INFO "version", --version). */
#define NATSD_COMPAT_VERSION "2.10.0"

typedef struct natsd natsd_t;

/* Options hold natsd's defaults (nats-server's) until set; the config-file keys are the names.
 * Returns: new options; free them with natsd_opts_free (NULL is fine). */
NATSD_API natsd_opts_t *natsd_opts_new(void);
NATSD_API void natsd_opts_free(natsd_opts_t *o);
/* Sets one option by its config-file key (any alias, any case; blocks too), its value written as
 * in a config file ("4222", "2m", "true", "\"a b\"", "[a, b]", "{ user: a, password: b }"): the
 * same checks and error texts as the line `name: value` in a file. A later set overrides.
 * Returns: 0, or -1 with nats-server's error text in err (o may be partly updated). */
NATSD_API int natsd_opts_set(natsd_opts_t *o, const char *name, const char *value, char *err,
                             size_t errlen);
/* Applies a config file over o, as -c does (natsd_reload with NULL re-reads it).
 * Returns: 0, or -1 with the error in err. */
NATSD_API int natsd_opts_load_file(natsd_opts_t *o, const char *path, char *err, size_t errlen);
/* Applies config text over o (includes are relative to the working directory).
 * Returns: 0, or -1 with the error in err. */
NATSD_API int natsd_opts_load_string(natsd_opts_t *o, const char *text, char *err, size_t errlen);

/* Starts a server with opts (copied; NULL = defaults), the log configured from them (log_file,
 * syslog, debug, trace, logtime) unless a callback took it (natsd_set_log_callback). port -1
 * picks a free port: see natsd_port and natsd_client_url. Returns: NULL after logging why. */
NATSD_API natsd_t *natsd_start(const natsd_opts_t *opts);
NATSD_API void natsd_stop(natsd_t *s);

/* The command line whose flags natsd_reload re-applies over the re-read file, so that flags keep
 * winning over the file (main passes its argv). Without it a reload compares the file alone with
 * the options in force, so an option an embedder set over the file counts as a change (and, for
 * host or port, refuses the reload): such an embedder passes its overrides here as flags.
 * Borrows: argv is copied. */
NATSD_API void natsd_set_args(natsd_t *s, int argc, char *const *argv);
/* Reloads the configuration file (config, or NULL for the file the server started with) and
 * applies what nats-server can change live; an option that cannot change, or a bad file, leaves
 * everything as it was. Logs the outcome. Returns: 0 when reloaded, -1 otherwise.
 * Ctx: any thread of the embedder (not a natsd worker); calls are serialised. */
NATSD_API int natsd_reload(natsd_t *s, const char *config);
/* Enters lame duck mode: stops accepting, tells clients to move ("ldm":true), and after
 * lame_duck_grace_period closes them spread over lame_duck_duration. The server keeps running
 * until natsd_stop: wait for natsd_lame_duck_wait first. Returns: false if already in lame duck
 * mode. Ctx: the embedder's thread, not concurrently with natsd_stop. */
NATSD_API bool natsd_lame_duck(natsd_t *s);
/* Waits up to timeout_ms (-1: forever; 0: just look) for lame duck mode to have closed every
 * client. Returns: true once it has; false on timeout or when lame duck mode was not started. */
NATSD_API bool natsd_lame_duck_wait(natsd_t *s, int timeout_ms);
/* The bound client port (useful with port -1 = random). */
NATSD_API int natsd_port(const natsd_t *s);
/* The bound HTTP monitoring port, or 0 when monitoring is off (for the ports file). */
NATSD_API int natsd_http_port(const natsd_t *s);
NATSD_API unsigned natsd_workers(const natsd_t *s);
NATSD_API const char *natsd_version(void);

/* Waits up to timeout_ms (-1: forever; 0: just look) for the server to accept client
 * connections, as nats-server's ReadyForConnections. natsd_start returns with the listener
 * accepting, so this is true at once until lame duck mode or natsd_stop begins.
 * Returns: true when ready; false on timeout, for NULL, or once the server stopped accepting. */
NATSD_API bool natsd_ready(natsd_t *s, int timeout_ms);
/* The URL a client on this machine connects to: "nats://127.0.0.1:<port>" when the server
 * listens on every address (0.0.0.0 or ::), else "nats://<host>:<port>" (IPv6 in brackets). With
 * port -1 the port is the one the system chose. Returns: a string owned by s, valid until
 * natsd_stop. */
NATSD_API const char *natsd_client_url(const natsd_t *s);

/* Log levels, most severe first; a level lets through itself and every level above it. */
typedef enum {
    NATSD_LOG_FATAL,
    NATSD_LOG_ERROR,
    NATSD_LOG_WARN,
    NATSD_LOG_INFO,
    NATSD_LOG_DEBUG,
    NATSD_LOG_TRACE
} natsd_log_level_t;
/* Receives one log line: the text only, without nats-server's "[pid] time [INF] " prefix and
 * without a newline (level says which label it had). Called on natsd's own threads, one line at a
 * time (never concurrently), so it must not block for long nor call back into natsd.
 * Borrows: msg, for the call. */
typedef void (*natsd_log_fn)(void *arg, natsd_log_level_t level, const char *msg);
/* Routes natsd's log to fn instead of its sink (stderr, log_file, syslog); NULL goes back to the
 * sink. The log is process-wide: this applies to every server of the process, and may be called
 * before natsd_start to see its banner. Ctx: any thread. */
NATSD_API void natsd_set_log_callback(natsd_log_fn fn, void *arg);
/* Logs only lines at level or above (NATSD_LOG_INFO: errors, warnings and notices). DEBUG and
 * TRACE also switch those lines on, as the debug and trace options (-D, -V) do; a config reload
 * may switch them again, never past this cap. Default: NATSD_LOG_TRACE (no cap; debug and trace
 * as the options say). Process-wide, like the callback. Ctx: any thread. */
NATSD_API void natsd_set_log_level(natsd_log_level_t level);

#ifdef __cplusplus
}
#endif

#endif
