/* Deep comparison of nested option blocks; see reload_cmp.h.
 *
 * Each block is described by a table of its members (offset and type); nested structures,
 * pointers to blocks (a tls {} inside a cluster {}) and arrays (gateway remotes, leaf users) have
 * tables of their own. A member added to a block in cfg/opts.h must be added here too, or a
 * reload that changes only it goes unnoticed.
 */
#include "server/reload_cmp.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    M_END = 0,
    M_STR,     /* char * */
    M_BOOL,    /* bool */
    M_INT,     /* int (and enums) */
    M_I32,     /* int32_t */
    M_U32,     /* uint32_t */
    M_I64,     /* int64_t */
    M_DBL,     /* double */
    M_STRLIST, /* nd_strlist_t */
    M_STRUCT,  /* a structure embedded at off, described by sub */
    M_PTR,     /* a pointer to a structure described by sub (NULL: absent) */
    M_ARRAY,   /* a pointer to `count_off` elements of `size` bytes, each described by sub */
} mtype_t;

typedef struct member {
    mtype_t type;
    size_t off;
    const struct member *sub;
    size_t size, count_off; /* M_ARRAY */
} member_t;

#define M(T, type, f)          {type, offsetof(T, f), NULL, 0, 0}
#define MSUB(T, type, f, s)    {type, offsetof(T, f), s, 0, 0}
#define MARR(T, f, n, s, ET)   {M_ARRAY, offsetof(T, f), s, sizeof(ET), offsetof(T, n)}

static const member_t cert_pair_m[] = {
    M(nd_tls_cert_pair_t, M_STR, cert_file),
    M(nd_tls_cert_pair_t, M_STR, key_file),
    {M_END, 0, NULL, 0, 0},
};

static const member_t tls_m[] = {
    M(nd_tls_opts_t, M_STR, cert_file),
    M(nd_tls_opts_t, M_STR, key_file),
    M(nd_tls_opts_t, M_STR, ca_file),
    MARR(nd_tls_opts_t, certs, ncerts, cert_pair_m, nd_tls_cert_pair_t),
    M(nd_tls_opts_t, M_BOOL, verify),
    M(nd_tls_opts_t, M_BOOL, verify_and_map),
    M(nd_tls_opts_t, M_BOOL, check_known_urls),
    M(nd_tls_opts_t, M_BOOL, insecure),
    M(nd_tls_opts_t, M_STRLIST, cipher_suites),
    M(nd_tls_opts_t, M_STRLIST, curve_preferences),
    M(nd_tls_opts_t, M_STRLIST, pinned_certs),
    M(nd_tls_opts_t, M_DBL, timeout_s),
    M(nd_tls_opts_t, M_I64, rate_limit),
    M(nd_tls_opts_t, M_INT, min_version),
    M(nd_tls_opts_t, M_BOOL, handshake_first),
    M(nd_tls_opts_t, M_I64, fallback_delay_ms),
    M(nd_tls_opts_t, M_BOOL, ocsp_peer),
    {M_END, 0, NULL, 0, 0},
};

static const member_t subj_perm_m[] = {
    M(nd_subj_perm_t, M_BOOL, allow_set),
    M(nd_subj_perm_t, M_BOOL, deny_set),
    M(nd_subj_perm_t, M_STRLIST, allow),
    M(nd_subj_perm_t, M_STRLIST, deny),
    {M_END, 0, NULL, 0, 0},
};

static const member_t perms_m[] = {
    M(nd_perms_t, M_BOOL, pub_set),
    M(nd_perms_t, M_BOOL, sub_set),
    M(nd_perms_t, M_BOOL, resp_set),
    MSUB(nd_perms_t, M_STRUCT, pub, subj_perm_m),
    MSUB(nd_perms_t, M_STRUCT, sub, subj_perm_m),
    M(nd_perms_t, M_I64, resp_max_msgs),
    M(nd_perms_t, M_I64, resp_expires_ms),
    {M_END, 0, NULL, 0, 0},
};

static const member_t user_m[] = {
    M(nd_user_t, M_STR, name),
    M(nd_user_t, M_STR, pass),
    M(nd_user_t, M_STR, nkey),
    M(nd_user_t, M_STR, account),
    M(nd_user_t, M_BOOL, has_perms),
    MSUB(nd_user_t, M_STRUCT, perms, perms_m),
    M(nd_user_t, M_U32, conn_types),
    {M_END, 0, NULL, 0, 0},
};

/* cluster {} without its listen host and port (first two entries of cluster_m). */
static const member_t cluster_rest_m[] = {
    M(nd_cluster_opts_t, M_STR, name),
    M(nd_cluster_opts_t, M_STR, user),
    M(nd_cluster_opts_t, M_STR, pass),
    M(nd_cluster_opts_t, M_DBL, auth_timeout_s),
    M(nd_cluster_opts_t, M_STRLIST, routes),
    MSUB(nd_cluster_opts_t, M_PTR, tls, tls_m),
    M(nd_cluster_opts_t, M_STR, advertise),
    M(nd_cluster_opts_t, M_BOOL, no_advertise),
    M(nd_cluster_opts_t, M_INT, connect_retries),
    M(nd_cluster_opts_t, M_BOOL, has_perms),
    MSUB(nd_cluster_opts_t, M_STRUCT, perms, perms_m),
    M(nd_cluster_opts_t, M_INT, pool_size),
    M(nd_cluster_opts_t, M_STRLIST, pinned_accounts),
    M(nd_cluster_opts_t, M_STR, compression),
    M(nd_cluster_opts_t, M_I64, ping_interval_ms),
    M(nd_cluster_opts_t, M_INT, ping_max),
    {M_END, 0, NULL, 0, 0},
};

static const member_t cluster_listen_m[] = {
    M(nd_cluster_opts_t, M_STR, host),
    M(nd_cluster_opts_t, M_INT, port),
    {M_END, 0, NULL, 0, 0},
};

static const member_t gw_remote_m[] = {
    M(nd_gateway_remote_t, M_STR, name),
    M(nd_gateway_remote_t, M_STRLIST, urls),
    MSUB(nd_gateway_remote_t, M_PTR, tls, tls_m),
    {M_END, 0, NULL, 0, 0},
};

static const member_t gateway_m[] = {
    M(nd_gateway_opts_t, M_STR, name),
    M(nd_gateway_opts_t, M_STR, host),
    M(nd_gateway_opts_t, M_INT, port),
    M(nd_gateway_opts_t, M_STR, user),
    M(nd_gateway_opts_t, M_STR, pass),
    M(nd_gateway_opts_t, M_DBL, auth_timeout_s),
    MSUB(nd_gateway_opts_t, M_PTR, tls, tls_m),
    M(nd_gateway_opts_t, M_STR, advertise),
    M(nd_gateway_opts_t, M_INT, connect_retries),
    MARR(nd_gateway_opts_t, gateways, ngateways, gw_remote_m, nd_gateway_remote_t),
    M(nd_gateway_opts_t, M_BOOL, reject_unknown),
    {M_END, 0, NULL, 0, 0},
};

static const member_t leaf_remote_m[] = {
    M(nd_leaf_remote_t, M_STRLIST, urls),
    M(nd_leaf_remote_t, M_BOOL, no_randomize),
    M(nd_leaf_remote_t, M_STR, account),
    M(nd_leaf_remote_t, M_STR, credentials),
    MSUB(nd_leaf_remote_t, M_PTR, tls, tls_m),
    M(nd_leaf_remote_t, M_BOOL, hub),
    M(nd_leaf_remote_t, M_STRLIST, deny_imports),
    M(nd_leaf_remote_t, M_STRLIST, deny_exports),
    M(nd_leaf_remote_t, M_BOOL, ws_compression),
    M(nd_leaf_remote_t, M_BOOL, ws_no_masking),
    M(nd_leaf_remote_t, M_BOOL, js_cluster_migrate),
    M(nd_leaf_remote_t, M_STR, compression),
    M(nd_leaf_remote_t, M_I64, first_info_timeout_ms),
    {M_END, 0, NULL, 0, 0},
};

static const member_t leaf_m[] = {
    M(nd_leaf_opts_t, M_STR, host),
    M(nd_leaf_opts_t, M_INT, port),
    M(nd_leaf_opts_t, M_STR, user),
    M(nd_leaf_opts_t, M_STR, pass),
    M(nd_leaf_opts_t, M_STR, account),
    M(nd_leaf_opts_t, M_DBL, auth_timeout_s),
    MARR(nd_leaf_opts_t, users, nusers, user_m, nd_user_t),
    MARR(nd_leaf_opts_t, remotes, nremotes, leaf_remote_m, nd_leaf_remote_t),
    M(nd_leaf_opts_t, M_I64, reconnect_ms),
    MSUB(nd_leaf_opts_t, M_PTR, tls, tls_m),
    M(nd_leaf_opts_t, M_STR, advertise),
    M(nd_leaf_opts_t, M_BOOL, no_advertise),
    M(nd_leaf_opts_t, M_STR, min_version),
    M(nd_leaf_opts_t, M_STR, compression),
    {M_END, 0, NULL, 0, 0},
};

static const member_t ws_m[] = {
    M(nd_ws_opts_t, M_STR, host),
    M(nd_ws_opts_t, M_INT, port),
    M(nd_ws_opts_t, M_STR, advertise),
    M(nd_ws_opts_t, M_BOOL, no_tls),
    MSUB(nd_ws_opts_t, M_PTR, tls, tls_m),
    M(nd_ws_opts_t, M_BOOL, same_origin),
    M(nd_ws_opts_t, M_STRLIST, allowed_origins),
    M(nd_ws_opts_t, M_I64, handshake_timeout_ms),
    M(nd_ws_opts_t, M_BOOL, compression),
    M(nd_ws_opts_t, M_STR, user),
    M(nd_ws_opts_t, M_STR, pass),
    M(nd_ws_opts_t, M_STR, token),
    M(nd_ws_opts_t, M_DBL, auth_timeout_s),
    M(nd_ws_opts_t, M_STR, jwt_cookie),
    M(nd_ws_opts_t, M_STR, user_cookie),
    M(nd_ws_opts_t, M_STR, pass_cookie),
    M(nd_ws_opts_t, M_STR, token_cookie),
    M(nd_ws_opts_t, M_STR, no_auth_user),
    M(nd_ws_opts_t, M_STRLIST, headers),
    {M_END, 0, NULL, 0, 0},
};

static const member_t mqtt_m[] = {
    M(nd_mqtt_opts_t, M_STR, host),
    M(nd_mqtt_opts_t, M_INT, port),
    MSUB(nd_mqtt_opts_t, M_PTR, tls, tls_m),
    M(nd_mqtt_opts_t, M_STR, user),
    M(nd_mqtt_opts_t, M_STR, pass),
    M(nd_mqtt_opts_t, M_STR, token),
    M(nd_mqtt_opts_t, M_DBL, auth_timeout_s),
    M(nd_mqtt_opts_t, M_STR, no_auth_user),
    M(nd_mqtt_opts_t, M_I64, ack_wait_ms),
    M(nd_mqtt_opts_t, M_INT, max_ack_pending),
    M(nd_mqtt_opts_t, M_STR, js_domain),
    M(nd_mqtt_opts_t, M_INT, stream_replicas),
    M(nd_mqtt_opts_t, M_INT, consumer_replicas),
    M(nd_mqtt_opts_t, M_BOOL, consumer_memory_storage),
    M(nd_mqtt_opts_t, M_I64, consumer_inactive_threshold_ms),
    M(nd_mqtt_opts_t, M_BOOL, reject_qos2_publish),
    M(nd_mqtt_opts_t, M_BOOL, downgrade_qos2_subscribe),
    M(nd_mqtt_opts_t, M_I64, js_api_timeout_ms),
    {M_END, 0, NULL, 0, 0},
};

static const member_t js_m[] = {
    M(nd_js_opts_t, M_I64, max_memory),
    M(nd_js_opts_t, M_I64, max_store),
    M(nd_js_opts_t, M_STR, domain),
    M(nd_js_opts_t, M_STR, key),
    M(nd_js_opts_t, M_STR, prev_key),
    M(nd_js_opts_t, M_INT, cipher),
    M(nd_js_opts_t, M_STR, extension_hint),
    M(nd_js_opts_t, M_STR, unique_tag),
    M(nd_js_opts_t, M_I64, sync_interval_ms),
    M(nd_js_opts_t, M_BOOL, sync_always),
    M(nd_js_opts_t, M_I64, max_outstanding_catchup),
    M(nd_js_opts_t, M_I64, request_queue_limit),
    M(nd_js_opts_t, M_I64, max_ack_pending),
    M(nd_js_opts_t, M_I64, max_ha_assets),
    M(nd_js_opts_t, M_I64, max_request_batch),
    M(nd_js_opts_t, M_I64, duplicate_window_ms),
    M(nd_js_opts_t, M_BOOL, strict),
    M(nd_js_opts_t, M_I64, max_buffered_size),
    M(nd_js_opts_t, M_I64, max_buffered_msgs),
    {M_END, 0, NULL, 0, 0},
};

static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return (a == NULL || *a == '\0') && (b == NULL || *b == '\0');
    return strcmp(a, b) == 0;
}

static bool
strlist_eq(const nd_strlist_t *a, const nd_strlist_t *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!str_eq(a->v[i], b->v[i]))
            return false;
    return true;
}

static bool struct_eq(const member_t *m, const char *a, const char *b);

static bool
member_eq(const member_t *m, const char *a, const char *b)
{
    const char *pa = a + m->off, *pb = b + m->off;
    switch (m->type) {
    case M_END:
        return true;
    case M_STR:
        return str_eq(*(char *const *)pa, *(char *const *)pb);
    case M_BOOL:
        return *(const bool *)pa == *(const bool *)pb;
    case M_INT:
        return *(const int *)pa == *(const int *)pb;
    case M_I32:
        return *(const int32_t *)pa == *(const int32_t *)pb;
    case M_U32:
        return *(const uint32_t *)pa == *(const uint32_t *)pb;
    case M_I64:
        return *(const int64_t *)pa == *(const int64_t *)pb;
    case M_DBL:
        return *(const double *)pa == *(const double *)pb;
    case M_STRLIST:
        return strlist_eq((const nd_strlist_t *)pa, (const nd_strlist_t *)pb);
    case M_STRUCT:
        return struct_eq(m->sub, pa, pb);
    case M_PTR: {
        const char *xa = *(char *const *)pa, *xb = *(char *const *)pb;
        if (xa == NULL || xb == NULL)
            return xa == xb;
        return struct_eq(m->sub, xa, xb);
    }
    case M_ARRAY: {
        size_t na = *(const size_t *)(a + m->count_off), nb = *(const size_t *)(b + m->count_off);
        if (na != nb)
            return false;
        const char *xa = *(char *const *)pa, *xb = *(char *const *)pb;
        for (size_t i = 0; i < na; i++)
            if (!struct_eq(m->sub, xa + i * m->size, xb + i * m->size))
                return false;
        return true;
    }
    }
    return true;
}

static bool
struct_eq(const member_t *m, const char *a, const char *b)
{
    for (; m->type != M_END; m++)
        if (!member_eq(m, a, b))
            return false;
    return true;
}

bool
nd_block_equal(nd_block_t k, const void *a, const void *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    switch (k) {
    case ND_BLOCK_TLS:
        return struct_eq(tls_m, a, b);
    case ND_BLOCK_CLUSTER:
        return struct_eq(cluster_listen_m, a, b) && struct_eq(cluster_rest_m, a, b);
    case ND_BLOCK_GATEWAY:
        return struct_eq(gateway_m, a, b);
    case ND_BLOCK_LEAF:
        return struct_eq(leaf_m, a, b);
    case ND_BLOCK_WS:
        return struct_eq(ws_m, a, b);
    case ND_BLOCK_MQTT:
        return struct_eq(mqtt_m, a, b);
    case ND_BLOCK_JS:
        return struct_eq(js_m, a, b);
    }
    return true;
}

bool
nd_cluster_equal_but_listen(const nd_cluster_opts_t *a, const nd_cluster_opts_t *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return struct_eq(cluster_rest_m, (const char *)a, (const char *)b);
}
