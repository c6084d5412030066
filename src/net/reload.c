/* Config reload, as nats-server's Server.Reload does it (server/reload.go).
 *
 * Steps: read the file into fresh defaults (nd_opts_apply_config), re-apply the command-line
 * flags over it (flags win, as at start), validate, then compare every option with the options in
 * force, in the order of nats-server's Options struct (which is the order its log lines come in).
 * A changed option is either reloadable (applied, and logged as "Reloaded: <name> = <value>") or
 * not, in which case the whole reload is refused with nats-server's text
 * "config reload not supported for <GoField>: old=<v>, new=<v>" and nothing changes. A file that
 * does not parse changes nothing either. Both failures are logged as
 * "Failed to reload server configuration: <why>", the line nats-server's signal handler logs.
 *
 * How live values reach the connections (which run on every worker):
 *  - the scalar limits connections read (max_payload, max_control_line, max_connections,
 *    ping_interval, ping_max, write_deadline, no_fast_producer_stall) live in nd_server_live_t as
 *    relaxed atomics: on the message path a relaxed load is a plain load, and no reader needs two
 *    of them to come from the same reload. A generation counter tells a connection to refresh what
 *    it caches (its parser's limits on the next read, its ping period on the next tick), so no
 *    message has to be sent to every connection;
 *  - the INFO template (which carries max_payload) is an immutable buffer swapped with a release
 *    store and retired through the pool's epoch, so a connection copies it inside an epoch
 *    section and never sees it freed (server.c, conn.c);
 *  - debug/trace/logtime and the log sink are the log module's own (nd_log_configure);
 *  - a new pid_file is written, as nats-server does (the ports file is not rewritten yet).
 * The non-reloadable options never change, so s->opts stays immutable for them; the reload
 * state below keeps the full set of options in force, for the next comparison.
 *
 * Authorization (users, passwords, tokens, permissions, accounts) is reloadable in nats-server;
 * the user/pass/token fields are compared and logged here, and apply_auth() is where the auth
 * issue swaps its user table and re-checks connected clients (reloadAuthorization).
 *
 * Not compared yet: the insides of nested blocks (cluster, gateway, leafnodes, websocket, mqtt,
 * tls, accounts, users, resolver): only whether a block is present. Their features are not built;
 * the issues that build them extend the table (nats-server refuses gateway/websocket changes and
 * cluster host/port changes, and reloads the rest).
 */
#include "reload.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "log.h"
#include "opts_parse.h"
#include "natsd/alloc.h"
#include "pidfile.h"

typedef struct nd_reload {
    pthread_mutex_t mu;
    /* under mu */
    nd_opts_t cur; /* the options in force */
    int argc;
    char **argv;
} nd_reload_t;

/* How a changed option is handled. */
typedef enum {
    H_REFUSE, /* not reloadable: the reload fails */
    H_LIVE,   /* a limit in s->live */
    H_LOG,    /* the log module's */
    H_AUTH,   /* authorization: apply_auth() */
    H_KEEP,   /* accepted and kept (nothing running uses it yet) */
    H_QUIET,  /* accepted without a log line (features natsd does not run) */
} how_t;

typedef enum {
    T_BOOL,
    T_INT,
    T_I32,
    T_I64,
    T_UINT,
    T_DUR,
    T_STR,
    T_DBL,
    T_STRLIST,
    T_PTR,
    T_PORT,    /* compared with the bound port: see port_changed */
    T_CLUSTER, /* only its listen host and port: see cluster_refused */
} type_t;

typedef struct field {
    const char *go;   /* nats-server's Options field, for the refusal text */
    const char *text; /* "Reloaded: <text> = <v>"; a text without "%" is logged alone */
    size_t off;
    type_t type;
    how_t how;
} field_t;

#define F(name) offsetof(nd_opts_t, name)

/* In the order of nats-server's Options struct. */
static const field_t fields[] = {
    {"ServerName", NULL, F(server_name), T_STR, H_REFUSE},
    {"Host", NULL, F(host), T_STR, H_REFUSE},
    {"Port", NULL, F(port), T_PORT, H_REFUSE},
    {"ClientAdvertise", "Reload: client_advertise = %s", F(client_advertise), T_STR, H_KEEP},
    {"Trace", "Reloaded: trace = %s", F(trace), T_BOOL, H_LOG},
    {"Debug", "Reloaded: debug = %s", F(debug), T_BOOL, H_LOG},
    {"TraceVerbose", "Reloaded: trace_verbose = %s", F(trace_verbose), T_BOOL, H_LOG},
    {"NoSublistCache", NULL, F(disable_sublist_cache), T_BOOL, H_REFUSE},
    {"NoHeaderSupport", NULL, F(no_header_support), T_BOOL, H_REFUSE},
    {"Logtime", "Reloaded: logtime = %s", F(logtime), T_BOOL, H_LOG},
    {"LogtimeUTC", "Reloaded: logtime_utc = %s", F(logtime_utc), T_BOOL, H_LOG},
    {"MaxConn", "Reloaded: max_connections = %s", F(max_connections), T_I32, H_LIVE},
    {"MaxSubs", NULL, F(max_subscriptions), T_I32, H_REFUSE},
    {"MaxSubTokens", NULL, F(max_sub_tokens), T_INT, H_REFUSE},
    {"NoAuthUser", NULL, F(no_auth_user), T_STR, H_REFUSE},
    {"SystemAccount", NULL, F(system_account), T_STR, H_REFUSE},
    {"NoSystemAccount", NULL, F(no_system_account), T_BOOL, H_REFUSE},
    {"Username", "Reloaded: authorization username", F(user), T_STR, H_AUTH},
    {"Password", "Reloaded: authorization password", F(pass), T_STR, H_AUTH},
    {"Authorization", "Reloaded: authorization token", F(token), T_STR, H_AUTH},
    {"PingInterval", "Reloaded: ping_interval = %s", F(ping_interval_ms), T_DUR, H_LIVE},
    {"MaxPingsOut", "Reloaded: ping_max = %s", F(ping_max), T_I32, H_LIVE},
    {"HTTPHost", NULL, F(http_host), T_STR, H_REFUSE},
    {"HTTPPort", NULL, F(http_port), T_INT, H_REFUSE},
    {"HTTPBasePath", NULL, F(http_base_path), T_STR, H_REFUSE},
    {"HTTPSPort", NULL, F(https_port), T_INT, H_REFUSE},
    {"AuthTimeout", "Reloaded: authorization timeout = %s", F(auth_timeout_s), T_DBL, H_AUTH},
    {"MaxControlLine", "Reloaded: max_control_line = %s", F(max_control_line), T_I32, H_LIVE},
    {"MaxPayload", "Reloaded: max_payload = %s", F(max_payload), T_I64, H_LIVE},
    {"MaxPending", NULL, F(max_pending), T_I64, H_REFUSE},
    {"Cluster", NULL, F(cluster), T_CLUSTER, H_QUIET},
    {"Gateway", NULL, F(gateway), T_PTR, H_REFUSE},
    {"LeafNode", NULL, F(leaf), T_PTR, H_REFUSE},
    /* JetStream is not built: enabling it or moving its store is accepted and kept. */
    {"JetStream", NULL, F(jetstream), T_BOOL, H_QUIET},
    {"StoreDir", NULL, F(store_dir), T_STR, H_QUIET},
    {"Websocket", NULL, F(ws), T_PTR, H_REFUSE},
    {"MQTT", NULL, F(mqtt), T_PTR, H_REFUSE},
    {"ProfPort", NULL, F(prof_port), T_INT, H_REFUSE},
    {"PidFile", "Reloaded: pid_file = %s", F(pid_file), T_STR, H_KEEP},
    {"PortsFileDir", "Reloaded: ports_file_dir = %s", F(ports_file_dir), T_STR, H_KEEP},
    {"LogFile", "Reloaded: log_file = %s", F(log_file), T_STR, H_LOG},
    {"LogSizeLimit", NULL, F(log_size_limit), T_I64, H_REFUSE},
    {"LogMaxFiles", NULL, F(log_max_num), T_I64, H_REFUSE},
    {"Syslog", "Reloaded: syslog = %s", F(syslog), T_BOOL, H_LOG},
    {"RemoteSyslog", "Reloaded: remote_syslog = %s", F(remote_syslog), T_STR, H_LOG},
    {"WriteDeadline", "Reloaded: write_deadline = %s", F(write_deadline_ms), T_DUR, H_LIVE},
    {"MaxClosedClients", NULL, F(max_closed_clients), T_INT, H_REFUSE},
    {"LameDuckDuration", NULL, F(lame_duck_duration_ms), T_DUR, H_REFUSE},
    {"LameDuckGracePeriod", NULL, F(lame_duck_grace_period_ms), T_DUR, H_REFUSE},
    {"MaxTracedMsgLen", "Reloaded: max_traced_msg_len = %s", F(max_traced_msg_len), T_I64, H_KEEP},
    {"ConnectErrorReports", "Reloaded: connect_error_reports = %s", F(connect_error_reports), T_INT,
     H_KEEP},
    {"ReconnectErrorReports", "Reloaded: reconnect_error_reports = %s", F(reconnect_error_reports),
     T_INT, H_KEEP},
    {"Tags", "Reloaded: tags", F(server_tags), T_STRLIST, H_KEEP},
    {"NoFastProducerStall", "Reloaded: no_fast_producer_stall = %s", F(no_fast_producer_stall),
     T_BOOL, H_LIVE},
    /* natsd's own: the pool is sized once. */
    {"Workers", NULL, F(workers), T_UINT, H_REFUSE},
};

#define FIELD(o, f) ((const char *)(o) + (f)->off)

/* Go's %v of the field's value. */
static void
format_value(const field_t *f, const nd_opts_t *o, char *buf, size_t len)
{
    const char *p = FIELD(o, f);
    switch (f->type) {
    case T_BOOL:
        snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false");
        break;
    case T_INT:
    case T_PORT:
        snprintf(buf, len, "%d", *(const int *)p);
        break;
    case T_I32:
        snprintf(buf, len, "%d", (int)*(const int32_t *)p);
        break;
    case T_I64:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)p);
        break;
    case T_UINT:
        snprintf(buf, len, "%u", *(const unsigned *)p);
        break;
    case T_DUR:
        nd_cfg_go_dur_string(*(const int64_t *)p, buf, len);
        break;
    case T_STR: {
        const char *s = *(char *const *)p;
        snprintf(buf, len, "%s", s ? s : "");
        break;
    }
    case T_DBL:
        snprintf(buf, len, "%g", *(const double *)p);
        break;
    case T_STRLIST: {
        const nd_strlist_t *l = (const nd_strlist_t *)p;
        size_t n = (size_t)snprintf(buf, len, "[");
        for (size_t i = 0; i < l->n && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", l->v[i]);
        if (n < len)
            snprintf(buf + n, len - n, "]");
        break;
    }
    case T_CLUSTER:
    case T_PTR:
        /* Only presence is compared (see the top of the file). */
        snprintf(buf, len, "%s", *(void *const *)p ? "{...}" : "{}");
        break;
    }
}

static bool
same_str(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return (a == NULL || *a == '\0') && (b == NULL || *b == '\0');
    return strcmp(a, b) == 0;
}

static bool
field_equal(const field_t *f, const nd_opts_t *a, const nd_opts_t *b)
{
    const char *pa = FIELD(a, f), *pb = FIELD(b, f);
    switch (f->type) {
    case T_BOOL:
        return *(const bool *)pa == *(const bool *)pb;
    case T_INT:
        return *(const int *)pa == *(const int *)pb;
    case T_I32:
        return *(const int32_t *)pa == *(const int32_t *)pb;
    case T_I64:
    case T_DUR:
        return *(const int64_t *)pa == *(const int64_t *)pb;
    case T_UINT:
        return *(const unsigned *)pa == *(const unsigned *)pb;
    case T_STR:
        return same_str(*(char *const *)pa, *(char *const *)pb);
    case T_DBL:
        return *(const double *)pa == *(const double *)pb;
    case T_STRLIST: {
        const nd_strlist_t *la = (const nd_strlist_t *)pa, *lb = (const nd_strlist_t *)pb;
        if (la->n != lb->n)
            return false;
        for (size_t i = 0; i < la->n; i++)
            if (!same_str(la->v[i], lb->v[i]))
                return false;
        return true;
    }
    case T_PTR:
        return (*(void *const *)pa == NULL) == (*(void *const *)pb == NULL);
    case T_PORT:
    case T_CLUSTER:
        break; /* diff() asks port_changed and cluster_refused */
    }
    return true;
}

/* nats-server ignores a new port of 0 (random) and compares with the port it is bound to. */
static bool
port_changed(const nd_server_t *s, const nd_opts_t *cur, const nd_opts_t *n)
{
    return n->port != cur->port && n->port != 0 && n->port != s->port;
}

/* nats-server reloads a cluster block except its listen address (validateClusterOpts): a new
 * host or port, also from no cluster to one, is refused with its text. Returns: whether it is,
 * with that text in err. */
static bool
cluster_refused(const nd_opts_t *cur, const nd_opts_t *n, char *err, size_t errlen)
{
    const nd_cluster_opts_t *a = cur->cluster, *b = n->cluster;
    const char *ha = a ? (a->host && *a->host ? a->host : "0.0.0.0") : "";
    const char *hb = b ? (b->host && *b->host ? b->host : "0.0.0.0") : "";
    int pa = a ? a->port : 0, pb = b ? b->port : 0;
    if (strcmp(ha, hb) != 0) {
        snprintf(err, errlen, "config reload not supported for cluster host: old=%s, new=%s", ha,
                 hb);
        return true;
    }
    if (pa != pb) {
        snprintf(err, errlen, "config reload not supported for cluster port: old=%d, new=%d", pa,
                 pb);
        return true;
    }
    return false;
}

/* Reads the file and re-applies the flags. Returns: 0, or -1 with the error in err. */
static int
load(nd_reload_t *r, const char *path, nd_opts_t *n, char *err, size_t errlen)
{
    nd_opts_defaults(n);
    if (nd_opts_apply_config(n, path, err, errlen) < 0)
        return -1;
    if (r->argc > 0)
        nd_opts_apply_flags(n, r->argc, r->argv);
    /* As at start: a 0 means what nd_opts_zero_rules says (nats-server's ReloadOptions runs
     * setBaselineOptions too), so `max_payload: 0` reloads the default, not a limit of 0. */
    nd_opts_baseline(n);
    /* The file read is the one in force from now on, even when the flags named another. */
    nd_free(n->config_file);
    n->config_file = nd_xstrdup(path);
    /* nats-server's validateOptions, run again on reload. */
    if (n->max_payload > n->max_pending) {
        snprintf(err, errlen, "max_payload (%lld) cannot be higher than max_pending (%lld)",
                 (long long)n->max_payload, (long long)n->max_pending);
        return -1;
    }
    return 0;
}

/* Applies the authorization of n (auth.h): builds a new snapshot (accounts that keep their name
 * keep their actor), installs it for new connections, republishes the INFO (auth_required may
 * change) and has every client re-check the credentials it connected with, closing those that
 * no longer pass, as nats-server's reloadAuthorization does (conn_auth.c). Runs on every reload:
 * the users and accounts blocks are not compared field by field above, and rebuilding is cheap
 * (no password is hashed here). */
static void
apply_auth(nd_server_t *s, const nd_opts_t *n)
{
    if (s->auth == NULL || s->gacct == NULL)
        return;
    nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
    nd_auth_t *prev = nd_auth_slot_get(s->auth);
    nd_auth_t *a = nd_auth_new(ctx, n, s->gacct, prev);
    bool same = prev != NULL && nd_auth_same(prev, a);
    nd_auth_unref(ctx, prev);
    if (same) {
        /* Nothing changed: no client re-check (each may cost a bcrypt). */
        nd_auth_unref(ctx, a);
        nd_ctx_external_free(ctx);
        return;
    }
    nd_auth_slot_set(ctx, s->auth, a);
    nd_server_publish_info(ctx, s);
    nd_conn_auth_reload_all(ctx, s);
    nd_ctx_external_free(ctx);
}

void
nd_reload_init(nd_server_t *s, const nd_opts_t *opts)
{
    nd_reload_t *r = nd_new(nd_reload_t);
    pthread_mutex_init(&r->mu, NULL);
    nd_opts_copy(&r->cur, opts);
    s->reload = r;
}

static void
free_args(nd_reload_t *r)
{
    for (int i = 0; i < r->argc; i++)
        nd_free(r->argv[i]);
    nd_free(r->argv);
    r->argv = NULL;
    r->argc = 0;
}

void
nd_reload_free(nd_server_t *s)
{
    nd_reload_t *r = s->reload;
    if (r == NULL)
        return;
    free_args(r);
    nd_opts_free(&r->cur);
    pthread_mutex_destroy(&r->mu);
    nd_free(r);
    s->reload = NULL;
}

void
nd_reload_set_args(nd_server_t *s, int argc, char *const *argv)
{
    nd_reload_t *r = s->reload;
    pthread_mutex_lock(&r->mu);
    free_args(r);
    r->argv = nd_xcalloc((size_t)argc + 1, sizeof(char *));
    for (int i = 0; i < argc; i++)
        r->argv[i] = nd_xstrdup(argv[i]);
    r->argc = argc;
    pthread_mutex_unlock(&r->mu);
}

/* Compares n with the options in force. Returns: 0 and the kinds of change in *what, or -1 with
 * nats-server's refusal text in err. */
static int
diff(const nd_server_t *s, const nd_opts_t *cur, const nd_opts_t *n, unsigned *what, char *err,
     size_t errlen)
{
    *what = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const field_t *f = &fields[i];
        if (f->type == T_PORT) {
            if (!port_changed(s, cur, n))
                continue;
            snprintf(err, errlen, "config reload not supported for Port: old=%d, new=%d", s->port,
                     n->port);
            return -1;
        }
        if (f->type == T_CLUSTER) {
            if (cluster_refused(cur, n, err, errlen))
                return -1;
            continue; /* the rest of the block is not built, so nothing to apply */
        }
        if (field_equal(f, cur, n))
            continue;
        if (f->how == H_REFUSE) {
            char a[256], b[256];
            format_value(f, cur, a, sizeof a);
            format_value(f, n, b, sizeof b);
            snprintf(err, errlen, "config reload not supported for %s: old=%s, new=%s", f->go, a,
                     b);
            return -1;
        }
        *what |= 1u << f->how;
    }
    return 0;
}

static void
log_changes(const nd_opts_t *cur, const nd_opts_t *n)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const field_t *f = &fields[i];
        if (f->text == NULL || field_equal(f, cur, n))
            continue;
        if (strchr(f->text, '%') == NULL) {
            nd_log_info("%s", f->text);
            continue;
        }
        char v[256];
        format_value(f, n, v, sizeof v);
        /* The texts are the constants above, each with one %s. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        nd_log(ND_LOG_INFO, f->text, v);
#pragma GCC diagnostic pop
    }
}

int
nd_reload_run(nd_server_t *s, const char *config)
{
    nd_reload_t *r = s->reload;
    char err[1024];
    int rc = -1;
    nd_opts_t n;
    bool loaded = false;
    pthread_mutex_lock(&r->mu);
    const char *path = config != NULL && *config ? config : r->cur.config_file;
    if (path == NULL || *path == '\0') {
        snprintf(err, sizeof err,
                 "can only reload config when a file is provided using -c or --config");
        goto out;
    }
    loaded = true;
    if (load(r, path, &n, err, sizeof err) != 0)
        goto out;
    unsigned what;
    if (diff(s, &r->cur, &n, &what, err, sizeof err) != 0)
        goto out;
    if (what & (1u << H_LOG)) {
        /* First, because it is the one step that can fail: then nothing has changed yet. */
        if (nd_log_configure(&n, err, sizeof err) != 0)
            goto out;
    }
    log_changes(&r->cur, &n);
    if (what & (1u << H_LIVE)) {
        bool info = n.max_payload != r->cur.max_payload;
        nd_server_set_live(s, &n);
        if (info) {
            /* New clients get the new max_payload in their INFO; the old INFO is freed once no
             * connection can still be copying it (the external ctx's barrier, on free). */
            nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
            nd_server_publish_info(ctx, s);
            nd_ctx_external_free(ctx);
        }
    }
    apply_auth(s, &n);
    if (!same_str(n.pid_file, r->cur.pid_file) && n.pid_file != NULL && *n.pid_file) {
        /* nats-server writes the new pid file (and leaves the old one). */
        char perr[512];
        if (nd_pidfile_write(n.pid_file, perr, sizeof perr) != 0) {
            static const char start[] = "Could not write pidfile: "; /* the start-up wording */
            const char *why =
                strncmp(perr, start, sizeof start - 1) == 0 ? perr + sizeof start - 1 : perr;
            nd_log_error("Failed to write pidfile: %s", why);
        }
    }
    nd_opts_free(&r->cur);
    r->cur = n; /* moved */
    loaded = false;
    rc = 0;
    nd_log_info("Reloaded server configuration");
out:
    if (rc != 0)
        nd_log_error("Failed to reload server configuration: %s", err);
    if (loaded)
        nd_opts_free(&n);
    pthread_mutex_unlock(&r->mu);
    return rc;
}
