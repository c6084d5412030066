/* websocket {} -> nd_ws_opts_t, with nats-server's checks and texts. Whole-server checks (TLS
 * required unless no_tls, allowed_origins as absolute URLs) are nats-server's validateOptions
 * and belong to the WebSocket issue.
 * References: nats-server 2.9.10 server/opts.go parseWebsocket, parseStringArray,
 * parseSimpleAuth; inventory §8.2 (2.11's cookies, headers and ping_interval).
 */
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

static int
headers(nd_cfg_apply_t *a, const nd_cfg_entry_t *he, const nd_opt_desc_t *d, void *blk,
        unsigned *seen)
{
    (void)d, (void)seen;
    nd_strlist_t *out = &((nd_ws_opts_t *)blk)->headers;
    const nd_cfg_node_t *v = he->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(he), "error parsing headers: unsupported type %s",
                           nd_cfg_go_type(v));
    nd_strlist_free(out);
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        if (e->val->type != ND_CFG_STRING)
            return nd_cfg_fail(a, nd_cfg_at_entry(e),
                               "error parsing header key %s: unsupported type %s", e->key,
                               nd_cfg_go_type(e->val));
        nd_strlist_add(out, e->key);
        nd_strlist_add(out, e->val->u.str.s);
    }
    return 0;
}

/* An integer of seconds (without parseDuration's warning) or a duration string. */
static int
handshake_timeout(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                  unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    const nd_cfg_node_t *x = e->val;
    int64_t *ms = &((nd_ws_opts_t *)blk)->handshake_timeout_ms;
    if (x->type == ND_CFG_INT) {
        *ms = x->u.i * 1000;
        return 0;
    }
    if (x->type == ND_CFG_STRING)
        return nd_cfg_duration_str(a, at, NULL, x, ms);
    return nd_cfg_fail(a, at, "error parsing handshake timeout: unsupported type %s",
                       nd_cfg_go_type(x));
}

#define W(...) ND_OPT(nd_ws_opts_t, __VA_ARGS__)
static const nd_opt_desc_t ws_d[] = {
    W(ND_CFG_LISTENER_KEYS, host, ND_OT_STR, .parse = nd_opt_listener,
      .aux = offsetof(nd_ws_opts_t, port), .flags = ND_OF_LISTEN),
    W(NULL, port, ND_OT_INT, .flags = ND_OF_LISTEN),
    W("advertise", advertise, ND_OT_STR),
    W("no_tls", no_tls, ND_OT_BOOL),
    W("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 1),
    W("same_origin", same_origin, ND_OT_BOOL),
    W("allowed_origins allowed_origin allow_origins allow_origin origins origin", allowed_origins,
      ND_OT_STRLIST, .name = "allowed origins"),
    W("handshake_timeout", handshake_timeout_ms, ND_OT_I64, .parse = handshake_timeout),
    W("compress compression", compression, ND_OT_BOOL),
    W("authorization authentication", user, ND_OT_STR, .parse = nd_opt_simple_auth),
    W(NULL, pass, ND_OT_STR),
    W(NULL, token, ND_OT_STR),
    W(NULL, auth_timeout_s, ND_OT_DBL),
    W("jwt_cookie", jwt_cookie, ND_OT_STR),
    W("user_cookie", user_cookie, ND_OT_STR),
    W("pass_cookie", pass_cookie, ND_OT_STR),
    W("token_cookie", token_cookie, ND_OT_STR),
    W("no_auth_user", no_auth_user, ND_OT_STR),
    W("headers", headers, ND_OT_STRLIST, .parse = headers),
    W("ping_interval", ping_interval_ms, ND_OT_DUR),
    ND_OPT_END,
};
#undef W

const nd_opt_block_t nd_opt_ws_block = {
    "websocket", "Expected websocket to be a map, got %s", sizeof(nd_ws_opts_t), ws_d, ND_RL_REFUSE,
    NULL};

int
nd_cfg_apply_websocket(nd_cfg_apply_t *a, const nd_cfg_entry_t *we)
{
    return nd_opt_parse_block(a, &nd_opt_ws_block, we, (void **)&a->o->ws);
}
