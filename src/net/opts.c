/* Server options: defaults and nats-server-compatible command-line flags.
 *
 * Flags follow Go's flag package, as nats-server's do: `-x value`, `-x=value`, `--x value`,
 * `--x=value`; boolean flags take no value unless given as `-x=false`. Aliases share one entry.
 * Flags for features that are not built yet are accepted and reported in the log by the server.
 */
#include "natsd/opts.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "natsd/alloc.h"
#include "natsd/natsd.h"

void
nd_opts_defaults(nd_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->host = nd_xstrdup("0.0.0.0");
    o->port = ND_DEFAULT_PORT;
    o->max_payload = ND_DEFAULT_MAX_PAYLOAD;
    o->max_control_line = ND_DEFAULT_MAX_CONTROL_LINE;
    o->max_connections = ND_DEFAULT_MAX_CONNECTIONS;
    o->max_pending = ND_DEFAULT_MAX_PENDING;
    o->ping_interval_ms = ND_DEFAULT_PING_INTERVAL_MS;
    o->ping_max = ND_DEFAULT_PING_MAX;
    o->write_deadline_ms = ND_DEFAULT_WRITE_DEADLINE_MS;
    o->logtime = true;
}

/* Every string option, for copying and freeing. */
static const size_t string_fields[] = {
    offsetof(nd_opts_t, host),        offsetof(nd_opts_t, server_name),
    offsetof(nd_opts_t, log_file),    offsetof(nd_opts_t, store_dir),
    offsetof(nd_opts_t, user),        offsetof(nd_opts_t, pass),
    offsetof(nd_opts_t, token),       offsetof(nd_opts_t, cluster_url),
    offsetof(nd_opts_t, routes),      offsetof(nd_opts_t, cluster_name),
    offsetof(nd_opts_t, config_file), offsetof(nd_opts_t, pid_file),
    offsetof(nd_opts_t, config_warnings),
};

#define STR_FIELD(o, off) ((char **)((char *)(o) + (off)))

void
nd_opts_free(nd_opts_t *o)
{
    for (size_t i = 0; i < sizeof string_fields / sizeof string_fields[0]; i++) {
        nd_free(*STR_FIELD(o, string_fields[i]));
        *STR_FIELD(o, string_fields[i]) = NULL;
    }
}

void
nd_opts_copy(nd_opts_t *dst, const nd_opts_t *src)
{
    *dst = *src;
    for (size_t i = 0; i < sizeof string_fields / sizeof string_fields[0]; i++) {
        const char *v = *STR_FIELD(src, string_fields[i]);
        *STR_FIELD(dst, string_fields[i]) = v ? nd_xstrdup(v) : NULL;
    }
}

enum kind { BOOL, STR, INT, IGNORED_STR, IGNORED_BOOL, HELP, VERSION };

typedef struct flag {
    const char *names; /* space-separated, without dashes */
    enum kind kind;
    size_t off; /* offsetof the field in nd_opts_t (BOOL, STR, INT) */
    const char *help;
} flag_t;

#define F(field) offsetof(nd_opts_t, field)

static const flag_t flags[] = {
    {"a addr net", STR, F(host), "Bind to host address (default: 0.0.0.0)"},
    {"p port", INT, F(port), "Use port for clients (default: 4222)"},
    {"n name server_name", STR, F(server_name), "Server name (default: auto)"},
    {"P pid", STR, F(pid_file), "File to store PID"},
    {"m http_port", INT, F(http_port), "Use port for http monitoring"},
    {"ms https_port", IGNORED_STR, 0, "Use port for https monitoring"},
    {"c config", STR, F(config_file), "Configuration file"},
    {"t", BOOL, F(check_config), "Test configuration and exit"},
    {"sl signal", IGNORED_STR, 0, "Send signal to natsd process"},
    {"client_advertise", IGNORED_STR, 0, "Client URL to advertise to other servers"},
    {"ports_file_dir", IGNORED_STR, 0, "Creates a ports file in the specified directory"},
    {"w worker_threads", INT, F(workers), "Worker threads (default: online CPUs)"},
    {"l log", STR, F(log_file), "File to redirect log output"},
    {"T logtime", BOOL, F(logtime), "Timestamp log entries (default: true)"},
    {"s syslog", IGNORED_BOOL, 0, "Log to syslog"},
    {"r remote_syslog", IGNORED_STR, 0, "Syslog server addr"},
    {"D debug", BOOL, F(debug), "Enable debugging output"},
    {"V trace", BOOL, F(trace), "Trace the raw protocol"},
    {"VV", BOOL, F(trace), "Verbose trace"},
    {"DV", BOOL, 0, "Debug and trace"},
    {"DVV", BOOL, 0, "Debug and verbose trace"},
    {"log_size_limit", IGNORED_STR, 0, "Logfile size limit"},
    {"max_traced_msg_len", IGNORED_STR, 0, "Maximum printable length for traced messages"},
    {"js jetstream", BOOL, F(jetstream), "Enable JetStream functionality"},
    {"sd store_dir", STR, F(store_dir), "Set the storage directory"},
    {"user", STR, F(user), "User required for connections"},
    {"pass", STR, F(pass), "Password required for connections"},
    {"auth", STR, F(token), "Authorization token required for connections"},
    {"tls", IGNORED_BOOL, 0, "Enable TLS, do not verify clients"},
    {"tlscert", IGNORED_STR, 0, "Server certificate file"},
    {"tlskey", IGNORED_STR, 0, "Private key for server certificate"},
    {"tlsverify", IGNORED_BOOL, 0, "Enable TLS, verify client certificates"},
    {"tlscacert", IGNORED_STR, 0, "Client certificate CA for verification"},
    {"routes", STR, F(routes), "Routes to solicit and connect"},
    {"cluster", STR, F(cluster_url), "Cluster URL for solicited routes"},
    {"cluster_name", STR, F(cluster_name), "Cluster Name"},
    {"no_advertise", IGNORED_BOOL, 0, "Do not advertise known cluster information to clients"},
    {"cluster_advertise", IGNORED_STR, 0, "Cluster URL to advertise to other servers"},
    {"connect_retries", IGNORED_STR, 0, "For implicit routes, number of connect retries"},
    {"cluster_listen", IGNORED_STR, 0, "Cluster url from which members can solicit routes"},
    {"profile", IGNORED_STR, 0, "Profiling HTTP port"},
    {"h help", HELP, 0, "Show this message"},
    {"v version", VERSION, 0, "Show version"},
    {"help_tls", HELP, 0, "TLS help"},
};

static bool
name_in(const char *names, const char *name, size_t len)
{
    const char *p = names;
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == len && strncmp(p, name, len) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static void
usage(FILE *out)
{
    fprintf(out, "\nUsage: natsd [options]\n\nOptions (nats-server compatible):\n");
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        char buf[64] = "";
        const char *p = flags[i].names;
        size_t n = 0;
        while (*p && n < sizeof buf - 8) {
            const char *e = strchr(p, ' ');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s%.*s", n ? ", " : "",
                                  len <= 3 ? "-" : "--", (int)len, p);
            p = e ? e + 1 : p + len;
        }
        fprintf(out, "    %-32s %s\n", buf, flags[i].help);
    }
    fputc('\n', out);
}

static bool
parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "t") || !strcmp(v, "TRUE")) {
        *out = true;
        return true;
    }
    if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "f") || !strcmp(v, "FALSE")) {
        *out = false;
        return true;
    }
    return false;
}

static int
parse_flags(nd_opts_t *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == '\0') {
            fprintf(stderr, "natsd: unexpected argument %s\n", arg);
            usage(stderr);
            return 1;
        }
        const char *name = arg + (arg[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const flag_t *f = NULL;
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]) && !f; k++)
            if (name_in(flags[k].names, name, len))
                f = &flags[k];
        if (f == NULL) {
            fprintf(stderr, "flag provided but not defined: -%.*s\n", (int)len, name);
            usage(stderr);
            return 1;
        }
        if (f->kind == HELP) {
            usage(stdout);
            return 2;
        }
        if (f->kind == VERSION) {
            printf("nats-server: v%s (natsd %s)\n", NATSD_COMPAT_VERSION, NATSD_VERSION);
            return 2;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (f->kind == BOOL || f->kind == IGNORED_BOOL) {
            bool b = true;
            if (val && !parse_bool(val, &b)) {
                fprintf(stderr, "invalid boolean value %s for flag -%.*s\n", val, (int)len, name);
                return 1;
            }
            if (!strncmp(name, "DV", len) || !strncmp(name, "DVV", len)) {
                o->debug = o->trace = b;
            } else if (f->kind == BOOL) {
                *(bool *)((char *)o + f->off) = b;
            }
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "flag needs an argument: -%.*s\n", (int)len, name);
                usage(stderr);
                return 1;
            }
            val = argv[++i];
        }
        if (f->kind == STR) {
            char **dst = (char **)((char *)o + f->off);
            nd_free(*dst);
            *dst = nd_xstrdup(val);
        } else if (f->kind == INT) {
            char *end;
            long v = strtol(val, &end, 10);
            if (*val == '\0' || *end != '\0') {
                fprintf(stderr, "invalid value \"%s\" for flag -%.*s: parse error\n", val,
                        (int)len, name);
                usage(stderr);
                return 1;
            }
            if (f->off == F(workers)) {
                if (v < 0 || v > 1024) {
                    fprintf(stderr, "natsd: invalid worker count %ld\n", v);
                    return 1;
                }
                o->workers = (unsigned)v;
            } else {
                *(int *)((char *)o + f->off) = (int)v;
            }
        }
    }
    return 0;
}

/* nats-server's order: the flags are parsed (usage errors first), then the config file is loaded
 * and the flags given override it. We get the same by parsing the flags twice: once to find -c
 * and -t, and again over the options the file produced (the second pass cannot fail). */
int
nd_opts_parse_args(nd_opts_t *o, int argc, char **argv)
{
    int rc = parse_flags(o, argc, argv);
    if (rc != 0)
        return rc;
    if (o->config_file == NULL) {
        if (o->check_config) {
            fprintf(stderr, "nats-server: must specify [-c, --config] option to check "
                            "configuration file syntax\n");
            return 1;
        }
        return 0;
    }
    char *path = nd_xstrdup(o->config_file);
    nd_opts_free(o);
    nd_opts_defaults(o);
    char err[1024];
    int crc = nd_opts_apply_config(o, path, err, sizeof err);
    rc = parse_flags(o, argc, argv);
    bool check = o->check_config;
    if (crc < 0 || (crc > 0 && check)) {
        fprintf(stderr, "nats-server: %s\n", err);
        rc = 1;
    } else if (rc == 0 && check) {
        fprintf(stderr, "nats-server: configuration file %s is valid\n", path);
        rc = 2;
    }
    nd_free(path);
    return rc;
}
