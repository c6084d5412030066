/* Server options: defaults and nats-server-compatible command-line flags.
 *
 * Algorithm: the flags are parsed as Go's flag package parses nats-server's (2.10
 * server/opts.go ConfigureOptions, main.go), because scripts, systemd units and client test
 * suites were written against that behaviour:
 *   - `-x value`, `-x=value`, `--x value`, `--x=value`; boolean flags take no value unless given
 *     as `-x=false`; parsing stops at the first argument that is not a flag, or after `--`;
 *   - aliases share one entry; -DV, -DVV and -VV are applied after the others, in the order
 *     Go's FlagSet.Visit gives them (lexicographic), so `-DV -D=false` still debugs;
 *   - a bad flag prints Go's error text on stderr, the usage text on stdout and exits 0 (the
 *     usage function of nats-server's main calls os.Exit(0));
 *   - the leftover argument `version` or `help` acts as the flag; any other one is
 *     `nats-server: unrecognized command: "x"` and exit 1;
 *   - -sl/--signal is carried out (src/server/sigctl.c) before the config file is read, then the
 *     process exits 0, or 1 with the error;
 *   - with -c FILE the defaults are reset, the file is applied and the flags parsed again over
 *     it, so flags override the file (nats-server's MergeOptions effect).
 * Flags of features natsd has not built yet are accepted, stored where a field exists, and add
 * the config file's warning ("TLS is configured but not supported yet by natsd: ignored", once
 * per feature) to o->config_warnings, which main logs at start. Go's int flags are 64-bit; ours
 * are range-checked to the field (int32 for ports), so `-p 99999999999` fails here already.
 *
 * `--version` prints `nats-server: v2.10.0` on its first line (client test suites run
 * `nats-server --version` and take the first `v(\d+)\.(\d+)\.(\d+)`, so that line must stay the
 * compatibility level natsd implements), then `natsd: v<own version>` on a second line.
 */
#include "cfg/opts.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "cfg/opts_table.h"
#include "natsd/natsd.h"

void
nd_opts_defaults(nd_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->host = nd_xstrdup("0.0.0.0");
    for (const nd_opt_desc_t *d = nd_opt_top_block.d; d->type != ND_OT_END; d++) {
        if (!(d->flags & ND_OF_DEFAULT))
            continue;
        void *p = (char *)o + d->off;
        switch (d->type) {
        case ND_OT_BOOL:
            *(bool *)p = d->def != 0;
            break;
        case ND_OT_INT:
            *(int *)p = (int)d->def;
            break;
        case ND_OT_I32:
            *(int32_t *)p = (int32_t)d->def;
            break;
        case ND_OT_I64:
        case ND_OT_DUR:
            *(int64_t *)p = d->def;
            break;
        default:
            break;
        }
    }
}

/* ---- What 0 means: the zero columns of the option tables --------------------------------------
 * The rows of nd_opt_top_block with ND_OF_ZERO, then those of the blocks it points to (as
 * "block.key"), gathered once into the flat view opts.h declares. The rules are nats-server
 * 2.9.10's setBaselineOptions (those that its /varz reports were checked there with the option
 * written as 0); options whose parser refuses 0 still have a row, so the rule survives a parser
 * change. */
#define ZERO_MAX 64
static nd_opt_zero_t zero_rules[ZERO_MAX];
static char zero_keys[ZERO_MAX][64];
static size_t zero_n;
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;

static nd_opt_num_t
zero_num(nd_opt_type_t t)
{
    switch (t) {
    case ND_OT_I32:
        return ND_OPT_I32;
    case ND_OT_INT:
        return ND_OPT_INT;
    case ND_OT_DBL:
        return ND_OPT_DOUBLE;
    default:
        return ND_OPT_I64;
    }
}

static void
zero_add(const char *prefix, size_t block, const nd_opt_desc_t *d)
{
    if (zero_n == ZERO_MAX)
        abort(); /* a table grew past the view: raise ZERO_MAX */
    char *k = zero_keys[zero_n];
    size_t len = sizeof zero_keys[0];
    const char *name = d->name;
    int n = prefix != NULL ? snprintf(k, len, "%s.", prefix) : 0;
    if (name != NULL)
        snprintf(k + n, len - (size_t)n, "%s", name);
    else
        snprintf(k + n, len - (size_t)n, "%.*s", (int)strcspn(d->keys, " "), d->keys);
    zero_rules[zero_n++] =
        (nd_opt_zero_t){k, block, d->off, zero_num(d->type), d->zero, d->def, d->note};
}

static void
zero_build(void)
{
    for (const nd_opt_desc_t *d = nd_opt_top_block.d; d->type != ND_OT_END; d++) {
        if (d->flags & ND_OF_ZERO)
            zero_add(NULL, ND_OPT_TOP, d);
        if (d->type != ND_OT_PTR || d->keys == NULL)
            continue;
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%.*s", (int)strcspn(d->keys, " "), d->keys);
        for (const nd_opt_desc_t *m = d->sub->d; m->type != ND_OT_END; m++)
            if (m->flags & ND_OF_ZERO)
                zero_add(prefix, d->off, m);
    }
}

const nd_opt_zero_t *
nd_opts_zero_table(void)
{
    pthread_once(&zero_once, zero_build);
    return zero_rules;
}

size_t
nd_opts_zero_count(void)
{
    pthread_once(&zero_once, zero_build);
    return zero_n;
}

void
nd_opts_baseline(nd_opts_t *o)
{
    const nd_opt_zero_t *rules = nd_opts_zero_table();
    for (size_t i = 0; i < zero_n; i++) {
        const nd_opt_zero_t *r = &rules[i];
        if (r->rule != ND_ZERO_DEFAULT)
            continue;
        char *base = (char *)o;
        if (r->block != ND_OPT_TOP) {
            base = *(char **)((char *)o + r->block);
            if (base == NULL)
                continue;
        }
        void *p = base + r->off;
        switch (r->type) {
        case ND_OPT_I32:
            if (*(int32_t *)p == 0)
                *(int32_t *)p = (int32_t)r->def;
            break;
        case ND_OPT_INT:
            if (*(int *)p == 0)
                *(int *)p = (int)r->def;
            break;
        case ND_OPT_I64:
            if (*(int64_t *)p == 0)
                *(int64_t *)p = r->def;
            break;
        case ND_OPT_DOUBLE:
            if (*(double *)p == 0)
                *(double *)p = (double)r->def;
            break;
        }
    }
}

const char *
nd_opts_system_account(const nd_opts_t *o)
{
    if (o->system_account != NULL && o->system_account[0] != '\0')
        return o->system_account;
    if (o->no_system_account || o->operators.n > 0 || o->trusted_keys.n > 0)
        return NULL;
    return "$SYS";
}

void
nd_opts_free(nd_opts_t *o)
{
    nd_opt_release(&nd_opt_top_block, o);
}

void
nd_opts_copy(nd_opts_t *dst, const nd_opts_t *src)
{
    nd_opt_copy(&nd_opt_top_block, dst, src);
}

/* The usage text: nats-server 2.10's (main.go usageStr), section for section, with natsd's
 * additions marked. Printed with a trailing newline, as fmt.Printf("%s\n", usageStr) does. */
/* clang-format off: one source line per output line, like the Go original. */
// clang-format off
static const char usage_text[] =
    "\n"
    "Usage: natsd [options]\n"
    "\n"
    "natsd is a nats-server compatible server: it takes nats-server's flags and configuration files.\n"
    "\n"
    "Server Options:\n"
    "    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)\n"
    "    -p, --port <port>                Use port for clients (default: 4222)\n"
    "    -n, --name\n"
    "        --server_name <server_name>  Server name (default: auto)\n"
    "    -P, --pid <file>                 File to store PID\n"
    "    -m, --http_port <port>           Use port for http monitoring\n"
    "    -ms,--https_port <port>          Use port for https monitoring\n"
    "    -c, --config <file>              Configuration file\n"
    "    -t                               Test configuration and exit\n"
    "    -sl,--signal <signal>[=<pid>]    Send signal to natsd process (ldm, stop, quit, term, reopen, reload)\n"
    "                                     pid> can be either a PID (e.g. 1) or the path to a PID file (e.g. /var/run/nats-server.pid)\n"
    "        --client_advertise <string>  Client URL to advertise to other servers\n"
    "        --ports_file_dir <dir>       Creates a ports file in the specified directory (<executable_name>_<pid>.ports).\n"
    "    -w, --workers <n>                Worker threads (default: online CPUs) [natsd]\n"
    "\n"
    "Logging Options:\n"
    "    -l, --log <file>                 File to redirect log output\n"
    "    -T, --logtime                    Timestamp log entries (default: true)\n"
    "        --logtime_utc                Timestamps in UTC instead of local timezone\n"
    "    -s, --syslog                     Log to syslog or windows event log\n"
    "    -r, --remote_syslog <addr>       Syslog server addr (udp://localhost:514)\n"
    "    -D, --debug                      Enable debugging output\n"
    "    -V, --trace                      Trace the raw protocol\n"
    "    -VV                              Verbose trace (traces system account as well)\n"
    "    -DV                              Debug and trace\n"
    "    -DVV                             Debug and verbose trace (traces system account as well)\n"
    "        --log_size_limit <limit>     Logfile size limit (default: auto)\n"
    "        --max_traced_msg_len <len>   Maximum printable length for traced messages (default: unlimited)\n"
    "\n"
    "JetStream Options:\n"
    "    -js, --jetstream                 Enable JetStream functionality\n"
    "    -sd, --store_dir <dir>           Set the storage directory\n"
    "\n"
    "Authorization Options:\n"
    "        --user <user>                User required for connections\n"
    "        --pass <password>            Password required for connections\n"
    "        --auth <token>               Authorization token required for connections\n"
    "\n"
    "TLS Options:\n"
    "        --tls                        Enable TLS, do not verify clients (default: false)\n"
    "        --tlscert <file>             Server certificate file\n"
    "        --tlskey <file>              Private key for server certificate\n"
    "        --tlsverify                  Enable TLS, verify client certificates\n"
    "        --tlscacert <file>           Client certificate CA for verification\n"
    "\n"
    "Cluster Options:\n"
    "        --routes <rurl-1, rurl-2>    Routes to solicit and connect\n"
    "        --cluster <cluster-url>      Cluster URL for solicited routes\n"
    "        --cluster_name <string>      Cluster Name, if not set one will be dynamically generated\n"
    "        --no_advertise <bool>        Do not advertise known cluster information to clients\n"
    "        --cluster_advertise <string> Cluster URL to advertise to other servers\n"
    "        --connect_retries <number>   For implicit routes, number of connect retries\n"
    "        --cluster_listen <url>       Cluster url from which members can solicit routes\n"
    "\n"
    "Profiling Options:\n"
    "        --profile <port>             Profiling HTTP port\n"
    "\n"
    "Common Options:\n"
    "    -h, --help                       Show this message\n"
    "    -v, --version                    Show version\n"
    "        --help_tls                   TLS help\n"
    "\n"
    "natsd notes:\n"
    "    --version prints \"nats-server: v" NATSD_COMPAT_VERSION "\" (the nats-server release natsd is\n"
    "    compatible with, which client test suites parse) and then \"natsd: v" NATSD_VERSION "\".\n"
    "    Flags of features natsd does not provide yet are accepted and logged as not supported.\n"
    "    natsd --passwd [--cost N] reads a password (twice from a terminal, else one line of\n"
    "    stdin) and prints its bcrypt hash for a config file, as `nats server passwd` does.\n";

static const char tls_help_text[] =
    "\n"
    "TLS configuration is specified in the tls section of a configuration file:\n"
    "\n"
    "e.g.\n"
    "\n"
    "    tls {\n"
    "        cert_file:      \"./certs/server-cert.pem\"\n"
    "        key_file:       \"./certs/server-key.pem\"\n"
    "        ca_file:        \"./certs/ca.pem\"\n"
    "        verify:         true\n"
    "        verify_and_map: true\n"
    "\n"
    "        cipher_suites: [\n"
    "            \"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\",\n"
    "            \"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\"\n"
    "        ]\n"
    "        curve_preferences: [\n"
    "            \"CurveP256\",\n"
    "            \"CurveP384\",\n"
    "            \"CurveP521\"\n"
    "        ]\n"
    "    }\n"
    "\n"
    "natsd serves TLS with OpenSSL: the Go cipher and curve names above map to OpenSSL's.\n";
// clang-format on

enum kind {
    BOOL,    /* bool field */
    STR,     /* char * field */
    INT,     /* int field */
    INT64,   /* int64_t field */
    WORKERS, /* unsigned workers, 0..1024 */
    DV,      /* -DV: debug and trace */
    DVV,     /* -DVV: debug, trace and verbose trace */
    VV,      /* -VV: trace and verbose trace */
    HELP,
    VERSION,
    HELP_TLS,
};

typedef struct flag {
    const char *names; /* space-separated aliases, without dashes */
    enum kind kind;
    size_t off;          /* offsetof the field in nd_opts_t */
    const char *unbuilt; /* the feature, when it is not built yet: warn when given */
} flag_t;

#define F(field) offsetof(nd_opts_t, field)

/* Every flag of nats-server 2.10's ConfigureOptions, plus -w/--workers. -m, --user/--pass/
 * --auth, -js/-sd and --routes/--cluster are stored and reported by the server itself. */
static const flag_t flags[] = {
    {"h help", HELP, 0, NULL},
    {"p port", INT, F(port), NULL},
    {"n name server_name", STR, F(server_name), NULL},
    {"a addr net", STR, F(host), NULL},
    {"client_advertise", STR, F(client_advertise), "Client advertise"},
    {"D debug", BOOL, F(debug), NULL},
    {"V trace", BOOL, F(trace), NULL},
    {"VV", VV, 0, NULL},
    {"DV", DV, 0, NULL},
    {"DVV", DVV, 0, NULL},
    {"T logtime", BOOL, F(logtime), NULL},
    {"logtime_utc", BOOL, F(logtime_utc), NULL},
    {"user", STR, F(user), NULL},
    {"pass", STR, F(pass), NULL},
    {"auth", STR, F(token), NULL},
    {"m http_port", INT, F(http_port), NULL},
    {"ms https_port", INT, F(https_port), NULL}, /* the server warns: needs TLS */
    {"c config", STR, F(config_file), NULL},
    {"t", BOOL, F(check_config), NULL},
    {"sl signal", STR, F(signal), NULL},
    {"P pid", STR, F(pid_file), NULL},
    {"ports_file_dir", STR, F(ports_file_dir), NULL},
    {"l log", STR, F(log_file), NULL},
    {"log_size_limit", INT64, F(log_size_limit), NULL},
    {"s syslog", BOOL, F(syslog), NULL},
    {"r remote_syslog", STR, F(remote_syslog), NULL},
    {"v version", VERSION, 0, NULL},
    {"profile", INT, F(prof_port), "Profiling"},
    {"routes", STR, F(routes), NULL},
    {"cluster cluster_listen", STR, F(cluster_url), NULL},
    {"cluster_advertise", STR, F(cluster_advertise), NULL},
    {"no_advertise", BOOL, F(cluster_no_advertise), NULL},
    {"connect_retries", INT, F(cluster_connect_retries), NULL},
    {"cluster_name", STR, F(cluster_name), NULL},
    {"help_tls", HELP_TLS, 0, NULL},
    {"tls", BOOL, F(tls), NULL},
    {"tlsverify", BOOL, F(tls_verify), NULL},
    {"tlscert", STR, F(tls_cert), NULL},
    {"tlskey", STR, F(tls_key), NULL},
    {"tlscacert", STR, F(tls_ca_cert), NULL},
    {"max_traced_msg_len", INT64, F(max_traced_msg_len), NULL},
    {"js jetstream", BOOL, F(jetstream), NULL},
    {"sd store_dir", STR, F(store_dir), NULL},
    {"w workers worker_threads", WORKERS, F(workers), NULL},
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
usage(void)
{
    fputs(usage_text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

/* Go's strconv.ParseBool. */
static bool
parse_go_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(v, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(v, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* Go's strconv.ParseInt(s, 0, 64): optional sign, then a 0x/0o/0b prefix or a leading 0 for
 * octal (underscores between digits are allowed only after such a prefix, as in Go).
 * Returns: NULL, or Go's error word ("parse error", "value out of range"). */
static const char *
parse_go_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    int base = 10;
    bool prefixed = false;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16, p += 2, prefixed = true;
    } else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
        base = 8, p += 2, prefixed = true;
    } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        base = 2, p += 2, prefixed = true;
    } else if (p[0] == '0' && p[1] != '\0') {
        base = 8, p += 1, prefixed = true;
    }
    if (*p == '\0')
        return "parse error";
    unsigned long long v = 0;
    bool range = false, last_us = true;
    for (; *p; p++) {
        if (*p == '_' && prefixed && !last_us) {
            last_us = true;
            continue;
        }
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'z')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'Z')
            d = *p - 'A' + 10;
        else
            return "parse error";
        if (d >= base)
            return "parse error";
        last_us = false;
        if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base)
            range = true;
        else
            v = v * (unsigned)base + (unsigned)d;
    }
    if (last_us && prefixed && p[-1] == '_')
        return "parse error";
    if (range || v > (unsigned long long)INT64_MAX + (neg ? 1 : 0))
        return "value out of range";
    int64_t r = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (r < min || r > max)
        return "value out of range";
    *out = r;
    return NULL;
}

/* Go's %q for the texts of flag errors: double quotes, with \" \\ and control bytes escaped. */
static void
go_quote(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* Adds the warning for a flag of a feature natsd does not build yet: the config file's text
 * (opts_conf.c feature_warnings), once per feature even when the file configures it too. */
static void
warn_unbuilt(nd_opts_t *o, const char *feature)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s is configured but not supported yet by natsd: ignored", feature);
    if (o->config_warnings != NULL && strstr(o->config_warnings, buf) != NULL)
        return;
    size_t old = o->config_warnings ? strlen(o->config_warnings) : 0, add = strlen(buf);
    o->config_warnings = nd_xrealloc(o->config_warnings, old + add + 2);
    if (old)
        o->config_warnings[old++] = '\n';
    memcpy(o->config_warnings + old, buf, add + 1);
}

/* What one pass over the flags found besides the options themselves. */
typedef struct seen {
    bool help, version, help_tls;
    bool dv_set, dvv_set, vv_set;
    bool dv, dvv, vv;
    int first_arg; /* index of the first non-flag argument, or argc */
} seen_t;

/* Reports a flag error the way Go's FlagSet does with nats-server's usage function: the error
 * on stderr, the usage on stdout. Returns: 2 (nats-server then exits 0). */
static int
flag_error(void)
{
    fflush(stderr);
    usage();
    return 2;
}

/* One pass of Go's FlagSet.Parse over argv. Returns: 0, or 2 after a flag error. */
static int
parse_flags(nd_opts_t *o, int argc, char **argv, seen_t *seen)
{
    memset(seen, 0, sizeof *seen);
    int i = 1;
    for (; i < argc; i++) {
        const char *s = argv[i];
        if (strlen(s) < 2 || s[0] != '-')
            break;
        int minuses = 1;
        if (s[1] == '-') {
            minuses = 2;
            if (s[2] == '\0') {
                i++; /* "--" ends the flags */
                break;
            }
        }
        const char *name = s + minuses;
        if (name[0] == '\0' || name[0] == '-' || name[0] == '=') {
            fprintf(stderr, "bad flag syntax: %s\n", s);
            return flag_error();
        }
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const char *val = eq ? eq + 1 : NULL;
        const flag_t *f = NULL;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !f; k++)
            if (name_in(flags[k].names, name, len))
                f = &flags[k];
        if (f == NULL) {
            fprintf(stderr, "flag provided but not defined: -%.*s\n", (int)len, name);
            return flag_error();
        }
        bool is_bool = f->kind == BOOL || f->kind == DV || f->kind == DVV || f->kind == VV ||
                       f->kind == HELP || f->kind == VERSION || f->kind == HELP_TLS;
        if (is_bool) {
            bool b = true;
            if (val != NULL && !parse_go_bool(val, &b)) {
                fprintf(stderr, "invalid boolean value ");
                go_quote(stderr, val);
                fprintf(stderr, " for -%.*s: parse error\n", (int)len, name);
                return flag_error();
            }
            switch (f->kind) {
            case BOOL:
                *(bool *)((char *)o + f->off) = b;
                break;
            case DV:
                seen->dv_set = true, seen->dv = b;
                break;
            case DVV:
                seen->dvv_set = true, seen->dvv = b;
                break;
            case VV:
                seen->vv_set = true, seen->vv = b;
                break;
            case HELP:
                seen->help = b;
                break;
            case VERSION:
                seen->version = b;
                break;
            case HELP_TLS:
                seen->help_tls = b;
                break;
            default:
                break;
            }
            if (f->unbuilt && b)
                warn_unbuilt(o, f->unbuilt);
            continue;
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "flag needs an argument: -%.*s\n", (int)len, name);
                return flag_error();
            }
            val = argv[++i];
        }
        if (f->kind == STR) {
            char **dst = (char **)((char *)o + f->off);
            nd_free(*dst);
            *dst = nd_xstrdup(val);
        } else {
            int64_t min = INT32_MIN, max = INT32_MAX, v = 0;
            if (f->kind == INT64)
                min = INT64_MIN, max = INT64_MAX;
            else if (f->kind == WORKERS)
                min = 0, max = 1024;
            const char *why = parse_go_int(val, min, max, &v);
            if (why != NULL) {
                fprintf(stderr, "invalid value ");
                go_quote(stderr, val);
                fprintf(stderr, " for flag -%.*s: %s\n", (int)len, name, why);
                return flag_error();
            }
            if (f->kind == INT64)
                *(int64_t *)((char *)o + f->off) = v;
            else if (f->kind == WORKERS)
                o->workers = (unsigned)v;
            else
                *(int *)((char *)o + f->off) = (int)v;
        }
        if (f->unbuilt)
            warn_unbuilt(o, f->unbuilt);
    }
    seen->first_arg = i;
    /* Go's Visit order is lexicographic: DV, DVV, VV. */
    if (seen->dv_set)
        o->debug = o->trace = seen->dv;
    if (seen->dvv_set)
        o->debug = o->trace = o->trace_verbose = seen->dvv;
    if (seen->vv_set)
        o->trace = o->trace_verbose = seen->vv;
    return 0;
}

static void
print_version(void)
{
    printf("nats-server: v%s\nnatsd: v%s\n", NATSD_COMPAT_VERSION, NATSD_VERSION);
    fflush(stdout);
}

/* nats-server's order (ConfigureOptions): flags (usage errors first), -v/-h/--help_tls, the
 * leftover `version`/`help` command, -sl, then the config file with the flags parsed again
 * over it. The second pass cannot fail: the first one saw the same arguments. */
int
nd_opts_parse_args(nd_opts_t *o, int argc, char **argv)
{
    seen_t seen;
    int rc = parse_flags(o, argc, argv, &seen);
    if (rc != 0)
        return rc;
    if (seen.version) {
        print_version();
        return 2;
    }
    if (seen.help) {
        usage();
        return 2;
    }
    if (seen.help_tls) {
        fputs(tls_help_text, stdout);
        fflush(stdout);
        return 2;
    }
    if (seen.first_arg < argc) {
        const char *cmd = argv[seen.first_arg];
        if (strcasecmp(cmd, "version") == 0) {
            print_version();
            return 2;
        }
        if (strcasecmp(cmd, "help") == 0) {
            usage();
            return 2;
        }
        fprintf(stderr, "nats-server: unrecognized command: ");
        go_quote(stderr, cmd);
        fputc('\n', stderr);
        return 1;
    }
    if (o->signal != NULL && o->signal[0] != '\0')
        return ND_OPTS_SIGNAL; /* the caller sends it (server/sigctl.h) */
    if (o->config_file == NULL || o->config_file[0] == '\0') {
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
    rc = parse_flags(o, argc, argv, &seen);
    nd_opts_baseline(o); /* over the flags too, as nats-server's NewServer does */
    bool check = o->check_config;
    if (crc < 0 || (crc > 0 && check)) {
        fprintf(stderr, "nats-server: %s\n", err);
        rc = 1;
    } else if (rc == 0 && check) {
        /* natsd's own addition: what the file configures that natsd would ignore (the features
         * it has not built) is said here too, not only in the log of a real start, so a
         * config check does not pass a file whose features silently do nothing. */
        for (const char *p = o->config_warnings; p != NULL && *p;) {
            const char *e = strchr(p, '\n');
            int n = e ? (int)(e - p) : (int)strlen(p);
            fprintf(stderr, "nats-server: warning: %.*s\n", n, p);
            p = e ? e + 1 : p + n;
        }
        fprintf(stderr, "nats-server: configuration file %s is valid\n", path);
        rc = 2;
    }
    nd_free(path);
    return rc;
}

int
nd_opts_apply_flags(nd_opts_t *o, int argc, char **argv)
{
    seen_t seen;
    return parse_flags(o, argc, argv, &seen);
}

nd_log_cfg_t
nd_opts_log_cfg(const nd_opts_t *o)
{
    return (nd_log_cfg_t){.debug = o->debug,
                          .trace = o->trace || o->trace_verbose,
                          .logtime = o->logtime,
                          .utc = o->logtime_utc,
                          .syslog = o->syslog,
                          .file = o->log_file,
                          .size_limit = o->log_size_limit,
                          .max_num = o->log_max_num,
                          .remote_syslog = o->remote_syslog};
}

int
nd_opts_configure_log(const nd_opts_t *o, char *err, size_t errlen)
{
    nd_log_cfg_t c = nd_opts_log_cfg(o);
    return nd_log_configure(&c, err, errlen);
}
