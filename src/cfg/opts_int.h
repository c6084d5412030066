/* The config-file block parsers (src/net/opts_<block>.c), called by opts_conf.c for the top-level
 * keys; each parses one block into its nd_opts_t field with nats-server's checks and texts.
 * Entry points take the map entry (key position and value) and return 0, or -1 with the error
 * in the apply context. Ctx: one nd_opts_apply_config call.
 */
#ifndef ND_NET_OPTS_INT_H
#define ND_NET_OPTS_INT_H

#include "cfg/opts_parse.h"

/* opts_tls.c: a tls block into *out (replaced). client_ctx is false for cluster and gateway. */
int nd_cfg_tls(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, bool client_ctx, nd_tls_opts_t **out);

/* opts_auth.c */
typedef struct nd_cfg_auth {
    char *user, *pass, *token;
    double timeout_s;
    nd_user_t *users;
    size_t nusers;
    bool users_set; /* `users` was written, even empty */
    bool has_default_perms;
    nd_perms_t default_perms;
    nd_auth_callout_opts_t *callout; /* auth_callout (2.10), owned */
} nd_cfg_auth_t;

/* Whether s is a valid public nkey with the given prefix letter ('U' user, 'A' account,
 * 'O' operator, 'N' server). */
bool nd_cfg_valid_nkey(const char *s, char prefix_letter);
/* parsePermSubjects: a subject or an array of subjects (queue forms allowed) into *out. An at
 * without a file reports without a position, as nats-server does for some callers. */
int nd_cfg_perm_subjects(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v,
                         nd_strlist_t *out);
/* parseUserPermissions at entry e into *out (replaced); nopos_top: the "not a map" error has no
 * position (nats-server passes the unwrapped value from some callers). */
int nd_cfg_perms(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, bool nopos_top, nd_perms_t *out);
/* parseUsers at entry e into *users (replaced). */
int nd_cfg_users(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, bool nopos_top, nd_user_t **users,
                 size_t *n);
void nd_cfg_apply_default_perms(nd_user_t *users, size_t n, const nd_perms_t *p);
/* parseAuthorization into *au (cleared first; free with nd_cfg_auth_clear). */
int nd_cfg_authorization(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_cfg_auth_t *au);
void nd_cfg_auth_clear(nd_cfg_auth_t *au);
/* The authorization block of cluster and gateway (block: "Cluster" or "Gateway" in the texts):
 * parseAuthorization restricted to one user (no users array, no token), whose user, password and
 * timeout replace *user, *pass and *timeout_s. *au keeps the parsed block for the caller's own
 * checks; free it with nd_cfg_auth_clear whatever this returns. */
int nd_cfg_single_user_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const char *block,
                            nd_cfg_auth_t *au, char **user, char **pass, double *timeout_s);
/* parseSimpleAuth (websocket, mqtt): user, password, token, timeout; fields replaced. */
int nd_cfg_simple_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, char **user, char **pass,
                       char **token, double *timeout_s);
/* Fails with `Duplicate user|nkey "x" detected` at at if one of users is already in a->o. */
int nd_cfg_check_new_users(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_user_t *users, size_t n);
/* Moves *u to the end of a->o->users (u is zeroed) and records its name or nkey. */
void nd_cfg_add_user(nd_cfg_apply_t *a, nd_user_t *u);
/* The top-level authorization block. */
int nd_cfg_apply_authorization(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);

/* opts_acct.c */
int nd_cfg_apply_accounts(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
/* The top-level mappings: an account entry named "$G". */
int nd_cfg_apply_mappings(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
int nd_cfg_mappings(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_account_opts_t *acc);
int nd_cfg_account_js(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, nd_acct_js_t *js);

/* opts_cluster.c, opts_gateway.c, opts_leaf.c */
int nd_cfg_apply_cluster(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
int nd_cfg_apply_gateway(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
int nd_cfg_apply_leaf(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
/* Compression modes of routes and leafnodes (2.10): a mode string or {mode, rtt_thresholds}. */
int nd_cfg_compression(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, char **mode);

/* opts_js.c */
int nd_cfg_apply_jetstream(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
/* The top-level store_dir / storedir key. */
int nd_cfg_apply_store_dir(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);

/* opts_mqtt.c, opts_ws.c */
int nd_cfg_apply_mqtt(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);
int nd_cfg_apply_websocket(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);

/* opts_trust.c: operator, trusted keys, resolver, resolver_tls, resolver_preload,
 * resolver_pinned_accounts. Returns: 1 when the key was one of these (0 -> applied), 0 when
 * not, -1 on error. */
int nd_cfg_apply_trust(nd_cfg_apply_t *a, const nd_cfg_entry_t *e);

#endif
