/* Config reload, as nats-server's Server.Reload does it (server/reload.go).
 *
 * Steps: read the file into fresh defaults (nd_opts_apply_config), re-apply the command-line
 * flags over it (flags win, as at start), validate, then compare every option with the options in
 * force, in the order of nats-server's Options struct (which is the order its log lines come in).
 * What is compared, its Go name, its policy and its log text are columns of the top-level option
 * table (cfg/opts_table.h, nd_opt_top_block in cfg/opts_conf.c), not a list of this file's.
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
 * Client TLS (tls {} and the --tls* flags): nats-server's TLSConfig never compares equal to the
 * previous one (a tls.Config holds functions), so with TLS on before or after, every reload
 * builds a new context and logs "Reloaded: tls = enabled|disabled". Building it re-reads the
 * certificate, key and CA files, which is how a certificate rotated in place under the same
 * path is picked up. The new context reaches new connections through the INFO template that
 * carries it (server.h); connections keep the context they started with. verify_and_map,
 * connection_rate_limit and allow_non_tls are refused as nats-server 2.9.10 refuses them.
 * http_auth {} (natsd's own) is swapped in the monitor for the requests that follow.
 *
 * Nested blocks (cluster, gateway, leafnodes, websocket, mqtt, jetstream, tls) are compared
 * field by field (reload_cmp.c). A change nats-server refuses is refused. A change to a block
 * of a feature natsd does not run (cluster apart from its listen address, jetstream, tls
 * pinned_certs) is accepted and kept, as nats-server accepts it, but logged as a warning that
 * it is not applied: no "Reloaded: ..." line claims it. Not compared here: accounts, users and
 * the resolver, which apply_auth rebuilds on every reload.
 */
#include "server/reload.h"
#include "net/route.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "auth/auth.h"
#include "util/log.h"
#include "mon/monitor.h"
#include "cfg/opts_parse.h"
#include "cfg/opts_table.h"
#include "actors/alloc.h"
#include "server/pidfile.h"
#include "server/reload_cmp.h"
#include "net/tls.h"
#include "mqtt/mqtt.h"

typedef struct nd_reload {
    pthread_mutex_t mu;
    nd_mqtt_t *mqtt; /* the MQTT service, or NULL (set once, before any reload) */
    /* under mu */
    nd_opts_t cur; /* the options in force */
    int argc;
    char **argv;
} nd_reload_t;

/* How a changed option is handled: its row's policy in the option tables (cfg/opts_table.h),
 * used as a bit of the set of changes. */
#define H_REFUSE  ND_RL_REFUSE
#define H_LIVE    ND_RL_LIVE    /* a limit in s->live */
#define H_LOG     ND_RL_LOG     /* the log module's */
#define H_AUTH    ND_RL_AUTH    /* authorization: apply_auth() */
#define H_KEEP    ND_RL_KEEP    /* accepted and kept (nothing running uses it yet) */
#define H_TLS     ND_RL_TLS     /* the client TLS context: rebuilt (nd_server_set_tls) */
#define H_MON     ND_RL_MON     /* http_auth: the monitor's (nd_mon_set_auth) */
#define H_UNBUILT ND_RL_UNBUILT /* accepted and kept, with a warning that it is not applied */
#define H_CLUSTER ND_RL_CLUSTER /* the routes (nd_routes_reload) */
#define H_MQTT    ND_RL_MQTT    /* the MQTT service (nd_mqtt_reload) */

/* The options compared: the rows of nd_opt_top_block that name nats-server's Options field
 * (.go), in the table's order, which is that struct's. */
typedef nd_opt_desc_t field_t;

/* nats-server's TLSConfig != nil: the client port speaks TLS (as nd_tls_client_opts decides). */
static bool
tls_on(const nd_opts_t *o)
{
    return o->tls || o->tls_verify ||
           (o->tls_cfg != NULL && (o->tls_cfg->cert_file != NULL || o->tls_cfg->ncerts > 0));
}

/* nats-server's TLSTimeout after setBaselineOptions: the tls timeout, 2 s when unset. */
static double
tls_timeout(const nd_opts_t *o)
{
    double t = o->tls_cfg != NULL ? o->tls_cfg->timeout_s : 0;
    return t > 0 ? t : ND_TLS_DEFAULT_TIMEOUT_MS / 1000.0;
}

/* nats-server's AuthTimeout after setBaselineOptions (getDefaultAuthTimeout): with TLS on and no
 * timeout of its own, one second more than the TLS handshake's (conn_auth.c does the same). */
static double
auth_timeout(const nd_opts_t *o)
{
    if (o->auth_timeout_s > 0)
        return o->auth_timeout_s;
    return tls_on(o) ? tls_timeout(o) + 1.0 : ND_DEFAULT_AUTH_TIMEOUT_MS / 1000.0;
}

static const nd_strlist_t *
tls_pinned(const nd_opts_t *o)
{
    static const nd_strlist_t none = {NULL, 0};
    return o->tls_cfg != NULL ? &o->tls_cfg->pinned_certs : &none;
}

#define FIELD(o, f) ((const char *)(o) + (f)->off)

/* Go's %v of the field's value. */
static void
format_value(const field_t *f, const nd_opts_t *o, char *buf, size_t len)
{
    const char *p = FIELD(o, f);
    switch (f->derive) {
    case ND_DV_TLS_TIMEOUT:
        snprintf(buf, len, "%g", tls_timeout(o));
        return;
    case ND_DV_AUTH_TIMEOUT:
        snprintf(buf, len, "%g", auth_timeout(o));
        return;
    case ND_DV_TLS_MAP:
        snprintf(buf, len, "%s",
                 o->tls_cfg != NULL && o->tls_cfg->verify_and_map ? "true" : "false");
        return;
    case ND_DV_TLS_CONFIG:
        snprintf(buf, len, "%s", tls_on(o) ? "enabled" : "disabled");
        return;
    case ND_DV_TLS_PINNED:
        snprintf(buf, len, "%zu", tls_pinned(o)->n);
        return;
    case ND_DV_TLS_RATE:
        snprintf(buf, len, "%lld", (long long)(o->tls_cfg != NULL ? o->tls_cfg->rate_limit : 0));
        return;
    default:
        break;
    }
    switch (f->type) {
    case ND_OT_BOOL:
        snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false");
        break;
    case ND_OT_INT:
        snprintf(buf, len, "%d", *(const int *)p);
        break;
    case ND_OT_I32:
        snprintf(buf, len, "%d", (int)*(const int32_t *)p);
        break;
    case ND_OT_I64:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)p);
        break;
    case ND_OT_UINT:
        snprintf(buf, len, "%u", *(const unsigned *)p);
        break;
    case ND_OT_DUR:
        nd_cfg_go_dur_string(*(const int64_t *)p, buf, len);
        break;
    case ND_OT_STR: {
        const char *s = *(char *const *)p;
        snprintf(buf, len, "%s", s ? s : "");
        break;
    }
    case ND_OT_DBL:
        snprintf(buf, len, "%g", *(const double *)p);
        break;
    case ND_OT_STRLIST: {
        const nd_strlist_t *l = (const nd_strlist_t *)p;
        size_t n = (size_t)snprintf(buf, len, "[");
        for (size_t i = 0; i < l->n && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", l->v[i]);
        if (n < len)
            snprintf(buf + n, len - n, "]");
        break;
    }
    default:
        /* A block: Go prints the whole structure; its presence is what a reader needs here. */
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
    switch (f->derive) {
    case ND_DV_PORT:
        return true; /* diff() asks port_changed */
    case ND_DV_CLUSTER:
        /* Its listen address was checked first (diff() asks cluster_refused). */
        return nd_cluster_equal_but_listen(a->cluster, b->cluster);
    case ND_DV_TLS_TIMEOUT:
        return tls_timeout(a) == tls_timeout(b);
    case ND_DV_AUTH_TIMEOUT:
        return auth_timeout(a) == auth_timeout(b);
    case ND_DV_TLS_MAP:
        return (a->tls_cfg != NULL && a->tls_cfg->verify_and_map) ==
               (b->tls_cfg != NULL && b->tls_cfg->verify_and_map);
    case ND_DV_TLS_CONFIG:
        /* Never equal while TLS is on: see the top of the file. */
        return !tls_on(a) && !tls_on(b);
    case ND_DV_TLS_PINNED: {
        const nd_strlist_t *la = tls_pinned(a), *lb = tls_pinned(b);
        if (la->n != lb->n)
            return false;
        for (size_t i = 0; i < la->n; i++)
            if (!same_str(la->v[i], lb->v[i]))
                return false;
        return true;
    }
    case ND_DV_TLS_RATE:
        return (a->tls_cfg != NULL ? a->tls_cfg->rate_limit : 0) ==
               (b->tls_cfg != NULL ? b->tls_cfg->rate_limit : 0);
    case ND_DV_MQTT:
        return nd_opt_equal(&nd_opt_mqtt_block, a->mqtt, b->mqtt, 0);
    case ND_DV_NONE:
        break;
    }
    /* A member of its own: the option table's comparison (strings: NULL equals ""). */
    return nd_opt_row_equal(f, a, b);
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

/* nats-server reloads the mqtt block's ack_wait, max_ack_pending, stream/consumer replicas,
 * consumer_memory_storage and consumer_inactive_threshold, ignores its tls, and refuses any
 * other change (also adding or removing the block) with its text. Returns: whether it refuses,
 * with that text in err. */
static bool
mqtt_refused(const field_t *f, const nd_opts_t *cur, const nd_opts_t *n, char *err,
             size_t errlen)
{
    if (nd_opt_equal(&nd_opt_mqtt_block, cur->mqtt, n->mqtt, ND_OF_LIVE))
        return false;
    char a[256], b[256];
    format_value(f, cur, a, sizeof a);
    format_value(f, n, b, sizeof b);
    snprintf(err, errlen, "config reload not supported for %s: old=%s, new=%s", f->go, a, b);
    return true;
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

/* Builds the client TLS context of n (NULL: TLS off), reading its files again. Returns: 0, or -1
 * with the reason in err. */
static int
build_tls(const nd_opts_t *n, nd_tls_ctx_t **out, char *err, size_t errlen)
{
    nd_tls_opts_t *t = NULL;
    *out = NULL;
    if (nd_tls_client_opts(n, &t, err, errlen) < 0)
        return -1;
    if (t == NULL)
        return 0;
    char why[512];
    *out = nd_tls_ctx_new(t, why, sizeof why);
    nd_tls_opts_free(t);
    if (*out == NULL) {
        snprintf(err, errlen, "TLS: %s", why);
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
nd_reload_set_mqtt(nd_server_t *s, nd_mqtt_t *m)
{
    s->reload->mqtt = m;
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
    for (const field_t *f = nd_opt_top_block.d; f->type != ND_OT_END; f++) {
        if (f->go == NULL)
            continue;
        if (f->derive == ND_DV_PORT) {
            if (!port_changed(s, cur, n))
                continue;
            snprintf(err, errlen, "config reload not supported for Port: old=%d, new=%d", s->port,
                     n->port);
            return -1;
        }
        if (f->derive == ND_DV_CLUSTER && cluster_refused(cur, n, err, errlen))
            return -1;
        if (f->derive == ND_DV_MQTT && mqtt_refused(f, cur, n, err, errlen))
            return -1;
        if (field_equal(f, cur, n))
            continue;
        if (f->reload == H_REFUSE) {
            char a[256], b[256];
            format_value(f, cur, a, sizeof a);
            format_value(f, n, b, sizeof b);
            snprintf(err, errlen, "config reload not supported for %s: old=%s, new=%s", f->go, a,
                     b);
            return -1;
        }
        *what |= 1u << f->reload;
    }
    return 0;
}

static void
log_changes(const nd_opts_t *cur, const nd_opts_t *n)
{
    for (const field_t *f = nd_opt_top_block.d; f->type != ND_OT_END; f++) {
        if (f->go == NULL || f->text == NULL || field_equal(f, cur, n))
            continue;
        if (f->reload == H_UNBUILT) {
            nd_log_warn("Reload: %s changed; not applied (natsd does not implement it yet)",
                        f->text);
            continue;
        }
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
    nd_tls_ctx_t *tls = NULL; /* the new client TLS context (H_TLS), until installed */
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
    /* The steps that can fail come first, so that nothing has changed when one does. */
    if ((what & (1u << H_TLS)) && build_tls(&n, &tls, err, sizeof err) != 0)
        goto out;
    if (what & (1u << H_LOG)) {
        if (nd_opts_configure_log(&n, err, sizeof err) != 0)
            goto out;
    }
    log_changes(&r->cur, &n);
    bool info = false;
    if (what & (1u << H_LIVE)) {
        info = n.max_payload != r->cur.max_payload;
        nd_server_set_live(s, &n);
    }
    if (info || (what & (1u << (unsigned)H_TLS)) || (what & (1u << (unsigned)H_MON))) {
        /* New clients get the new max_payload and TLS context with their INFO; the old INFO is
         * freed once no connection can still be copying it (the external ctx's barrier, on
         * free), and the old context once the last connection that uses it is gone. */
        nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
        if (what & (1u << H_TLS)) {
            nd_server_set_tls(ctx, s, tls); /* publishes the INFO */
            tls = NULL;
        } else if (info) {
            nd_server_publish_info(ctx, s);
        }
        if (what & (1u << H_MON))
            nd_mon_set_auth(ctx, s->mon, &n);
        nd_ctx_external_free(ctx);
    }
    apply_auth(s, &n);
    if ((what & (1u << H_CLUSTER)) && s->routes != NULL)
        nd_routes_reload(s->routes, &n);
    if ((what & (1u << H_MQTT)) && r->mqtt != NULL)
        nd_mqtt_reload(r->mqtt, n.mqtt);
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
    nd_tls_ctx_unref(tls); /* built but not installed: a later step failed */
    if (rc != 0)
        nd_log_error("Failed to reload server configuration: %s", err);
    if (loaded)
        nd_opts_free(&n);
    pthread_mutex_unlock(&r->mu);
    return rc;
}
