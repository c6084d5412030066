/* Configuration files -> server options: maps the top-level keys of a parsed nats-server config
 * (src/cfg/conf.h) onto nd_opts_t, with nats-server's aliases, defaults, checks and texts.
 *
 * Algorithm: walk the root map's entries in written order (a later key overrides an earlier
 * one, e.g. `listen` then `port`); each key is looked up, ignoring case as nats-server does,
 * among the scalar keys handled here, then the blocks, each parsed by its own file
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
    {"cluster", "Clustering"},
    {"gateway", "Gateways"},
    {"leaf leafnodes", "Leafnodes"},
    {"jetstream", "JetStream"},
    {"mqtt", "MQTT"},
    {"websocket ws", "WebSocket"},
    /* operator, resolver: MEMORY and resolver_preload are wired (src/auth/auth_jwt.c, which warns
     * about the resolvers it does not build); these are not. */
    {"trusted trusted_keys resolver_tls resolver_pinned_accounts", "Operator mode"},
    {"prof_port", "Profiling"},
};

/* The old range checks of the keys natsd implemented first (their texts are natsd's own). */
static int
get_int(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *key, const nd_cfg_node_t *v, int64_t min,
        int64_t max, int64_t *out)
{
    if (v->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, v, ND_CFG_INT);
    if (v->u.i < min || v->u.i > max)
        return nd_cfg_fail(a, at, "invalid value %lld for %s: out of range [%lld, %lld]",
                           (long long)v->u.i, key, (long long)min, (long long)max);
    *out = v->u.i;
    return 0;
}

/* lame_duck_duration / lame_duck_grace_period: strings only, as in nats-server. */
static int
lame_duck(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *k, const nd_cfg_node_t *v)
{
    nd_opts_t *o = a->o;
    bool dur = nd_cfg_key_is(k, "lame_duck_duration");
    int64_t ms;
    if (nd_cfg_duration_str(a, at,
                            dur ? "error parsing lame_duck_duration"
                                : "error parsing lame_duck_grace_period",
                            v, &ms) < 0)
        return -1;
    if (dur && ms < 30000) {
        char d[64];
        nd_cfg_go_dur_string(ms, d, sizeof d);
        return nd_cfg_fail(a, at, "invalid lame_duck_duration of %s, minimum is 30 seconds", d);
    }
    if (!dur && ms < 0)
        return nd_cfg_fail(a, at, "invalid lame_duck_grace_period, needs to be positive");
    if (dur)
        o->lame_duck_duration_ms = ms;
    else
        o->lame_duck_grace_period_ms = ms;
    return 0;
}

static int
server_tags(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v)
{
    nd_strlist_t *tags = &a->o->server_tags;
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
ocsp(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v)
{
    nd_opts_t *o = a->o;
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
default_js_domain(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v)
{
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
    nd_strlist_free(&a->o->js_default_domains);
    a->o->js_default_domains = l;
    return 0;
}

/* max_payload and max_control_line: nats-server's "too big" above 2^31-1. */
static int
limit32(nd_cfg_apply_t *a, nd_cfg_at_t at, const char *k, const nd_cfg_node_t *v, int64_t *out)
{
    if (v->type != ND_CFG_INT)
        return nd_cfg_type_err(a, at, v, ND_CFG_INT);
    if (v->u.i > INT32_MAX)
        return nd_cfg_fail(a, at, "%s value is too big", k);
    if (v->u.i < 0)
        return nd_cfg_fail(a, at, "invalid value %lld for %s: out of range [0, %d]",
                           (long long)v->u.i, k, INT32_MAX);
    *out = v->u.i;
    return 0;
}

/* Returns: 1 when the key is a top-level scalar handled here (0 -> -1 on error), 0 when not. */
static int
apply_scalar(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    nd_opts_t *o = a->o;
    const nd_cfg_node_t *v = e->val;
    const char *k = e->key;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    int64_t i;
    int rc = 0;
    if (nd_cfg_key_is(k, "host net")) {
        rc = nd_cfg_str(a, at, v, &o->host);
    } else if (nd_cfg_key_is(k, "server_name")) {
        rc = nd_cfg_str(a, at, v, &o->server_name);
    } else if (nd_cfg_key_is(k, "client_advertise")) {
        rc = nd_cfg_str(a, at, v, &o->client_advertise);
    } else if (nd_cfg_key_is(k, "logfile log_file")) {
        rc = nd_cfg_str(a, at, v, &o->log_file);
    } else if (nd_cfg_key_is(k, "pidfile pid_file")) {
        rc = nd_cfg_str(a, at, v, &o->pid_file);
    } else if (nd_cfg_key_is(k, "ports_file_dir")) {
        rc = nd_cfg_str(a, at, v, &o->ports_file_dir);
    } else if (nd_cfg_key_is(k, "remote_syslog")) {
        rc = nd_cfg_str(a, at, v, &o->remote_syslog);
    } else if (nd_cfg_key_is(k, "http_base_path")) {
        rc = nd_cfg_str(a, at, v, &o->http_base_path);
    } else if (nd_cfg_key_is(k, "no_auth_user")) {
        rc = nd_cfg_str(a, at, v, &o->no_auth_user);
    } else if (nd_cfg_key_is(k, "system_account system")) {
        if (v->type != ND_CFG_STRING)
            return nd_cfg_fail(a, at, "system account name must be a string");
        nd_set_str(&o->system_account, v->u.str.s);
    } else if (nd_cfg_key_is(k, "listen")) {
        rc = nd_cfg_listen(a, at, v, &o->host, &o->port);
    } else if (nd_cfg_key_is(k, "http")) {
        rc = nd_cfg_listen(a, at, v, &o->http_host, &o->http_port);
    } else if (nd_cfg_key_is(k, "https")) {
        rc = nd_cfg_listen(a, at, v, &o->http_host, &o->https_port);
    } else if (nd_cfg_key_is(k, "http_port monitor_port")) {
        rc = nd_cfg_int(a, at, v, &o->http_port);
    } else if (nd_cfg_key_is(k, "https_port")) {
        rc = nd_cfg_int(a, at, v, &o->https_port);
    } else if (nd_cfg_key_is(k, "http_auth")) {
        /* natsd's own block: access control for the monitoring port (src/mon/http.c). */
        if (v->type != ND_CFG_MAP)
            return nd_cfg_type_err(a, at, v, ND_CFG_MAP);
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
    } else if (nd_cfg_key_is(k, "port")) {
        if ((rc = get_int(a, at, "port", v, -1, 65535, &i)) == 0)
            o->port = (int)i;
    } else if (nd_cfg_key_is(k, "max_payload")) {
        if ((rc = limit32(a, at, k, v, &i)) == 0)
            o->max_payload = i;
    } else if (nd_cfg_key_is(k, "max_control_line")) {
        if ((rc = limit32(a, at, k, v, &i)) == 0)
            o->max_control_line = (int32_t)i;
    } else if (nd_cfg_key_is(k, "max_connections max_conn")) {
        if ((rc = get_int(a, at, "max_connections", v, 0, INT32_MAX, &i)) == 0)
            o->max_connections = (int32_t)i;
    } else if (nd_cfg_key_is(k, "max_subscriptions max_subs")) {
        if ((rc = get_int(a, at, "max_subscriptions", v, 0, INT32_MAX, &i)) == 0)
            o->max_subscriptions = (int32_t)i;
    } else if (nd_cfg_key_is(k, "max_pending")) {
        if ((rc = get_int(a, at, "max_pending", v, 0, INT64_MAX, &i)) == 0)
            o->max_pending = i;
    } else if (nd_cfg_key_is(k, "max_sub_tokens max_subscription_tokens")) {
        if ((rc = nd_cfg_i64(a, at, v, &i)) == 0) {
            if (i > 255)
                rc = nd_cfg_fail(a, at, "%s value is too big", k);
            else if (i <= 0)
                rc = nd_cfg_fail(a, at, "%s value can not be negative", k);
            else
                o->max_sub_tokens = (int)i;
        }
    } else if (nd_cfg_key_is(k, "ping_max")) {
        if ((rc = get_int(a, at, "ping_max", v, 0, INT32_MAX, &i)) == 0)
            o->ping_max = (int32_t)i;
    } else if (nd_cfg_key_is(k, "ping_interval")) {
        rc = nd_cfg_duration(a, at, "ping_interval", v, &o->ping_interval_ms);
    } else if (nd_cfg_key_is(k, "write_deadline")) {
        rc = nd_cfg_duration(a, at, "write_deadline", v, &o->write_deadline_ms);
    } else if (nd_cfg_key_is(k, "lame_duck_duration lame_duck_grace_period")) {
        rc = lame_duck(a, at, k, v);
    } else if (nd_cfg_key_is(k, "logfile_size_limit log_size_limit")) {
        rc = nd_cfg_i64(a, at, v, &o->log_size_limit);
    } else if (nd_cfg_key_is(k, "logfile_max_num log_max_num")) {
        rc = nd_cfg_i64(a, at, v, &o->log_max_num);
    } else if (nd_cfg_key_is(k, "max_traced_msg_len")) {
        rc = nd_cfg_i64(a, at, v, &o->max_traced_msg_len);
    } else if (nd_cfg_key_is(k, "max_closed_clients")) {
        rc = nd_cfg_int(a, at, v, &o->max_closed_clients);
    } else if (nd_cfg_key_is(k, "connect_error_reports")) {
        rc = nd_cfg_int(a, at, v, &o->connect_error_reports);
    } else if (nd_cfg_key_is(k, "reconnect_error_reports")) {
        rc = nd_cfg_int(a, at, v, &o->reconnect_error_reports);
    } else if (nd_cfg_key_is(k, "prof_port")) {
        rc = nd_cfg_int(a, at, v, &o->prof_port);
    } else if (nd_cfg_key_is(k, "prof_block_rate")) {
        rc = nd_cfg_int(a, at, v, &o->prof_block_rate);
    } else if (nd_cfg_key_is(k, "worker_threads")) {
        /* natsd's own key (-w): the worker pool size. */
        if ((rc = get_int(a, at, "worker_threads", v, 0, 1024, &i)) == 0)
            o->workers = (unsigned)i;
    } else if (nd_cfg_key_is(k, "trace_verbose")) {
        /* nats-server: trace_verbose sets both TraceVerbose and Trace. */
        if ((rc = nd_cfg_bool(a, at, v, &o->trace_verbose)) == 0)
            o->trace = o->trace_verbose;
    } else if (nd_cfg_key_is(k, "server_tags")) {
        rc = server_tags(a, at, v);
    } else if (nd_cfg_key_is(k, "ocsp")) {
        rc = ocsp(a, at, v);
    } else if (nd_cfg_key_is(k, "default_js_domain")) {
        rc = default_js_domain(a, at, v);
    } else {
        static const struct {
            const char *names;
            size_t off;
        } bools[] = {
            {"debug", offsetof(nd_opts_t, debug)},
            {"trace", offsetof(nd_opts_t, trace)},
            {"logtime", offsetof(nd_opts_t, logtime)},
            {"logtime_utc", offsetof(nd_opts_t, logtime_utc)},
            {"syslog", offsetof(nd_opts_t, syslog)},
            {"no_header_support", offsetof(nd_opts_t, no_header_support)},
            {"no_fast_producer_stall", offsetof(nd_opts_t, no_fast_producer_stall)},
            {"disable_sublist_cache no_sublist_cache", offsetof(nd_opts_t, disable_sublist_cache)},
            {"no_system_account no_system no_sys_acc", offsetof(nd_opts_t, no_system_account)},
            {"allow_non_tls", offsetof(nd_opts_t, allow_non_tls)},
        };
        for (size_t b = 0; b < sizeof bools / sizeof bools[0]; b++) {
            if (!nd_cfg_key_is(k, bools[b].names))
                continue;
            if (nd_cfg_bool(a, at, v, (bool *)((char *)o + bools[b].off)) < 0)
                return -1;
            return 1;
        }
        return 0;
    }
    return rc < 0 ? -1 : 1;
}

/* Returns: 1 when the key is a block (parsed, 0 -> -1 on error), 0 when not. */
static int
apply_block(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    const char *k = e->key;
    int rc;
    if (nd_cfg_key_is(k, "tls"))
        rc = nd_cfg_tls(a, e, true, &a->o->tls_cfg);
    else if (nd_cfg_key_is(k, "authorization"))
        rc = nd_cfg_apply_authorization(a, e);
    else if (nd_cfg_key_is(k, "accounts"))
        rc = nd_cfg_apply_accounts(a, e);
    else if (nd_cfg_key_is(k, "mappings maps"))
        rc = nd_cfg_apply_mappings(a, e);
    else if (nd_cfg_key_is(k, "cluster"))
        rc = nd_cfg_apply_cluster(a, e);
    else if (nd_cfg_key_is(k, "gateway"))
        rc = nd_cfg_apply_gateway(a, e);
    else if (nd_cfg_key_is(k, "leaf leafnodes"))
        rc = nd_cfg_apply_leaf(a, e);
    else if (nd_cfg_key_is(k, "jetstream"))
        rc = nd_cfg_apply_jetstream(a, e);
    else if (nd_cfg_key_is(k, "store_dir storedir"))
        rc = nd_cfg_apply_store_dir(a, e);
    else if (nd_cfg_key_is(k, "mqtt"))
        rc = nd_cfg_apply_mqtt(a, e);
    else if (nd_cfg_key_is(k, "websocket ws"))
        rc = nd_cfg_apply_websocket(a, e);
    else
        return nd_cfg_apply_trust(a, e);
    return rc < 0 ? -1 : 1;
}

/* The feature warning of a configured-but-unbuilt feature (jetstream only when enabled). */
static void
feature_warning(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    for (size_t f = 0; f < sizeof feature_warnings / sizeof feature_warnings[0]; f++) {
        if (!nd_cfg_key_is(e->key, feature_warnings[f].keys))
            continue;
        if (nd_cfg_key_is(e->key, "jetstream") && !a->o->jetstream)
            return;
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
        int rc = apply_scalar(a, e);
        if (rc == 0)
            rc = apply_block(a, e);
        if (rc < 0)
            return -1;
        if (rc > 0) {
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
