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

/* ---- What 0 means, per option ---------------------------------------------------------------
 * A numeric option written as 0 does not always mean 0: nats-server's setBaselineOptions
 * (server/opts.go), run after the config file and the flags, at start and on every reload,
 * replaces 0 with the default for most limits and timeouts, while for others 0 is "no limit" or
 * a literal 0. Each such option's rule is declared once, in its row of the option tables
 * (src/cfg/opts_table.h), and nd_opts_baseline applies it: nothing else in natsd decides what a
 * 0 means. */
typedef enum nd_zero_rule {
    ND_ZERO_DEFAULT,        /* 0 means the default: nd_opts_baseline writes .def */
    ND_ZERO_DEFAULT_AT_USE, /* 0 means a default that depends on other options: kept as 0 and
                             * resolved where it is used (named in .note) */
    ND_ZERO_UNLIMITED,      /* 0 means no limit: kept */
    ND_ZERO_LITERAL,        /* an explicit 0 is kept as 0 (the default is for "not written") */
} nd_zero_rule_t;

typedef enum nd_opt_num {
    ND_OPT_I32,    /* int32_t */
    ND_OPT_INT,    /* int */
    ND_OPT_I64,    /* int64_t (sizes in bytes, durations in ms) */
    ND_OPT_DOUBLE, /* double (seconds) */
} nd_opt_num_t;

#define ND_OPT_TOP ((size_t)-1) /* nd_opt_zero_t.block of a top-level option */

typedef struct nd_opt_zero {
    const char *key; /* the config key, "block.key" inside a block */
    size_t block;    /* ND_OPT_TOP, or offsetof the block's pointer in nd_opts_t (a NULL
                      * pointer: the block is not configured and the rule does not apply) */
    size_t off;      /* offsetof the field in nd_opts_t, or in the block's struct */
    nd_opt_num_t type;
    nd_zero_rule_t rule;
    int64_t def;      /* ND_ZERO_DEFAULT: the value 0 stands for, in the field's unit */
    const char *note; /* why, or where an ND_ZERO_DEFAULT_AT_USE is resolved */
} nd_opt_zero_t;

/* The rules, one entry per option where 0 can be written: a flat view of the zero columns of
 * the option tables (src/cfg/opts_table.h: .zero, .def, .note of the rows with ND_OF_ZERO),
 * gathered on first use. Ctx: any thread. */
const nd_opt_zero_t *nd_opts_zero_table(void);
size_t nd_opts_zero_count(void);
#define nd_opts_zero_rules  (nd_opts_zero_table())
#define nd_opts_zero_nrules (nd_opts_zero_count())

/* ---- Config-file blocks ---------------------------------------------------------------------
 * Typed forms of nats-server's nested config blocks (inventory §2.2, §5, §6, §7, §8), parsed and
 * validated by src/net/opts_<block>.c and owned by nd_opts_t (deep-copied by nd_opts_copy).
 * Features that are not built yet are parsed into these so the issues that build them only wire
 * them. Conventions: a NULL pointer or a false has_* flag means "not configured"; durations are in
 * milliseconds; sizes in bytes; strings are owned copies. */

/* An owned array of owned strings. */
typedef struct nd_strlist {
    char **v;
    size_t n;
} nd_strlist_t;

typedef struct nd_tls_cert_pair {
    char *cert_file, *key_file;
} nd_tls_cert_pair_t;

/* tls {} (main, cluster, gateway, leafnodes, remotes, websocket, mqtt, resolver_tls). */
typedef struct nd_tls_opts {
    char *cert_file, *key_file, *ca_file;
    nd_tls_cert_pair_t *certs; /* certs: [{cert_file, key_file}] (2.10) */
    size_t ncerts;
    bool verify;            /* also set by verify_and_map and verify_cert_and_check_known_urls */
    bool verify_and_map;    /* map the client certificate to a user */
    bool check_known_urls;  /* verify_cert_and_check_known_urls (cluster and gateway only) */
    bool insecure;          /* solicited connections skip server verification */
    nd_strlist_t cipher_suites;     /* Go names (TLS_ECDHE_...); empty = defaults */
    nd_strlist_t curve_preferences; /* CurveP256, ...; empty = defaults */
    nd_strlist_t pinned_certs;      /* lower-case hex sha256 of the SPKI */
    double timeout_s;               /* handshake timeout; 0 = the context's default */
    int64_t rate_limit;             /* connection_rate_limit, per second; 0 = none */
    int min_version;                /* 0 = TLS 1.2 (default), else 0x0303 or 0x0304 (2.10) */
    bool handshake_first;           /* TLS before INFO (2.10) */
    int64_t fallback_delay_ms;      /* handshake_first: auto or a duration (2.10) */
    bool ocsp_peer;                 /* ocsp_peer: true (2.10) */
} nd_tls_opts_t;

/* One direction of a permission: allow and deny lists. Unset and empty differ (nats-server:
 * allow_responses turns an unset publish allow into an empty one, which allows nothing). */
typedef struct nd_subj_perm {
    bool allow_set, deny_set;
    nd_strlist_t allow, deny; /* subjects, or "subject queue" for subscribe */
} nd_subj_perm_t;

#define ND_ALLOW_RESPONSES_MAX_MSGS   1
#define ND_ALLOW_RESPONSES_EXPIRES_MS (2 * 60 * 1000)

/* permissions { publish, subscribe, allow_responses } (cluster: import = publish,
 * export = subscribe). */
typedef struct nd_perms {
    bool pub_set, sub_set, resp_set;
    nd_subj_perm_t pub, sub;
    int64_t resp_max_msgs;   /* allow_responses max; negative = unlimited */
    int64_t resp_expires_ms; /* allow_responses expires; negative = never */
} nd_perms_t;

/* allowed_connection_types bits (0 = any). */
#define ND_CONN_TYPE_STANDARD    (1u << 0)
#define ND_CONN_TYPE_WEBSOCKET   (1u << 1)
#define ND_CONN_TYPE_LEAFNODE    (1u << 2)
#define ND_CONN_TYPE_LEAFNODE_WS (1u << 3)
#define ND_CONN_TYPE_MQTT        (1u << 4)
#define ND_CONN_TYPE_MQTT_WS     (1u << 5)
#define ND_CONN_TYPE_IN_PROCESS  (1u << 6)

/* A user of authorization {users}, accounts {X {users}} or leafnodes {authorization {users}}. */
typedef struct nd_user {
    char *name, *pass; /* a user/password user (pass may be a bcrypt hash) */
    char *nkey;        /* or an nkey user (public "U..." key), with no name or pass */
    char *account;     /* NULL = the global account $G */
    bool has_perms;    /* own permissions, or the default_permissions that applied */
    nd_perms_t perms;
    uint32_t conn_types; /* ND_CONN_TYPE_* bits; 0 = any */
} nd_user_t;

typedef enum nd_resp_type {
    ND_RESP_SINGLETON = 0,
    ND_RESP_STREAM,
    ND_RESP_CHUNKED,
} nd_resp_type_t;

/* accounts { X { exports: [ {stream|service, accounts, response_type, ...} ] } } */
typedef struct nd_export {
    bool service; /* else a stream export */
    char *subject;
    nd_strlist_t accounts; /* empty = public */
    nd_resp_type_t resp_type;
    int64_t resp_threshold_ms; /* 0 = the default (2m) */
    char *latency_subject;     /* NULL = no latency tracking */
    int latency_sampling;      /* 1-100 (%), 0 = "headers" */
    uint32_t account_token_position;
} nd_export_t;

/* accounts { X { imports: [ {stream|service: {account, subject}, to, prefix, share} ] } } */
typedef struct nd_import {
    bool service; /* else a stream import */
    char *account, *subject;
    char *to;     /* service: local subject (default = subject); stream: mapped subject */
    char *prefix; /* stream only */
    bool share;   /* service only */
} nd_import_t;

typedef struct nd_mapping_dest {
    char *subject;
    int weight;    /* percent 0-100 */
    char *cluster; /* NULL = any cluster */
} nd_mapping_dest_t;

/* mappings { "src": "dest" | {destination, weight, cluster} | [ ... ] } */
typedef struct nd_mapping {
    char *src;
    bool weighted; /* written with weights (else a single plain destination at 100) */
    nd_mapping_dest_t *dests;
    size_t ndests;
} nd_mapping_t;

/* An account's jetstream: enabled | {max_mem, max_file, ...}; -1 = no limit. */
typedef struct nd_acct_js {
    bool enabled;
    int64_t max_memory, max_store, max_streams, max_consumers;
    int64_t memory_max_stream_bytes, store_max_stream_bytes, max_ack_pending;
    bool max_bytes_required;
} nd_acct_js_t;

/* accounts { NAME { ... } } (or accounts: [NAME, ...]); the top-level mappings form an entry
 * named "$G". Users are in nd_opts_t.users with .account = NAME. */
typedef struct nd_account_opts {
    char *name;
    char *nkey; /* the account's public key "A..." */
    nd_export_t *exports;
    size_t nexports;
    nd_import_t *imports;
    size_t nimports;
    nd_mapping_t *mappings;
    size_t nmappings;
    bool has_default_perms;
    nd_perms_t default_perms;
    int32_t max_connections, max_subscriptions, max_payload, max_leafnodes; /* -1 = no limit */
    nd_acct_js_t js;
} nd_account_opts_t;

/* cluster {} */
typedef struct nd_cluster_opts {
    char *name;
    char *host;
    int port;
    char *user, *pass; /* authorization { user, password, timeout } */
    double auth_timeout_s;
    nd_strlist_t routes; /* route URLs as written (nats-route://user:pass@host:port) */
    nd_tls_opts_t *tls;
    char *advertise;
    bool no_advertise;
    int connect_retries;
    bool has_perms; /* permissions { import (pub), export (sub) } */
    nd_perms_t perms;
    int pool_size;               /* 2.10; 0 = default (3), -1 = no pooling */
    nd_strlist_t pinned_accounts; /* accounts: [...] (2.10) */
    char *compression;           /* 2.10: off|accept|s2_fast|s2_better|s2_best|s2_auto */
    int64_t ping_interval_ms;    /* 0 = the top-level value */
    int ping_max;                /* 0 = the top-level value */
} nd_cluster_opts_t;

typedef struct nd_gateway_remote {
    char *name;
    nd_strlist_t urls;
    nd_tls_opts_t *tls;
} nd_gateway_remote_t;

/* gateway {} */
typedef struct nd_gateway_opts {
    char *name;
    char *host;
    int port;
    char *user, *pass;
    double auth_timeout_s;
    nd_tls_opts_t *tls;
    char *advertise;
    int connect_retries;
    nd_gateway_remote_t *gateways;
    size_t ngateways;
    bool reject_unknown;
} nd_gateway_opts_t;

/* leafnodes { remotes: [ ... ] } */
typedef struct nd_leaf_remote {
    nd_strlist_t urls;
    bool no_randomize;
    char *account;     /* local account bound to the remote (account / local) */
    char *credentials; /* creds file, ~ expanded */
    char *nkey;        /* an nkey seed that signs the hub's nonce (2.10) */
    nd_tls_opts_t *tls;
    bool hub;
    nd_strlist_t deny_imports, deny_exports;
    bool ws_compression, ws_no_masking;
    bool js_cluster_migrate;
    char *compression;             /* 2.10 */
    int64_t first_info_timeout_ms; /* 2.10 */
} nd_leaf_remote_t;

/* leafnodes {} */
typedef struct nd_leaf_opts {
    char *host;
    int port; /* 0 = no listener (the usual value is 7422) */
    char *user, *pass, *account; /* authorization {} */
    double auth_timeout_s;
    nd_user_t *users; /* authorization { users: [{user, password, account}] } */
    size_t nusers;
    nd_leaf_remote_t *remotes;
    size_t nremotes;
    int64_t reconnect_ms; /* 0 = the default (1s) */
    nd_tls_opts_t *tls;
    char *advertise;
    bool no_advertise;
    char *min_version;
    char *compression; /* 2.10 */
} nd_leaf_opts_t;

typedef enum nd_js_cipher {
    ND_JS_CIPHER_CHACHA = 0,
    ND_JS_CIPHER_AES,
} nd_js_cipher_t;

/* jetstream {} beyond enabled (nd_opts_t.jetstream) and store_dir (nd_opts_t.store_dir). */
typedef struct nd_js_opts {
    int64_t max_memory, max_store; /* -1 = automatic (75% of RAM / of the disk) */
    char *domain;
    char *key, *prev_key; /* encryption keys */
    nd_js_cipher_t cipher;
    char *extension_hint;
    char *unique_tag;                 /* lower-cased, trimmed */
    int64_t sync_interval_ms;         /* 2.10; 0 = default (2m) */
    bool sync_always;                 /* sync_interval: always */
    int64_t max_outstanding_catchup;  /* 0 = default */
    int64_t request_queue_limit;      /* 0 = default */
    int64_t max_ack_pending, max_ha_assets, max_request_batch; /* limits {}; 0 = none */
    int64_t duplicate_window_ms;                               /* limits {}; 0 = none */
    bool strict;                                               /* 2.11 */
    int64_t max_buffered_size, max_buffered_msgs;              /* 2.11; 0 = default */
} nd_js_opts_t;

/* authorization { auth_callout { issuer, account, auth_users, xkey } } (2.10). */
typedef struct nd_auth_callout_opts {
    char *issuer;  /* public account nkey signing the responses */
    char *account; /* where the callout service runs; "$G" when not written */
    nd_strlist_t auth_users;
    char *xkey; /* public curve key for encrypted requests, or NULL */
} nd_auth_callout_opts_t;

/* mqtt {} */
typedef struct nd_mqtt_opts {
    char *host;
    int port;
    nd_tls_opts_t *tls;
    char *user, *pass, *token;
    double auth_timeout_s;
    char *no_auth_user;
    int64_t ack_wait_ms; /* 0 = default (30s) */
    int max_ack_pending; /* 0 = default (1024) */
    char *js_domain;
    int stream_replicas, consumer_replicas;
    bool consumer_memory_storage;
    int64_t consumer_inactive_threshold_ms;
    bool reject_qos2_publish, downgrade_qos2_subscribe; /* 2.10 */
    int64_t js_api_timeout_ms;                          /* 2.10; 0 = default (5s) */
} nd_mqtt_opts_t;

/* websocket {} */
typedef struct nd_ws_opts {
    char *host;
    int port;
    char *advertise;
    bool no_tls;
    nd_tls_opts_t *tls;
    bool same_origin;
    nd_strlist_t allowed_origins;
    int64_t handshake_timeout_ms;
    bool compression;
    char *user, *pass, *token;
    double auth_timeout_s;
    char *jwt_cookie, *user_cookie, *pass_cookie, *token_cookie;
    char *no_auth_user;
    nd_strlist_t headers; /* 2.10: alternating name, value */
    int64_t ping_interval_ms; /* 2.11: WebSocket clients' own; 0 = the top-level value */
} nd_ws_opts_t;

typedef enum nd_resolver_type {
    ND_RESOLVER_NONE = 0,
    ND_RESOLVER_MEM,
    ND_RESOLVER_URL,
    ND_RESOLVER_FULL,
    ND_RESOLVER_CACHE,
} nd_resolver_type_t;

/* resolver: MEM | URL("...") | {type: full|cache, dir, allow_delete, limit, ttl, interval,
 * timeout} */
typedef struct nd_resolver_opts {
    nd_resolver_type_t type;
    char *url; /* URL */
    char *dir; /* FULL, CACHE */
    bool allow_delete;
    int64_t limit;
    int64_t ttl_ms, interval_ms, timeout_ms;
} nd_resolver_opts_t;

typedef enum nd_ocsp_mode {
    ND_OCSP_AUTO = 0,
    ND_OCSP_ALWAYS,
    ND_OCSP_MUST,
    ND_OCSP_NEVER,
} nd_ocsp_mode_t;

#include "util/log.h"

#define ND_DEFAULT_LAME_DUCK_DURATION_MS (2 * 60 * 1000)
#define ND_DEFAULT_LAME_DUCK_GRACE_MS    (10 * 1000)
#define ND_DEFAULT_MAX_CLOSED_CLIENTS    10000
#define ND_DEFAULT_CONNECT_ERROR_REPORTS 3600
#define ND_DEFAULT_RECONNECT_ERROR_REPORTS 1

typedef struct nd_opts {
    char *host;        /* listen address, default 0.0.0.0 */
    int port;          /* default 4222; -1 = random */
    char *server_name; /* default: the server id */
    unsigned workers;  /* 0 = online CPUs */

    /* What a 0 means for these, and for the other numeric options below: nd_opts_zero_rules. */
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

    /* --- command line, logging and process files (src/cfg/opts.c, src/util/log.c, pidfile.c) ---
     * Config keys of the same names are applied by opts_conf.c. */
    bool logtime_utc;        /* logtime_utc / --logtime_utc */
    bool trace_verbose;      /* trace_verbose / -VV / -DVV */
    bool syslog;             /* syslog / -s --syslog: local syslog(3) */
    char *remote_syslog;     /* remote_syslog / -r --remote_syslog: udp://host:port */
    int64_t log_size_limit;  /* logfile_size_limit / log_size_limit / --log_size_limit, 0 = none */
    int64_t log_max_num;     /* logfile_max_num / log_max_num: rotated files kept, 0 = all */
    int64_t max_traced_msg_len; /* max_traced_msg_len, 0 = unlimited */
    char *ports_file_dir;    /* ports_file_dir / --ports_file_dir */
    char *client_advertise;  /* client_advertise / --client_advertise */
    int https_port;          /* -ms / --https_port */
    int prof_port;           /* prof_port / --profile */
    bool tls, tls_verify;    /* --tls / --tlsverify (nats-server's TLS, TLSVerify) */
    char *tls_cert, *tls_key, *tls_ca_cert; /* --tlscert / --tlskey / --tlscacert */
    char *cluster_advertise; /* --cluster_advertise */
    bool cluster_no_advertise; /* --no_advertise */
    int cluster_connect_retries; /* --connect_retries */
    char *signal;            /* -sl / --signal <cmd>[=<pid|pidfile>]: handled by the parser */

    /* ---- config file (src/cfg/opts_conf.c and opts_<block>.c); freed and copied by
     * nd_opts_cfg_free / nd_opts_cfg_copy (src/cfg/opts_blocks.c); the keys that share a
     * field with a flag are in the group above ---- */
    nd_strlist_t server_tags;
    char *http_host;      /* http / https "host:port" */
    char *http_base_path; /* NULL = "/" */
    int max_sub_tokens;   /* 0 = unlimited, else 1..255 */
    int64_t lame_duck_duration_ms;
    int64_t lame_duck_grace_period_ms;
    int max_closed_clients;
    bool disable_sublist_cache;
    int connect_error_reports;
    int reconnect_error_reports;
    int prof_block_rate;
    double auth_timeout_s;  /* authorization { timeout }; 0 = default */
    nd_auth_callout_opts_t *auth_callout; /* authorization { auth_callout } */
    nd_user_t *users;       /* authorization {users} and accounts {X {users}}, in that order */
    size_t nusers;
    char *no_auth_user;
    char *system_account;
    bool no_system_account;
    nd_account_opts_t *accounts; /* accounts {} and the top-level mappings ("$G") */
    size_t naccounts;
    nd_tls_opts_t *tls_cfg;      /* tls {} (the --tls* flags are above) */
    bool allow_non_tls;
    bool ocsp_set;
    nd_ocsp_mode_t ocsp_mode;
    nd_strlist_t ocsp_urls;
    nd_cluster_opts_t *cluster;
    nd_gateway_opts_t *gateway;
    nd_leaf_opts_t *leaf;
    nd_js_opts_t *js;            /* jetstream {} details; enabled is `jetstream` above */
    nd_strlist_t js_default_domains; /* default_js_domain: alternating account, domain */
    nd_mqtt_opts_t *mqtt;
    nd_ws_opts_t *ws;
    nd_strlist_t operators;      /* operator JWT files or inline JWTs */
    nd_strlist_t trusted_keys;
    nd_resolver_opts_t *resolver;
    nd_tls_opts_t *resolver_tls;
    nd_strlist_t resolver_preload; /* alternating account public key, JWT */
    nd_strlist_t resolver_pinned_accounts;

    /* ---- HTTP monitoring access control (src/mon/http.c): natsd's own `http_auth { user,
     * password, token }` block; off when all are NULL; /healthz stays open ---- */
    char *http_auth_user, *http_auth_pass, *http_auth_token;
} nd_opts_t;

void nd_opts_defaults(nd_opts_t *o);
/* nats-server's setBaselineOptions for what natsd has: every ND_ZERO_DEFAULT option of
 * nd_opts_zero_rules that holds 0 gets its default; the other rules keep the 0. Idempotent.
 * Ctx: run after the config file and the flags are applied, before the options are validated
 * (nd_opts_apply_config, nd_opts_parse_args and reload do). */
void nd_opts_baseline(nd_opts_t *o);
/* The system account in force: system_account when set; else "$SYS", the account nats-server
 * 2.9 creates by default (SetDefaultSystemAccount), unless no_system_account is set or the
 * server is in operator mode (there the operator JWT names it; opts_trust.c).
 * Returns: a borrowed string (o's or a literal), or NULL: no system account.
 * Ctx: pure. */
const char *nd_opts_system_account(const nd_opts_t *o);
/* Frees what o owns (the members of nd_opt_top_block's rows that own memory); scalars stay. */
void nd_opts_free(nd_opts_t *o);
/* Deep copy: dst owns its own strings. */
void nd_opts_copy(nd_opts_t *dst, const nd_opts_t *src);

/* Appends an owned copy of s. */
void nd_strlist_add(nd_strlist_t *l, const char *s);
void nd_strlist_free(nd_strlist_t *l);
nd_strlist_t nd_strlist_dup(const nd_strlist_t *l);
/* Frees what t owns and t itself (NULL is fine). */
void nd_tls_opts_free(nd_tls_opts_t *t);
/* Returns: an owned deep copy of t, or NULL for NULL. */
nd_tls_opts_t *nd_tls_opts_dup(const nd_tls_opts_t *t);
/* Frees what p owns (not p). */
void nd_perms_clear(nd_perms_t *p);
nd_perms_t nd_perms_dup(const nd_perms_t *p);
/* Frees what u owns (not u). */
void nd_user_clear(nd_user_t *u);
nd_user_t nd_user_dup(const nd_user_t *u);
/* Clears each of the n users and frees the array (NULL is fine). */
void nd_users_free(nd_user_t *u, size_t n);
/* Frees what r owns (not r) and zeroes it. */
void nd_gateway_remote_clear(nd_gateway_remote_t *r);
void nd_leaf_remote_clear(nd_leaf_remote_t *r);
/* Frees what a owns (not a). */
void nd_account_opts_clear(nd_account_opts_t *a);
/* Frees what c owns and c itself (NULL is fine). */
void nd_auth_callout_opts_free(nd_auth_callout_opts_t *c);

/* Parses nats-server-compatible flags into o (over what o holds). With -c FILE, o is reset to
 * the defaults, the file is applied (nd_opts_apply_config) and the flags then override it, as in
 * nats-server; with -t the file is checked, the verdict printed and 2 (valid) or 1 returned.
 * Returns: 0 to run, 1 for a usage error (message printed), 2 when a flag like --help or
 * --version printed its answer and the process should exit 0, ND_OPTS_SIGNAL when -sl asks to
 * signal a running server (o->signal; the caller sends it with nd_sigctl_send). */
#define ND_OPTS_SIGNAL 3
int nd_opts_parse_args(nd_opts_t *o, int argc, char **argv);
/* Applies the flags of a command line that nd_opts_parse_args already accepted over o, without
 * reading any file: config reload re-applies the flags over the re-read file (flags win, as
 * nats-server's FlagSnapshot does). Returns: 0 (the same arguments cannot fail twice). */
int nd_opts_apply_flags(nd_opts_t *o, int argc, char **argv);
/* Applies the config file at path onto o (src/cfg/opts_conf.c and the block parsers
 * opts_<block>.c): every top-level key of nats-server with its aliases, blocks included; a
 * configured feature natsd has not built yet adds a warning to o->config_warnings. Returns: 0 on
 * success; 1 on success with a warning nats-server's -t treats as fatal (an integer duration, a
 * duplicate route, ...), its text in err; -1 on error, with nats-server's text
 * ("<file>:<line>:<col>: unknown field \"x\"", ...) in err, preceded by such warnings found
 * before it, one per line, as nats-server prints them; o is then partly updated (still
 * freeable). */
int nd_opts_apply_config(nd_opts_t *o, const char *path, char *err, size_t errlen);
/* As nd_opts_apply_config for config text held in memory, named name in positions and texts
 * (includes are relative to the working directory). */
int nd_opts_apply_config_string(nd_opts_t *o, const char *text, const char *name, char *err,
                                size_t errlen);
/* One option, by its config-file key (any alias, any case), its value written as in a config
 * file: applied as the line `name: value` would be, with the same checks and texts. */
int nd_opts_set_option(nd_opts_t *o, const char *name, const char *value, char *err, size_t errlen);
/* The log module's view of o (debug, trace/trace_verbose, logtime[_utc], log_file, log_size_limit,
 * log_max_num, remote_syslog, syslog). Borrows o's strings. */
nd_log_cfg_t nd_opts_log_cfg(const nd_opts_t *o);

/* nd_log_configure with nd_opts_log_cfg(o). Returns: as nd_log_configure. */
int nd_opts_configure_log(const nd_opts_t *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Logs o->config_warnings, one warning per line. Ctx: after nd_log_setup. */
void nd_opts_log_config_warnings(const nd_opts_t *o);

#endif
