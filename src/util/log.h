/* Server log in nats-server's line format: "[pid] 2006/01/02 15:04:05.000000 [INF] text".
 *
 * One process-wide log with one sink, chosen as nats-server's ConfigureLogger chooses: the log
 * file if set (with size rotation and a cap on kept backups), else remote syslog, else local
 * syslog, else stderr (coloured labels when stderr is a terminal).
 * Ctx: any thread. Lines never interleave (one write per line under the sink's mutex); the level
 * checks are lock-free.
 */
#ifndef ND_LOG_H
#define ND_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ND_LOG_FATAL,
    ND_LOG_ERROR,
    ND_LOG_WARN,
    ND_LOG_INFO,
    ND_LOG_DEBUG,
    ND_LOG_TRACE
} nd_log_level_t;

/* Short form of nd_log_configure for stderr or a plain file (kept for older callers); a file that
 * cannot be opened is logged to stderr and the log stays there. */
void nd_log_setup(bool debug, bool trace, bool logtime, const char *file);

/* What the log needs of the options (the config room fills it: nd_opts_log_cfg in cfg/opts.h),
 * so this leaf module knows nothing of the server's option struct. Borrows the strings. */
typedef struct nd_log_cfg {
    bool debug, trace;  /* trace: trace or trace_verbose */
    bool logtime, utc;  /* logtime, logtime_utc */
    bool syslog;        /* local syslog */
    const char *file;   /* log_file, NULL or "" = none */
    int64_t size_limit; /* log_size_limit, <= 0 = none */
    int64_t max_num;    /* log_max_num, <= 0 = keep all */
    const char *remote_syslog;
} nd_log_cfg_t;

/* Configures levels and the sink from c. Used at start and on reload (the old sink is closed
 * only once the new one is open).
 * Returns: 0; or -1 with nats-server's text in err ("error opening file: ...", "error connecting
 * to syslog: ...") and the previous sink kept. */
int nd_log_configure(const nd_log_cfg_t *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Changes the levels at once (config reload, -D/-V toggles). */
void nd_log_set_levels(bool debug, bool trace);

/* SIGUSR1: closes and reopens the log file at its configured path (after logrotate moved it),
 * logging "File log re-opened"; without a log file logs that the re-open is ignored. */
void nd_log_reopen(void);

/* Closes the file or syslog sink and goes back to stderr (clean exit, tests). */
void nd_log_close(void);

/* An embedder's receiver for every line instead of the sink (natsd_set_log_callback): the text
 * without prefix or newline, called under the log's mutex so lines never overlap. NULL: the sink
 * again. */
typedef void (*nd_log_hook_fn)(void *arg, nd_log_level_t level, const char *msg);
void nd_log_set_hook(nd_log_hook_fn fn, void *arg);

/* Drops every line below max (natsd_set_log_level); DEBUG and TRACE also switch those levels
 * on. The cap outlives nd_log_set_levels (config reload). Default: ND_LOG_TRACE. */
void nd_log_set_cap(nd_log_level_t max);

bool nd_log_enabled(nd_log_level_t level);
void nd_log(nd_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define nd_log_info(...)  nd_log(ND_LOG_INFO, __VA_ARGS__)
#define nd_log_warn(...)  nd_log(ND_LOG_WARN, __VA_ARGS__)
#define nd_log_error(...) nd_log(ND_LOG_ERROR, __VA_ARGS__)
#define nd_log_debug(...)                                                                          \
    do {                                                                                           \
        if (nd_log_enabled(ND_LOG_DEBUG))                                                          \
            nd_log(ND_LOG_DEBUG, __VA_ARGS__);                                                     \
    } while (0)
#define nd_log_trace(...)                                                                          \
    do {                                                                                           \
        if (nd_log_enabled(ND_LOG_TRACE))                                                          \
            nd_log(ND_LOG_TRACE, __VA_ARGS__);                                                     \
    } while (0)

#endif
