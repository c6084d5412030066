/* Configuration files -> server options: maps the top-level keys of a parsed nats-server config
 * (src/cfg/conf.h) onto nd_opts_t, with nats-server's aliases, defaults, checks and texts.
 *
 * Algorithm: walk the root map's entries in written order (a later key overrides an earlier
 * one, e.g. `listen` then `port`); each key is looked up, ignoring case as nats-server does, in
 * the top-level option table (nd_opt_top_block, below: one row per option with its aliases,
 * reader, default, rule for 0 and reload policy); a block row's reader is its own file's
 * (opts_tls.c, opts_auth.c, opts_acct.c, opts_cluster.c, opts_gateway.c, opts_leaf.c,
 * opts_js.c, opts_mqtt.c, opts_ws.c, opts_trust.c; see opts_int.h). Anything else is fatal with
 * nats-server's `unknown field` text unless the key was only used as a $variable, or is one of
 * the few keys of later nats-server versions listed in later_keys (a warning).
 *
 * Features that are parsed and validated but not built yet add one warning each,
 * "<feature> is configured but not supported yet by natsd: ignored" (feature_warnings), so the
 * issues that build them only wire the parsed options and delete their line there.
 *
 * Positions and texts: see opts_parse.h. nats-server reports every error it finds, in random
 * map order; we stop at the first, in written order. The `-t` verdict also fails on
 * nats-server's warnings (an integer duration, a duplicate route, ...): those are "strict".
 * References: nats-server 2.9.10 server/opts.go (processConfigFileLine, configureSystemAccount,
 * parseDuration), 2.10.29 processConfigFileLine for keys added since (logtime_utc,
 * logfile_max_num, max_closed_clients, prof_block_rate), shared/spec/nats-server-inventory.md
 * §2.1-§2.3.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "cfg/conf.h"
#include "util/log.h"
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

/* Known keys of later nats-server versions that natsd does not parse yet. */
static const char *const later_keys[] = {
    "write_timeout",
    "trace_headers",
    "default_sentinel",
    "ocsp_cache",
};

/* Features that are parsed and validated now but not built yet: one warning when configured.
 * Delete a line when its feature is wired. */
static const struct {
    const char *keys;
    const char *feature;
} feature_warnings[] = {
    {"ocsp", "OCSP stapling"},
    {"mappings maps", "Subject mapping"},
    /* operator, resolver: MEMORY and resolver_preload are wired (src/auth/auth_jwt.c, which warns
     * about the resolvers it does not build); these are not. */
    {"trusted trusted_keys resolver_tls resolver_pinned_accounts", "Operator mode"},
    {"prof_port", "Profiling"},
};

/* ---- readers of the top-level keys that need more than their type's reader ---------------- */

/* lame_duck_duration / lame_duck_grace_period: strings only, as in nats-server. */
static int
lame_duck(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    bool dur = d->off == offsetof(nd_opts_t, lame_duck_duration_ms);
    int64_t ms;
    if (nd_cfg_duration_str(a, at,
                            dur ? "error parsing lame_duck_duration"
                                : "error parsing lame_duck_grace_period",
                            e->val, &ms) < 0)
        return -1;
    if (dur && ms < 30000) {
        char buf[64];
        nd_cfg_go_dur_string(ms, buf, sizeof buf);
        return nd_cfg_fail(a, at, "invalid lame_duck_duration of %s, minimum is 30 seconds", buf);
    }
    if (!dur && ms < 0)
        return nd_cfg_fail(a, at, "invalid lame_duck_grace_period, needs to be positive");
    *(int64_t *)((char *)blk + d->off) = ms;
    return 0;
}

static int
server_tags(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
            unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *v = e->val;
    nd_strlist_t *tags = &((nd_opts_t *)blk)->server_tags;
    if (v->type == ND_CFG_STRING) {
        nd_strlist_add(tags, v->u.str.s);
        return 0;
    }
    if (v->type != ND_CFG_ARRAY)
        return nd_cfg_fail(a, at, "error parsing tags: unsupported type %s", nd_cfg_go_type(v));
    for (size_t i = 0; i < v->u.arr.n; i++) {
        /* nats-server prints the element's Go type, which is its token wrapper. */
        if (v->u.arr.v[i]->type != ND_CFG_STRING)
            return nd_cfg_fail(a, at,
                               "error parsing tags: unsupported type *conf.token where string is "
                               "expected");
        nd_strlist_add(tags, v->u.arr.v[i]->u.str.s);
    }
    return 0;
}

static int
ocsp(nd_cfg_apply_t *a, const nd_cfg_entry_t *oe, const nd_opt_desc_t *d, void *blk, unsigned *seen)
{
    (void)d, (void)seen;
    nd_opts_t *o = blk;
    nd_cfg_at_t at = nd_cfg_at_entry(oe);
    const nd_cfg_node_t *v = oe->val;
    if (v->type == ND_CFG_BOOL) {
        o->ocsp_set = true;
        o->ocsp_mode = v->u.b ? ND_OCSP_AUTO : ND_OCSP_NEVER;
        return 0;
    }
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, at, "error parsing ocsp config: unsupported type %s",
                           nd_cfg_go_type(v));
    nd_ocsp_mode_t mode = ND_OCSP_AUTO;
    nd_strlist_t urls = {0};
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        const nd_cfg_node_t *x = e->val;
        int rc = 0;
        /* nats-server compares these keys case-sensitively; its type panics name the ocsp key,
         * its own errors the inner key. */
        if (strcmp(e->key, "mode") == 0) {
            if (x->type != ND_CFG_STRING) {
                rc = nd_cfg_type_err(a, at, x, ND_CFG_STRING);
            } else if (strcasecmp(x->u.str.s, "always") == 0) {
                mode = ND_OCSP_ALWAYS;
            } else if (strcasecmp(x->u.str.s, "must") == 0) {
                mode = ND_OCSP_MUST;
            } else if (strcasecmp(x->u.str.s, "never") == 0) {
                mode = ND_OCSP_NEVER;
            } else if (strcasecmp(x->u.str.s, "auto") == 0) {
                mode = ND_OCSP_AUTO;
            } else {
                rc = nd_cfg_fail(a, nd_cfg_at_entry(e),
                                 "error parsing ocsp config: unsupported ocsp mode string");
            }
        } else if (strcmp(e->key, "urls") == 0) {
            /* nats-server asserts []string, which a parsed array never is. */
            rc = nd_cfg_fail(a, at, "interface conversion: interface {} is %s, not []string",
                             nd_cfg_go_type(x));
        } else if (strcmp(e->key, "url") == 0) {
            if (x->type != ND_CFG_STRING)
                rc = nd_cfg_type_err(a, at, x, ND_CFG_STRING);
            else {
                nd_strlist_free(&urls);
                nd_strlist_add(&urls, x->u.str.s);
            }
        } else {
            rc = nd_cfg_fail(a, nd_cfg_at_entry(e),
                             "error parsing ocsp config: unsupported field string");
        }
        if (rc < 0) {
            nd_strlist_free(&urls);
            return -1;
        }
    }
    o->ocsp_set = true;
    o->ocsp_mode = mode;
    nd_strlist_free(&o->ocsp_urls);
    o->ocsp_urls = urls;
    return 0;
}

static int
default_js_domain(nd_cfg_apply_t *a, const nd_cfg_entry_t *de, const nd_opt_desc_t *d, void *blk,
                  unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(de);
    const nd_cfg_node_t *v = de->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, at, "error default_js_domain config: unsupported type %s",
                           nd_cfg_go_type(v));
    nd_strlist_t l = {0};
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        if (e->val->type != ND_CFG_STRING) {
            nd_strlist_free(&l);
            return nd_cfg_type_err(a, at, e->val, ND_CFG_STRING);
        }
        nd_strlist_add(&l, e->key);
        nd_strlist_add(&l, e->val->u.str.s);
    }
    nd_opts_t *o = blk;
    nd_strlist_free(&o->js_default_domains);
    o->js_default_domains = l;
    return 0;
}

/* max_payload and max_control_line: nats-server's "too big" above 2^31-1. */
static int
limit32(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
        unsigned *seen)
{
    (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, v, ND_CFG_INT);
    if (v->u.i > INT32_MAX)
        return nd_cfg_fail(a, at, "%s value is too big", e->key);
    if (v->u.i < 0)
        return nd_cfg_fail(a, at, "invalid value %lld for %s: out of range [0, %d]",
                           (long long)v->u.i, e->key, INT32_MAX);
    if (d->type == ND_OT_I32)
        *(int32_t *)((char *)blk + d->off) = (int32_t)v->u.i;
    else
        *(int64_t *)((char *)blk + d->off) = v->u.i;
    return 0;
}

static int
max_sub_tokens(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
               unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    int64_t i;
    if (nd_cfg_i64(a, at, e->val, &i) < 0)
        return -1;
    if (i > 255)
        return nd_cfg_fail(a, at, "%s value is too big", e->key);
    if (i <= 0)
        return nd_cfg_fail(a, at, "%s value can not be negative", e->key);
    ((nd_opts_t *)blk)->max_sub_tokens = (int)i;
    return 0;
}

static int
system_account(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
               unsigned *seen)
{
    (void)d, (void)seen;
    if (e->val->type != ND_CFG_STRING)
        return nd_cfg_fail(a, nd_cfg_at_entry(e), "system account name must be a string");
    nd_set_str(&((nd_opts_t *)blk)->system_account, e->val->u.str.s);
    return 0;
}

/* listen, http, https: nd_cfg_listen into the host at off and the port at aux. */
static int
listen(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
       unsigned *seen)
{
    (void)seen;
    return nd_cfg_listen(a, nd_cfg_at_entry(e), e->val, (char **)((char *)blk + d->off),
                         (int *)((char *)blk + d->aux));
}

/* natsd's own block: access control for the monitoring port (src/mon/http.c). */
static int
http_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
          unsigned *seen)
{
    (void)d, (void)seen;
    nd_opts_t *o = blk;
    const nd_cfg_node_t *v = e->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_type_err(a, nd_cfg_at_entry(e), v, ND_CFG_MAP);
    int rc = 0;
    for (size_t n = 0; n < v->u.map.n && rc == 0; n++) {
        const nd_cfg_entry_t *f = &v->u.map.e[n];
        nd_cfg_at_t fat = nd_cfg_at_entry(f);
        if (nd_cfg_key_is(f->key, "user username"))
            rc = nd_cfg_str(a, fat, f->val, &o->http_auth_user);
        else if (nd_cfg_key_is(f->key, "password pass"))
            rc = nd_cfg_str(a, fat, f->val, &o->http_auth_pass);
        else if (nd_cfg_key_is(f->key, "token"))
            rc = nd_cfg_str(a, fat, f->val, &o->http_auth_token);
        else
            rc = nd_cfg_fail(a, fat, "unknown field \"%s\"", f->key);
    }
    return rc;
}

/* nats-server: trace_verbose sets both TraceVerbose and Trace. */
static int
trace_verbose(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
              unsigned *seen)
{
    (void)d, (void)seen;
    nd_opts_t *o = blk;
    if (nd_cfg_bool(a, nd_cfg_at_entry(e), e->val, &o->trace_verbose) < 0)
        return -1;
    o->trace = o->trace_verbose;
    return 0;
}

/* The blocks whose readers take the whole apply context (they check across the options). */
#define BLOCK_READER(name, fn)                                                                     \
    static int name(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk, \
                    unsigned *seen)                                                                \
    {                                                                                              \
        (void)d, (void)blk, (void)seen;                                                            \
        return fn(a, e) < 0 ? -1 : 0;                                                              \
    }
BLOCK_READER(authorization, nd_cfg_apply_authorization)
BLOCK_READER(accounts, nd_cfg_apply_accounts)
BLOCK_READER(mappings, nd_cfg_apply_mappings)
BLOCK_READER(jetstream, nd_cfg_apply_jetstream)
BLOCK_READER(store_dir, nd_cfg_apply_store_dir)
BLOCK_READER(trust, nd_cfg_apply_trust)
#undef BLOCK_READER

/* ---- the table ------------------------------------------------------------------------------
 * Every member of nd_opts_t that a key writes, that is owned (freed and copied), that has a
 * default or a rule for 0, or that a reload compares. Rows with .go are in the order of
 * nats-server's Options struct, which is the order of its "Reloaded: ..." lines; the rest follow.
 * Policies (.reload) are nats-server 2.9.10's (server/reload.go); natsd's own: workers, the pool
 * is sized once; http_auth {} is swapped in the monitor (its secrets are not printed). */
#define T(...)            ND_OPT(nd_opts_t, __VA_ARGS__)
#define REFUSE(g)         .go = (g), .reload = ND_RL_REFUSE
#define RELOAD(g, how, t) .go = (g), .reload = (how), .text = (t)
#define ZDEF(v)           .flags = ND_OF_DEFAULT | ND_OF_ZERO, .zero = ND_ZERO_DEFAULT, .def = (v)
#define ZDEF_BOUNDED(v)                                                                            \
    .flags = ND_OF_BOUNDED | ND_OF_DEFAULT | ND_OF_ZERO, .zero = ND_ZERO_DEFAULT, .def = (v)
#define I32MAX .min = 0, .max = INT32_MAX
static const nd_opt_desc_t top_d[] = {
    T("server_name", server_name, ND_OT_STR, REFUSE("ServerName")),
    T("host net", host, ND_OT_STR, REFUSE("Host")),
    T("port", port, ND_OT_INT, .flags = ND_OF_BOUNDED | ND_OF_DEFAULT, .min = -1, .max = 65535,
      .def = ND_DEFAULT_PORT, REFUSE("Port"), .derive = ND_DV_PORT),
    T("client_advertise", client_advertise, ND_OT_STR,
      RELOAD("ClientAdvertise", ND_RL_KEEP, "Reload: client_advertise = %s")),
    T("trace", trace, ND_OT_BOOL, RELOAD("Trace", ND_RL_LOG, "Reloaded: trace = %s")),
    T("debug", debug, ND_OT_BOOL, RELOAD("Debug", ND_RL_LOG, "Reloaded: debug = %s")),
    T("trace_verbose", trace_verbose, ND_OT_BOOL, .parse = trace_verbose,
      RELOAD("TraceVerbose", ND_RL_LOG, "Reloaded: trace_verbose = %s")),
    T("disable_sublist_cache no_sublist_cache", disable_sublist_cache, ND_OT_BOOL,
      REFUSE("NoSublistCache")),
    T("no_header_support", no_header_support, ND_OT_BOOL, REFUSE("NoHeaderSupport")),
    T("logtime", logtime, ND_OT_BOOL, .flags = ND_OF_DEFAULT, .def = 1,
      RELOAD("Logtime", ND_RL_LOG, "Reloaded: logtime = %s")),
    T("logtime_utc", logtime_utc, ND_OT_BOOL,
      RELOAD("LogtimeUTC", ND_RL_LOG, "Reloaded: logtime_utc = %s")),
    T("max_connections max_conn", max_connections, ND_OT_I32,
      ZDEF_BOUNDED(ND_DEFAULT_MAX_CONNECTIONS), I32MAX,
      RELOAD("MaxConn", ND_RL_LIVE, "Reloaded: max_connections = %s")),
    T("max_subscriptions max_subs", max_subscriptions, ND_OT_I32,
      .flags = ND_OF_BOUNDED | ND_OF_ZERO, I32MAX, .zero = ND_ZERO_UNLIMITED,
      .note = "nats-server has no baseline for MaxSubs", REFUSE("MaxSubs")),
    T("max_sub_tokens max_subscription_tokens", max_sub_tokens, ND_OT_INT, .parse = max_sub_tokens,
      .flags = ND_OF_ZERO, .zero = ND_ZERO_UNLIMITED,
      .note = "the parser refuses 0; 0 is the unset value", REFUSE("MaxSubTokens")),
    T("no_auth_user", no_auth_user, ND_OT_STR, REFUSE("NoAuthUser")),
    T("system_account system", system_account, ND_OT_STR, .parse = system_account,
      REFUSE("SystemAccount")),
    T("no_system_account no_system no_sys_acc", no_system_account, ND_OT_BOOL,
      REFUSE("NoSystemAccount")),
    /* authorization { user, password, token }: written by the authorization reader */
    T(NULL, user, ND_OT_STR, RELOAD("Username", ND_RL_AUTH, "Reloaded: authorization username")),
    T(NULL, pass, ND_OT_STR, RELOAD("Password", ND_RL_AUTH, "Reloaded: authorization password")),
    T(NULL, token, ND_OT_STR, RELOAD("Authorization", ND_RL_AUTH, "Reloaded: authorization token")),
    T("ping_interval", ping_interval_ms, ND_OT_DUR, ZDEF(ND_DEFAULT_PING_INTERVAL_MS),
      RELOAD("PingInterval", ND_RL_LIVE, "Reloaded: ping_interval = %s")),
    T("ping_max", ping_max, ND_OT_I32, ZDEF_BOUNDED(ND_DEFAULT_PING_MAX), I32MAX,
      RELOAD("MaxPingsOut", ND_RL_LIVE, "Reloaded: ping_max = %s")),
    T(NULL, http_host, ND_OT_STR, REFUSE("HTTPHost")),
    T("http_port monitor_port", http_port, ND_OT_INT, REFUSE("HTTPPort")),
    T("http_base_path", http_base_path, ND_OT_STR, REFUSE("HTTPBasePath")),
    T("https_port", https_port, ND_OT_INT, REFUSE("HTTPSPort")),
    T(NULL, auth_timeout_s, ND_OT_DBL, .name = "authorization.timeout", .flags = ND_OF_ZERO,
      .zero = ND_ZERO_DEFAULT_AT_USE,
      .note = "2s, or the TLS timeout + 1s with TLS: nd_auth_new (auth.c), conn_auth.c, varz.c",
      RELOAD("AuthTimeout", ND_RL_AUTH, "Reloaded: authorization timeout = %s"),
      .derive = ND_DV_AUTH_TIMEOUT),
    T("max_control_line", max_control_line, ND_OT_I32, .parse = limit32,
      ZDEF(ND_DEFAULT_MAX_CONTROL_LINE),
      RELOAD("MaxControlLine", ND_RL_LIVE, "Reloaded: max_control_line = %s")),
    T("max_payload", max_payload, ND_OT_I64, .parse = limit32, ZDEF(ND_DEFAULT_MAX_PAYLOAD),
      RELOAD("MaxPayload", ND_RL_LIVE, "Reloaded: max_payload = %s")),
    T("max_pending", max_pending, ND_OT_I64, ZDEF_BOUNDED(ND_DEFAULT_MAX_PENDING), .min = 0,
      .max = INT64_MAX, REFUSE("MaxPending")),
    /* A cluster change other than the listen address: the route list is applied (routes added
     * are solicited, routes removed are closed); the rest is kept for the next start. */
    T("cluster", cluster, ND_OT_PTR, .sub = &nd_opt_cluster_block,
      RELOAD("Cluster", ND_RL_CLUSTER, "Reloaded: cluster"), .derive = ND_DV_CLUSTER),
    T("gateway", gateway, ND_OT_PTR, .sub = &nd_opt_gateway_block, REFUSE("Gateway")),
    T("leaf leafnodes", leaf, ND_OT_PTR, .sub = &nd_opt_leaf_block, REFUSE("LeafNode")),
    /* JetStream starts with the server; a reload that enables it, moves its store or changes its
     * block is accepted and kept, not applied (a restart applies it). */
    T(NULL, jetstream, ND_OT_BOOL, RELOAD("JetStream", ND_RL_UNBUILT, "jetstream")),
    T("jetstream", js, ND_OT_PTR, .sub = &nd_opt_js_block, .parse = jetstream,
      RELOAD("JetStreamOpts", ND_RL_UNBUILT, "jetstream {}")),
    T("store_dir storedir", store_dir, ND_OT_STR, .parse = store_dir,
      RELOAD("StoreDir", ND_RL_UNBUILT, "store_dir")),
    T("websocket ws", ws, ND_OT_PTR, .sub = &nd_opt_ws_block, REFUSE("Websocket")),
    /* Its ack_wait, max_ack_pending, replicas, consumer storage and inactive threshold reload
     * (and tls is accepted, as nats-server ignores it); any other change is refused. */
    T("mqtt", mqtt, ND_OT_PTR, .sub = &nd_opt_mqtt_block, RELOAD("MQTT", ND_RL_MQTT, NULL),
      .derive = ND_DV_MQTT),
    T("prof_port", prof_port, ND_OT_INT, REFUSE("ProfPort")),
    T("pidfile pid_file", pid_file, ND_OT_STR,
      RELOAD("PidFile", ND_RL_KEEP, "Reloaded: pid_file = %s")),
    T("ports_file_dir", ports_file_dir, ND_OT_STR,
      RELOAD("PortsFileDir", ND_RL_KEEP, "Reloaded: ports_file_dir = %s")),
    T("logfile log_file", log_file, ND_OT_STR,
      RELOAD("LogFile", ND_RL_LOG, "Reloaded: log_file = %s")),
    T("logfile_size_limit log_size_limit", log_size_limit, ND_OT_I64, .flags = ND_OF_ZERO,
      .zero = ND_ZERO_UNLIMITED, REFUSE("LogSizeLimit")),
    T("logfile_max_num log_max_num", log_max_num, ND_OT_I64, .flags = ND_OF_ZERO,
      .zero = ND_ZERO_UNLIMITED, .note = "keep every file", REFUSE("LogMaxFiles")),
    T("syslog", syslog, ND_OT_BOOL, RELOAD("Syslog", ND_RL_LOG, "Reloaded: syslog = %s")),
    T("remote_syslog", remote_syslog, ND_OT_STR,
      RELOAD("RemoteSyslog", ND_RL_LOG, "Reloaded: remote_syslog = %s")),
    /* The client TLS options: tls {} (below) and the --tls* flags. */
    T(NULL, tls_cfg, ND_OT_NONE, RELOAD("TLSTimeout", ND_RL_TLS, "Reloaded: tls timeout = %s"),
      .derive = ND_DV_TLS_TIMEOUT),
    T(NULL, tls, ND_OT_BOOL, REFUSE("TLS")),
    T(NULL, tls_verify, ND_OT_BOOL, REFUSE("TLSVerify")),
    T(NULL, tls_cfg, ND_OT_NONE, REFUSE("TLSMap"), .derive = ND_DV_TLS_MAP),
    T(NULL, tls_cert, ND_OT_STR, REFUSE("TLSCert")),
    T(NULL, tls_key, ND_OT_STR, REFUSE("TLSKey")),
    T(NULL, tls_ca_cert, ND_OT_STR, REFUSE("TLSCaCert")),
    T(NULL, tls_cfg, ND_OT_NONE, RELOAD("TLSConfig", ND_RL_TLS, "Reloaded: tls = %s"),
      .derive = ND_DV_TLS_CONFIG),
    /* natsd does not check pinned certificates (nats-server logs "Reloaded: %d pinned_certs"). */
    T(NULL, tls_cfg, ND_OT_NONE, RELOAD("TLSPinnedCerts", ND_RL_UNBUILT, "tls pinned_certs"),
      .derive = ND_DV_TLS_PINNED),
    T(NULL, tls_cfg, ND_OT_NONE, REFUSE("TLSRateLimit"), .derive = ND_DV_TLS_RATE),
    T("allow_non_tls", allow_non_tls, ND_OT_BOOL, REFUSE("AllowNonTLS")),
    T("write_deadline", write_deadline_ms, ND_OT_DUR, ZDEF(ND_DEFAULT_WRITE_DEADLINE_MS),
      RELOAD("WriteDeadline", ND_RL_LIVE, "Reloaded: write_deadline = %s")),
    T("max_closed_clients", max_closed_clients, ND_OT_INT, ZDEF(ND_DEFAULT_MAX_CLOSED_CLIENTS),
      REFUSE("MaxClosedClients")),
    T("lame_duck_duration", lame_duck_duration_ms, ND_OT_DUR, .parse = lame_duck,
      ZDEF(ND_DEFAULT_LAME_DUCK_DURATION_MS), .note = "the parser refuses under 30s",
      REFUSE("LameDuckDuration")),
    T("lame_duck_grace_period", lame_duck_grace_period_ms, ND_OT_DUR, .parse = lame_duck,
      ZDEF(ND_DEFAULT_LAME_DUCK_GRACE_MS), REFUSE("LameDuckGracePeriod")),
    T("max_traced_msg_len", max_traced_msg_len, ND_OT_I64, .flags = ND_OF_ZERO,
      .zero = ND_ZERO_UNLIMITED,
      RELOAD("MaxTracedMsgLen", ND_RL_KEEP, "Reloaded: max_traced_msg_len = %s")),
    T("connect_error_reports", connect_error_reports, ND_OT_INT,
      ZDEF(ND_DEFAULT_CONNECT_ERROR_REPORTS),
      RELOAD("ConnectErrorReports", ND_RL_KEEP, "Reloaded: connect_error_reports = %s")),
    T("reconnect_error_reports", reconnect_error_reports, ND_OT_INT,
      ZDEF(ND_DEFAULT_RECONNECT_ERROR_REPORTS),
      RELOAD("ReconnectErrorReports", ND_RL_KEEP, "Reloaded: reconnect_error_reports = %s")),
    T("server_tags", server_tags, ND_OT_STRLIST, .parse = server_tags,
      RELOAD("Tags", ND_RL_KEEP, "Reloaded: tags")),
    T("no_fast_producer_stall", no_fast_producer_stall, ND_OT_BOOL,
      RELOAD("NoFastProducerStall", ND_RL_LIVE, "Reloaded: no_fast_producer_stall = %s")),
    /* natsd's own key (-w): the worker pool size. */
    T("worker_threads", workers, ND_OT_UINT, .flags = ND_OF_BOUNDED, .min = 0, .max = 1024,
      REFUSE("Workers")),
    T(NULL, http_auth_user, ND_OT_STR,
      RELOAD("HTTPAuthUser", ND_RL_MON, "Reloaded: http_auth user")),
    T(NULL, http_auth_pass, ND_OT_STR,
      RELOAD("HTTPAuthPassword", ND_RL_MON, "Reloaded: http_auth password")),
    T(NULL, http_auth_token, ND_OT_STR,
      RELOAD("HTTPAuthToken", ND_RL_MON, "Reloaded: http_auth token")),

    /* ---- not compared by reload (authorization, accounts and the resolver are rebuilt on
     * every reload: src/server/reload.c apply_auth) ---- */
    T("listen", host, ND_OT_NONE, .parse = listen, .aux = offsetof(nd_opts_t, port)),
    T("http", http_host, ND_OT_NONE, .parse = listen, .aux = offsetof(nd_opts_t, http_port)),
    T("https", http_host, ND_OT_NONE, .parse = listen, .aux = offsetof(nd_opts_t, https_port)),
    T("http_auth", http_auth_user, ND_OT_NONE, .parse = http_auth),
    T("prof_block_rate", prof_block_rate, ND_OT_INT),
    T("ocsp", ocsp_urls, ND_OT_STRLIST, .parse = ocsp),
    T("default_js_domain", js_default_domains, ND_OT_STRLIST, .parse = default_js_domain),
    T("tls", tls_cfg, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 1),
    T("authorization", users, ND_OT_NONE, .parse = authorization),
    T(NULL, users, ND_OT_ARRAY, .sub = &nd_opt_user_block,
      .count_off = offsetof(nd_opts_t, nusers)),
    T(NULL, auth_callout, ND_OT_PTR, .sub = &nd_opt_callout_block),
    T("accounts", accounts, ND_OT_ARRAY, .sub = &nd_opt_account_block,
      .count_off = offsetof(nd_opts_t, naccounts), .parse = accounts),
    T("mappings maps", accounts, ND_OT_NONE, .parse = mappings),
    /* operator mode: opts_trust.c */
    T("operator operators roots root root_operators root_operator resolver account_resolver "
      "accounts_resolver resolver_tls resolver_preload resolver_pinned_accounts trusted "
      "trusted_keys",
      operators, ND_OT_NONE, .parse = trust),
    T(NULL, operators, ND_OT_STRLIST),
    T(NULL, trusted_keys, ND_OT_STRLIST),
    T(NULL, resolver, ND_OT_PTR, .sub = &nd_opt_resolver_block),
    T(NULL, resolver_tls, ND_OT_PTR, .sub = &nd_opt_tls_block),
    T(NULL, resolver_preload, ND_OT_STRLIST),
    T(NULL, resolver_pinned_accounts, ND_OT_STRLIST),
    /* command line and process */
    T(NULL, config_file, ND_OT_STR),
    T(NULL, config_warnings, ND_OT_STR),
    T(NULL, signal, ND_OT_STR),
    T(NULL, cluster_url, ND_OT_STR),
    T(NULL, routes, ND_OT_STR),
    T(NULL, cluster_name, ND_OT_STR),
    T(NULL, cluster_advertise, ND_OT_STR),
    ND_OPT_END,
};
#undef T
#undef REFUSE
#undef RELOAD
#undef ZDEF
#undef ZDEF_BOUNDED
#undef I32MAX

const nd_opt_block_t nd_opt_top_block = {"", NULL, sizeof(nd_opts_t), top_d, ND_RL_REFUSE, NULL};

/* The feature warning of a configured-but-unbuilt feature. */
static void
feature_warning(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    for (size_t f = 0; f < sizeof feature_warnings / sizeof feature_warnings[0]; f++) {
        if (!nd_cfg_key_is(e->key, feature_warnings[f].keys))
            continue;
        nd_cfg_warn(a, false, nd_cfg_at_entry(e),
                    "%s is configured but not supported yet by natsd: ignored",
                    feature_warnings[f].feature);
        return;
    }
}

static int
apply_root(nd_cfg_apply_t *a, const nd_cfg_node_t *root)
{
    for (size_t n = 0; n < root->u.map.n; n++) {
        const nd_cfg_entry_t *e = &root->u.map.e[n];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_opt_desc_t *d = nd_opt_find(&nd_opt_top_block, e->key);
        if (d != NULL) {
            unsigned seen = 0;
            if (nd_opt_parse_row(a, d, a->o, e, &seen) < 0)
                return -1;
            feature_warning(a, e);
            continue;
        }
        bool later = false;
        for (size_t u = 0; u < sizeof later_keys / sizeof later_keys[0]; u++)
            later = later || strcasecmp(later_keys[u], e->key) == 0;
        if (later)
            nd_cfg_warn(a, false, at, "\"%s\" is not supported by natsd yet; ignored", e->key);
        else if (nd_cfg_unknown(a, e) < 0)
            return -1;
    }
    /* A 0 written in the file means what nd_opts_zero_rules says before anything compares it
     * (max_pending: 0 is the default 64MB, not a limit max_payload would exceed). */
    nd_opts_baseline(a->o);
    if (a->o->max_payload > a->o->max_pending) {
        snprintf(a->err, a->errlen, "max_payload (%lld) cannot be higher than max_pending (%lld)",
                 (long long)a->o->max_payload, (long long)a->o->max_pending);
        return -1;
    }
    return 0;
}

/* Applies a parsed tree (freed here) onto o; see nd_opts_apply_config. */
static int
apply_tree(nd_opts_t *o, nd_cfg_node_t *root, char *err, size_t errlen)
{
    nd_cfg_apply_t a = {.o = o, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    for (size_t i = 0; i < o->nusers; i++) {
        const nd_user_t *u = &o->users[i];
        nd_cfg_strset_add(&a.user_ids, u->nkey ? u->nkey : u->name ? u->name : "", i, NULL);
    }
    int rc = apply_root(&a, root);
    nd_cfg_strset_free(&a.user_ids);
    nd_cfg_free(root);
    if (rc < 0 && a.stricts_len > 0 && errlen > 0) {
        /* As nats-server reports: its warnings first, then the error. */
        size_t el = strlen(err);
        char *e = nd_xmalloc(el + 1);
        memcpy(e, err, el + 1);
        snprintf(err, errlen, "%s%s", a.stricts, e);
        nd_free(e);
    }
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

int
nd_opts_apply_config(nd_opts_t *o, const char *path, char *err, size_t errlen)
{
    nd_cfg_node_t *root = NULL;
    nd_cfg_err_t perr;
    if (!nd_cfg_parse_file(path, &root, &perr)) {
        snprintf(err, errlen, "%s", perr.text);
        return -1;
    }
    return apply_tree(o, root, err, errlen);
}

int
nd_opts_apply_config_string(nd_opts_t *o, const char *text, const char *name, char *err,
                            size_t errlen)
{
    nd_cfg_node_t *root = NULL;
    nd_cfg_err_t perr;
    if (!nd_cfg_parse_string(text, name, &root, &perr)) {
        snprintf(err, errlen, "%s", perr.text);
        return -1;
    }
    return apply_tree(o, root, err, errlen);
}

int
nd_opts_set_option(nd_opts_t *o, const char *name, const char *value, char *err, size_t errlen)
{
    /* The line `name: value` of a config file; the name is checked so that it cannot carry
     * another line, and the value must parse as exactly that one entry. */
    bool ok = name != NULL && *name != '\0' && value != NULL;
    for (const char *p = name; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
             *p == '_';
    if (!ok) {
        snprintf(err, errlen, "invalid option name \"%s\"", name ? name : "");
        return -1;
    }
    size_t len = strlen(name) + strlen(value) + 4;
    char *text = nd_xmalloc(len);
    snprintf(text, len, "%s: %s\n", name, value);
    nd_cfg_node_t *root = NULL;
    nd_cfg_err_t perr;
    bool parsed = nd_cfg_parse_string(text, name, &root, &perr);
    nd_free(text);
    if (!parsed) {
        snprintf(err, errlen, "%s", perr.text);
        return -1;
    }
    if (root->u.map.n != 1 || strcasecmp(root->u.map.e[0].key, name) != 0) {
        nd_cfg_free(root);
        snprintf(err, errlen, "the value of \"%s\" is not a single value", name);
        return -1;
    }
    return apply_tree(o, root, err, errlen);
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
