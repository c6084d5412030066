/* Ownership of the option structs that no block parser reads by table (src/cfg/opts.h): their
 * tables (opts_table.h), which free, copy and compare them, and the named helpers over them.
 *
 * Invariant: every pointer in those structs is owned by exactly one nd_opts_t; nd_opts_copy
 * therefore copies each block deeply, so a reload can swap a whole new copy while connections
 * still read the old one.
 */
#include "actors/alloc.h"
#include "cfg/opts.h"
#include "cfg/opts_table.h"

/* ---- strings and lists ---------------------------------------------------------------------- */

void
nd_strlist_add(nd_strlist_t *l, const char *s)
{
    l->v = nd_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    l->v[l->n++] = nd_xstrdup(s);
}

void
nd_strlist_free(nd_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nd_free(l->v[i]);
    nd_free(l->v);
    l->v = NULL;
    l->n = 0;
}

nd_strlist_t
nd_strlist_dup(const nd_strlist_t *l)
{
    nd_strlist_t c = {0};
    for (size_t i = 0; i < l->n; i++)
        nd_strlist_add(&c, l->v[i]);
    return c;
}

/* ---- tables of the structs that no block parser reads by table ----------------------------- */

#define R(T, ...) ND_OPT(T, NULL, __VA_ARGS__)

static const nd_opt_desc_t subj_perm_d[] = {
    R(nd_subj_perm_t, allow_set, ND_OT_BOOL),
    R(nd_subj_perm_t, deny_set, ND_OT_BOOL),
    R(nd_subj_perm_t, allow, ND_OT_STRLIST),
    R(nd_subj_perm_t, deny, ND_OT_STRLIST),
    ND_OPT_END,
};
static const nd_opt_block_t subj_perm_block = {"permission", NULL,          sizeof(nd_subj_perm_t),
                                               subj_perm_d,  ND_RL_INHERIT, NULL};

/* permissions {} is read by nd_cfg_perms (opts_auth.c). */
static const nd_opt_desc_t perms_d[] = {
    R(nd_perms_t, pub_set, ND_OT_BOOL),
    R(nd_perms_t, sub_set, ND_OT_BOOL),
    R(nd_perms_t, resp_set, ND_OT_BOOL),
    R(nd_perms_t, pub, ND_OT_STRUCT, .sub = &subj_perm_block),
    R(nd_perms_t, sub, ND_OT_STRUCT, .sub = &subj_perm_block),
    R(nd_perms_t, resp_max_msgs, ND_OT_I64),
    R(nd_perms_t, resp_expires_ms, ND_OT_I64),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_perms_block = {"permissions", NULL,          sizeof(nd_perms_t),
                                           perms_d,       ND_RL_INHERIT, NULL};

/* users: the keys are those of leafnodes { authorization { users: [...] } }, read with this
 * table (opts_leaf.c); authorization {} and accounts {} read theirs with nd_cfg_users
 * (opts_auth.c), whose checks span keys. */
static const nd_opt_desc_t user_d[] = {
    ND_OPT(nd_user_t, "user username", name, ND_OT_STR),
    ND_OPT(nd_user_t, "pass password", pass, ND_OT_STR),
    R(nd_user_t, nkey, ND_OT_STR),
    ND_OPT(nd_user_t, "account", account, ND_OT_STR),
    R(nd_user_t, has_perms, ND_OT_BOOL),
    R(nd_user_t, perms, ND_OT_STRUCT, .sub = &nd_opt_perms_block),
    R(nd_user_t, conn_types, ND_OT_U32),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_user_block = {
    "users",           "Expected user entry to be a map/struct, got %s",
    sizeof(nd_user_t), user_d,
    ND_RL_INHERIT,     NULL};

#undef R

/* ---- tls, permissions and users ----------------------------------------------------------- */

void
nd_tls_opts_free(nd_tls_opts_t *t)
{
    nd_opt_free(&nd_opt_tls_block, t);
}

nd_tls_opts_t *
nd_tls_opts_dup(const nd_tls_opts_t *t)
{
    return nd_opt_dup(&nd_opt_tls_block, t);
}

void
nd_perms_clear(nd_perms_t *p)
{
    nd_opt_clear(&nd_opt_perms_block, p);
}

nd_perms_t
nd_perms_dup(const nd_perms_t *p)
{
    nd_perms_t c;
    nd_opt_copy(&nd_opt_perms_block, &c, p);
    return c;
}

void
nd_user_clear(nd_user_t *u)
{
    nd_opt_clear(&nd_opt_user_block, u);
}

nd_user_t
nd_user_dup(const nd_user_t *u)
{
    nd_user_t c;
    nd_opt_copy(&nd_opt_user_block, &c, u);
    return c;
}

void
nd_users_free(nd_user_t *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nd_user_clear(&u[i]);
    nd_free(u);
}

/* ---- accounts, resolver, auth_callout: read by opts_acct.c, opts_trust.c, opts_auth.c ------ */

#define R(T, ...) ND_OPT(T, NULL, __VA_ARGS__)

static const nd_opt_desc_t export_d[] = {
    R(nd_export_t, service, ND_OT_BOOL),
    R(nd_export_t, subject, ND_OT_STR),
    R(nd_export_t, accounts, ND_OT_STRLIST),
    R(nd_export_t, resp_type, ND_OT_INT),
    R(nd_export_t, resp_threshold_ms, ND_OT_I64),
    R(nd_export_t, latency_subject, ND_OT_STR),
    R(nd_export_t, latency_sampling, ND_OT_INT),
    R(nd_export_t, account_token_position, ND_OT_U32),
    ND_OPT_END,
};
static const nd_opt_block_t export_block = {"exports", NULL,          sizeof(nd_export_t),
                                            export_d,  ND_RL_INHERIT, NULL};

static const nd_opt_desc_t import_d[] = {
    R(nd_import_t, service, ND_OT_BOOL),
    ND_OPT(nd_import_t, "account", account, ND_OT_STR), /* keys: the {account, subject} map */
    ND_OPT(nd_import_t, "subject", subject, ND_OT_STR),
    R(nd_import_t, to, ND_OT_STR),
    R(nd_import_t, prefix, ND_OT_STR),
    R(nd_import_t, share, ND_OT_BOOL),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_import_block = {"imports", NULL,          sizeof(nd_import_t),
                                            import_d,  ND_RL_INHERIT, NULL};

static const nd_opt_desc_t dest_d[] = {
    R(nd_mapping_dest_t, subject, ND_OT_STR),
    R(nd_mapping_dest_t, weight, ND_OT_INT),
    R(nd_mapping_dest_t, cluster, ND_OT_STR),
    ND_OPT_END,
};
static const nd_opt_block_t dest_block = {"destinations", NULL,          sizeof(nd_mapping_dest_t),
                                          dest_d,         ND_RL_INHERIT, NULL};

static const nd_opt_desc_t mapping_d[] = {
    R(nd_mapping_t, src, ND_OT_STR),
    R(nd_mapping_t, weighted, ND_OT_BOOL),
    R(nd_mapping_t, dests, ND_OT_ARRAY, .sub = &dest_block,
      .count_off = offsetof(nd_mapping_t, ndests)),
    ND_OPT_END,
};
static const nd_opt_block_t mapping_block = {"mappings", NULL,          sizeof(nd_mapping_t),
                                             mapping_d,  ND_RL_INHERIT, NULL};

static const nd_opt_desc_t acct_js_d[] = {
    R(nd_acct_js_t, enabled, ND_OT_BOOL),
    R(nd_acct_js_t, max_memory, ND_OT_I64),
    R(nd_acct_js_t, max_store, ND_OT_I64),
    R(nd_acct_js_t, max_streams, ND_OT_I64),
    R(nd_acct_js_t, max_consumers, ND_OT_I64),
    R(nd_acct_js_t, memory_max_stream_bytes, ND_OT_I64),
    R(nd_acct_js_t, store_max_stream_bytes, ND_OT_I64),
    R(nd_acct_js_t, max_ack_pending, ND_OT_I64),
    R(nd_acct_js_t, max_bytes_required, ND_OT_BOOL),
    ND_OPT_END,
};
static const nd_opt_block_t acct_js_block = {"jetstream", NULL,          sizeof(nd_acct_js_t),
                                             acct_js_d,   ND_RL_INHERIT, NULL};

static const nd_opt_desc_t account_d[] = {
    R(nd_account_opts_t, name, ND_OT_STR),
    R(nd_account_opts_t, nkey, ND_OT_STR),
    R(nd_account_opts_t, exports, ND_OT_ARRAY, .sub = &export_block,
      .count_off = offsetof(nd_account_opts_t, nexports)),
    R(nd_account_opts_t, imports, ND_OT_ARRAY, .sub = &nd_opt_import_block,
      .count_off = offsetof(nd_account_opts_t, nimports)),
    R(nd_account_opts_t, mappings, ND_OT_ARRAY, .sub = &mapping_block,
      .count_off = offsetof(nd_account_opts_t, nmappings)),
    R(nd_account_opts_t, has_default_perms, ND_OT_BOOL),
    R(nd_account_opts_t, default_perms, ND_OT_STRUCT, .sub = &nd_opt_perms_block),
    R(nd_account_opts_t, max_connections, ND_OT_I32),
    R(nd_account_opts_t, max_subscriptions, ND_OT_I32),
    R(nd_account_opts_t, max_payload, ND_OT_I32),
    R(nd_account_opts_t, max_leafnodes, ND_OT_I32),
    R(nd_account_opts_t, js, ND_OT_STRUCT, .sub = &acct_js_block),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_account_block = {"accounts", NULL,       sizeof(nd_account_opts_t),
                                             account_d,  ND_RL_AUTH, NULL};

static const nd_opt_desc_t resolver_d[] = {
    R(nd_resolver_opts_t, type, ND_OT_INT),
    R(nd_resolver_opts_t, url, ND_OT_STR),
    R(nd_resolver_opts_t, dir, ND_OT_STR),
    R(nd_resolver_opts_t, allow_delete, ND_OT_BOOL),
    R(nd_resolver_opts_t, limit, ND_OT_I64),
    R(nd_resolver_opts_t, ttl_ms, ND_OT_I64),
    R(nd_resolver_opts_t, interval_ms, ND_OT_I64),
    R(nd_resolver_opts_t, timeout_ms, ND_OT_I64),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_resolver_block = {"resolver", NULL,       sizeof(nd_resolver_opts_t),
                                              resolver_d, ND_RL_AUTH, NULL};

static const nd_opt_desc_t callout_d[] = {
    R(nd_auth_callout_opts_t, issuer, ND_OT_STR),
    R(nd_auth_callout_opts_t, account, ND_OT_STR),
    R(nd_auth_callout_opts_t, auth_users, ND_OT_STRLIST),
    R(nd_auth_callout_opts_t, xkey, ND_OT_STR),
    ND_OPT_END,
};
const nd_opt_block_t nd_opt_callout_block = {
    "auth_callout", NULL, sizeof(nd_auth_callout_opts_t), callout_d, ND_RL_AUTH, NULL};

#undef R

void
nd_account_opts_clear(nd_account_opts_t *a)
{
    nd_opt_clear(&nd_opt_account_block, a);
}

void
nd_auth_callout_opts_free(nd_auth_callout_opts_t *c)
{
    nd_opt_free(&nd_opt_callout_block, c);
}

/* ---- topology blocks: their tables are in opts_<block>.c ------------------------------------ */

void
nd_gateway_remote_clear(nd_gateway_remote_t *r)
{
    nd_opt_clear(&nd_opt_gw_remote_block, r);
}

void
nd_leaf_remote_clear(nd_leaf_remote_t *r)
{
    nd_opt_clear(&nd_opt_leaf_remote_block, r);
}
