/* Server options: one struct, filled from defaults, then the config file, then the command line.
 * Defaults are nats-server's (see shared/spec/nats-server-inventory.md §1.8 and §2.2).
 * Immutable once the server has started (reload will swap a whole new copy).
 */
#ifndef NATSD_OPTS_H
#define NATSD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ND_DEFAULT_PORT             4222
#define ND_DEFAULT_MAX_PAYLOAD      (1024 * 1024)
#define ND_DEFAULT_MAX_CONTROL_LINE 4096
#define ND_DEFAULT_MAX_CONNECTIONS  65536
#define ND_DEFAULT_MAX_PENDING      (64LL * 1024 * 1024)
#define ND_DEFAULT_PING_INTERVAL_MS (2 * 60 * 1000)
#define ND_DEFAULT_PING_MAX         2
#define ND_DEFAULT_WRITE_DEADLINE_MS (10 * 1000)
#define ND_DEFAULT_AUTH_TIMEOUT_MS  2000

typedef struct nd_opts {
    char *host;        /* listen address, default 0.0.0.0 */
    int port;          /* default 4222; -1 = random */
    char *server_name; /* default: the server id */
    unsigned workers;  /* 0 = online CPUs */

    int64_t max_payload;
    int32_t max_control_line;
    int32_t max_connections;
    int32_t max_subscriptions; /* 0 = unlimited */
    int64_t max_pending;
    int64_t ping_interval_ms;
    int32_t ping_max;
    int64_t write_deadline_ms;
    bool no_header_support;
    bool no_fast_producer_stall;

    /* logging */
    bool debug, trace, logtime;
    char *log_file;

    /* accepted now, built later */
    bool jetstream;
    char *store_dir;
    char *user, *pass, *token;
    char *cluster_url, *routes, *cluster_name;
    int http_port;
    char *config_file;
    char *pid_file;
    bool check_config;     /* -t: check the config file and exit */
    char *config_warnings; /* newline-separated warnings from the config file, or NULL */
} nd_opts_t;

void nd_opts_defaults(nd_opts_t *o);
void nd_opts_free(nd_opts_t *o);
/* Deep copy: dst owns its own strings. */
void nd_opts_copy(nd_opts_t *dst, const nd_opts_t *src);

/* Parses nats-server-compatible flags into o (over what o holds). With -c FILE, o is reset to
 * the defaults, the file is applied (nd_opts_apply_config) and the flags then override it, as in
 * nats-server; with -t the file is checked, the verdict printed and 2 (valid) or 1 returned.
 * Returns: 0 to run, 1 for a usage error (message printed), 2 when a flag like --help or
 * --version printed its answer and the process should exit 0. */
int nd_opts_parse_args(nd_opts_t *o, int argc, char **argv);

/* Applies the config file at path onto o (src/net/opts_conf.c): the top-level keys natsd
 * implements, with nats-server's aliases; known keys of features natsd lacks only add a warning
 * to o->config_warnings. Returns: 0 on success; 1 on success with a warning nats-server's -t
 * treats as fatal (an integer duration), its text in err; -1 on error, with nats-server's text
 * ("<file>:<line>:<col>: unknown field \"x\"", ...) in err and o partly updated. */
int nd_opts_apply_config(nd_opts_t *o, const char *path, char *err, size_t errlen);
/* Logs o->config_warnings, one warning per line. Ctx: after nd_log_setup. */
void nd_opts_log_config_warnings(const nd_opts_t *o);

#endif
