/* Configuration files -> server options: maps the top-level keys of a parsed nats-server config
 * (src/net/conf.h) onto nd_opts_t.
 *
 * Algorithm: walk the root map's entries in written order (a later key overrides an earlier
 * one, e.g. `listen` then `port`); each key is looked up, ignoring case as nats-server does, in
 * a table of keys natsd implements (with nats-server's aliases), then in a table of known keys
 * whose features natsd lacks (accepted, reported as warnings), and anything else is fatal with
 * nats-server's `unknown field` text unless the key was only used as a $variable.
 *
 * Positions: nats-server 2.9.10's lexer counts columns from the previous newline character, so
 * on line 1 its columns are 0-based and on later lines they are 1-based; the parser here gives
 * 1-based columns, so we print col - 1 on line 1 only, which reproduces its texts exactly.
 * Type errors copy Go's `interface conversion` text, as the reference prints it.
 *
 * Durations follow Go's time.ParseDuration; an integer means seconds, which nats-server accepts
 * with a warning ("... should be converted to a duration") that makes `-t` fail.
 * References: nats-server 2.9.10 server/opts.go (processConfigFileLine, parseDuration),
 * shared/spec/nats-server-inventory.md §2.1-§2.3.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "natsd/alloc.h"
#include "natsd/opts.h"
#include "net/conf.h"
#include "net/log.h"

/* Known nats-server top-level keys whose features natsd does not build yet. */
static const char *const unsupported_keys[] = {
    "client_advertise", "server_tags", "ports_file_dir", "http", "https", "http_port",
    "monitor_port", "https_port", "http_base_path", "max_sub_tokens", "max_subscription_tokens",
    "write_timeout", "lame_duck_duration", "lame_duck_grace_period", "max_closed_clients",
    "max_traced_msg_len", "disable_sublist_cache", "no_sublist_cache", "trace_verbose",
    "trace_headers", "logtime_utc", "logfile_size_limit", "log_size_limit", "logfile_max_num",
    "log_max_num", "syslog", "remote_syslog", "authorization", "accounts", "no_auth_user",
    "system_account", "system", "no_system_account", "operator", "operators", "roots", "trusted",
    "trusted_keys", "resolver", "resolver_tls", "resolver_preload", "resolver_pinned_accounts",
    "default_sentinel", "mappings", "maps", "tls", "allow_non_tls", "ocsp", "ocsp_cache",
    "cluster", "gateway", "leaf", "leafnodes", "websocket", "ws", "mqtt",
    "connect_error_reports", "reconnect_error_reports", "jetstream", "store_dir", "storedir",
    "default_js_domain", "prof_port", "prof_block_rate",
};

/* Collects the error or warning being built, and the warnings so far. */
typedef struct apply {
    nd_opts_t *o;
    char *err;
    size_t errlen;
    char *warns; /* newline-separated, owned */
    size_t nwarns;
    char first_strict[512]; /* first warning that makes nats-server's -t fail */
    const char *file;       /* the key being applied: nats-server reports value errors there */
    int line, col;
} apply_t;

static int
print_col(int line, int col)
{
    return line == 1 && col > 0 ? col - 1 : col;
}

static int
fail(apply_t *a, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int
fail(apply_t *a, const char *file, int line, int col, const char *fmt, ...)
{
    int n = snprintf(a->err, a->errlen, "%s:%d:%d: ", file, line, print_col(line, col));
    if (n < 0 || (size_t)n >= a->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->err + n, a->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static void
warn(apply_t *a, bool strict, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void
warn(apply_t *a, bool strict, const char *file, int line, int col, const char *fmt, ...)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s:%d:%d: ", file, line, print_col(line, col));
    if (n < 0 || (size_t)n >= sizeof buf)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (strict && a->first_strict[0] == '\0')
        snprintf(a->first_strict, sizeof a->first_strict, "%s", buf);
    size_t old = a->warns ? strlen(a->warns) : 0, add = strlen(buf);
    a->warns = nd_xrealloc(a->warns, old + add + 2);
    if (old)
        a->warns[old++] = '\n';
    memcpy(a->warns + old, buf, add + 1);
    a->nwarns++;
}

/* Go's name for the dynamic type nats-server's parser gives a node, for its type-error texts. */
static const char *
go_type(nd_cfg_type_t t)
{
    switch (t) {
    case ND_CFG_MAP:
        return "map[string]interface {}";
    case ND_CFG_ARRAY:
        return "[]interface {}";
    case ND_CFG_STRING:
        return "string";
    case ND_CFG_INT:
        return "int64";
    case ND_CFG_FLOAT:
        return "float64";
    case ND_CFG_BOOL:
        return "bool";
    case ND_CFG_DATETIME:
        return "time.Time";
    }
    return "?";
}

static int
type_err(apply_t *a, const nd_cfg_node_t *v, nd_cfg_type_t want)
{
    return fail(a, a->file, a->line, a->col, "interface conversion: interface {} is %s, not %s",
                go_type(v->type), go_type(want));
}

/* Parses a Go duration string (time.ParseDuration) into nanoseconds.
 * Returns: NULL on success, else a static description in Go's words (without the quoted text). */
static const char *
parse_go_duration(const char *s, int64_t *out_ns, char *unit, size_t unitlen)
{
    static const struct {
        const char *name;
        double ns;
    } units[] = {
        {"ns", 1},   {"us", 1e3},  {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
        {"ms", 1e6}, {"s", 1e9},   {"m", 60e9},        {"h", 3600e9},
    };
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (strcmp(p, "0") == 0) {
        *out_ns = 0;
        return NULL;
    }
    if (*p == '\0')
        return "invalid duration";
    double total = 0;
    while (*p) {
        const char *start = p;
        double v = 0, scale = 1;
        bool digits = false;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            digits = true;
        }
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                scale /= 10;
                v += (*p++ - '0') * scale;
                digits = true;
            }
        }
        if (!digits || start == p)
            return "invalid duration";
        const char *u = p;
        while (*p && *p != '.' && (*p < '0' || *p > '9'))
            p++;
        size_t ul = (size_t)(p - u);
        if (ul == 0)
            return "missing unit in duration";
        double mult = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].name) == ul && strncmp(units[i].name, u, ul) == 0)
                mult = units[i].ns;
        if (mult == 0) {
            snprintf(unit, unitlen, "%.*s", (int)ul, u);
            return "unknown unit";
        }
        total += v * mult;
        if (total > 9.2e18)
            return "invalid duration";
    }
    *out_ns = (int64_t)(neg ? -total : total);
    return NULL;
}

static int
get_duration_ms(apply_t *a, const char *key, const nd_cfg_node_t *v, int64_t *out_ms)
{
    if (v->type == ND_CFG_INT) {
        /* Backward compatible with old configs: seconds, with nats-server's warning. */
        warn(a, true, a->file, a->line, a->col,
             "invalid use of field \"%s\": %s should be converted to a duration", key, key);
        if (v->u.i > INT64_MAX / 1000 || v->u.i < INT64_MIN / 1000)
            return fail(a, a->file, a->line, a->col, "error parsing %s: value out of range", key);
        *out_ms = v->u.i * 1000;
        return 0;
    }
    if (v->type != ND_CFG_STRING)
        return fail(a, a->file, a->line, a->col, "error parsing %s: wrong type %s", key,
                    nd_cfg_type_name(v->type));
    int64_t ns;
    char unit[64] = "";
    const char *why = parse_go_duration(v->u.str.s, &ns, unit, sizeof unit);
    if (why != NULL && unit[0])
        return fail(a, a->file, a->line, a->col, "error parsing %s: time: %s \"%s\" in duration \"%s\"",
                    key, why, unit, v->u.str.s);
    if (why != NULL && strcmp(why, "invalid duration") != 0)
        return fail(a, a->file, a->line, a->col, "error parsing %s: time: %s \"%s\"", key, why,
                    v->u.str.s);
    if (why != NULL)
        return fail(a, a->file, a->line, a->col, "error parsing %s: time: invalid duration \"%s\"",
                    key, v->u.str.s);
    *out_ms = ns / 1000000;
    return 0;
}

static int
get_int(apply_t *a, const char *key, const nd_cfg_node_t *v, int64_t min, int64_t max,
        int64_t *out)
{
    if (v->type != ND_CFG_INT)
        return type_err(a, v, ND_CFG_INT);
    if (v->u.i < min || v->u.i > max)
        return fail(a, a->file, a->line, a->col, "invalid value %lld for %s: out of range [%lld, %lld]",
                    (long long)v->u.i, key, (long long)min, (long long)max);
    *out = v->u.i;
    return 0;
}

static void
set_str(char **dst, const char *s)
{
    nd_free(*dst);
    *dst = nd_xstrdup(s);
}

/* Splits "host:port" as Go's net.SplitHostPort does ("[v6]:port" included). */
static int
apply_listen(apply_t *a, const nd_cfg_node_t *v)
{
    if (v->type != ND_CFG_STRING)
        return type_err(a, v, ND_CFG_STRING);
    const char *s = v->u.str.s, *colon = strrchr(s, ':');
    char host[256];
    if (colon == NULL || (size_t)(colon - s) >= sizeof host)
        return fail(a, a->file, a->line, a->col, "could not parse address string \"%s\"", s);
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hl < 2 || s[hl - 1] != ']')
            return fail(a, a->file, a->line, a->col, "could not parse address string \"%s\"", s);
        memcpy(host, s + 1, hl - 2);
        host[hl - 2] = '\0';
    } else {
        if (memchr(s, ':', hl) != NULL)
            return fail(a, a->file, a->line, a->col, "could not parse address string \"%s\"", s);
        memcpy(host, s, hl);
        host[hl] = '\0';
    }
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno != 0 || port < -1 || port > 65535)
        return fail(a, a->file, a->line, a->col, "could not parse port \"%s\"", colon + 1);
    set_str(&a->o->host, host);
    a->o->port = (int)port;
    return 0;
}

static bool
key_is(const char *key, const char *names)
{
    const char *p = names;
    size_t kl = strlen(key);
    while (*p) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == kl && strncasecmp(p, key, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

/* Returns: 1 when the key is one natsd implements (applied, 0 -> -1 on error), 0 when not. */
static int
apply_known(apply_t *a, const nd_cfg_entry_t *e)
{
    nd_opts_t *o = a->o;
    const nd_cfg_node_t *v = e->val;
    const char *k = e->key;
    int64_t i;
    int rc = 0;
    if (key_is(k, "host net")) {
        if (v->type != ND_CFG_STRING)
            return type_err(a, v, ND_CFG_STRING);
        set_str(&o->host, v->u.str.s);
    } else if (key_is(k, "server_name")) {
        if (v->type != ND_CFG_STRING)
            return type_err(a, v, ND_CFG_STRING);
        set_str(&o->server_name, v->u.str.s);
    } else if (key_is(k, "logfile log_file")) {
        if (v->type != ND_CFG_STRING)
            return type_err(a, v, ND_CFG_STRING);
        set_str(&o->log_file, v->u.str.s);
    } else if (key_is(k, "pidfile pid_file")) {
        if (v->type != ND_CFG_STRING)
            return type_err(a, v, ND_CFG_STRING);
        set_str(&o->pid_file, v->u.str.s);
    } else if (key_is(k, "listen")) {
        rc = apply_listen(a, v);
    } else if (key_is(k, "port")) {
        if ((rc = get_int(a, "port", v, -1, 65535, &i)) == 0)
            o->port = (int)i;
    } else if (key_is(k, "max_payload")) {
        if ((rc = get_int(a, "max_payload", v, 0, INT32_MAX, &i)) == 0)
            o->max_payload = i;
    } else if (key_is(k, "max_control_line")) {
        if ((rc = get_int(a, "max_control_line", v, 0, INT32_MAX, &i)) == 0)
            o->max_control_line = (int32_t)i;
    } else if (key_is(k, "max_connections max_conn")) {
        if ((rc = get_int(a, "max_connections", v, 0, INT32_MAX, &i)) == 0)
            o->max_connections = (int32_t)i;
    } else if (key_is(k, "max_subscriptions max_subs")) {
        if ((rc = get_int(a, "max_subscriptions", v, 0, INT32_MAX, &i)) == 0)
            o->max_subscriptions = (int32_t)i;
    } else if (key_is(k, "max_pending")) {
        if ((rc = get_int(a, "max_pending", v, 0, INT64_MAX, &i)) == 0)
            o->max_pending = i;
    } else if (key_is(k, "ping_max")) {
        if ((rc = get_int(a, "ping_max", v, 0, INT32_MAX, &i)) == 0)
            o->ping_max = (int32_t)i;
    } else if (key_is(k, "ping_interval")) {
        rc = get_duration_ms(a, "ping_interval", v, &o->ping_interval_ms);
    } else if (key_is(k, "write_deadline")) {
        rc = get_duration_ms(a, "write_deadline", v, &o->write_deadline_ms);
    } else {
        static const struct {
            const char *names;
            size_t off;
        } bools[] = {
            {"debug", offsetof(nd_opts_t, debug)},
            {"trace", offsetof(nd_opts_t, trace)},
            {"logtime", offsetof(nd_opts_t, logtime)},
            {"no_header_support", offsetof(nd_opts_t, no_header_support)},
            {"no_fast_producer_stall", offsetof(nd_opts_t, no_fast_producer_stall)},
        };
        for (size_t b = 0; b < sizeof bools / sizeof bools[0]; b++) {
            if (!key_is(k, bools[b].names))
                continue;
            if (v->type != ND_CFG_BOOL)
                return type_err(a, v, ND_CFG_BOOL);
            *(bool *)((char *)o + bools[b].off) = v->u.b;
            return 1;
        }
        return 0;
    }
    return rc < 0 ? -1 : 1;
}

static int
apply_root(apply_t *a, const nd_cfg_node_t *root)
{
    for (size_t n = 0; n < root->u.map.n; n++) {
        const nd_cfg_entry_t *e = &root->u.map.e[n];
        a->file = e->val ? e->val->file : root->file;
        a->line = e->line;
        a->col = e->col;
        int rc = apply_known(a, e);
        if (rc < 0)
            return -1;
        if (rc > 0)
            continue;
        bool known = false;
        for (size_t u = 0; u < sizeof unsupported_keys / sizeof unsupported_keys[0]; u++)
            known = known || strcasecmp(unsupported_keys[u], e->key) == 0;
        const char *file = a->file;
        if (known)
            warn(a, false, file, e->line, e->col, "\"%s\" is not supported by natsd yet; ignored",
                 e->key);
        else if (!e->used_as_var)
            return fail(a, file, e->line, e->col, "unknown field \"%s\"", e->key);
    }
    if (a->o->max_payload > a->o->max_pending) {
        snprintf(a->err, a->errlen, "max_payload (%lld) cannot be higher than max_pending (%lld)",
                 (long long)a->o->max_payload, (long long)a->o->max_pending);
        return -1;
    }
    return 0;
}

int
nd_opts_apply_config(nd_opts_t *o, const char *path, char *err, size_t errlen)
{
    nd_cfg_node_t *root = NULL;
    nd_cfg_err_t perr;
    if (!nd_cfg_parse_file(path, &root, &perr)) {
        snprintf(err, errlen, "%s", perr.text);
        return -1;
    }
    apply_t a = {.o = o, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    int rc = apply_root(&a, root);
    nd_cfg_free(root);
    if (rc == 0 && a.first_strict[0] != '\0') {
        snprintf(err, errlen, "%s", a.first_strict);
        rc = 1;
    }
    if (rc >= 0 && a.warns) {
        nd_free(o->config_warnings);
        o->config_warnings = a.warns;
    } else {
        nd_free(a.warns);
    }
    return rc;
}

void
nd_opts_log_config_warnings(const nd_opts_t *o)
{
    const char *p = o->config_warnings;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        int n = e ? (int)(e - p) : (int)strlen(p);
        nd_log_warn("%.*s", n, p);
        p = e ? e + 1 : p + n;
    }
}
