/* websocket {} -> nd_ws_opts_t, with nats-server's checks and texts. Whole-server checks (TLS
 * required unless no_tls, allowed_origins as absolute URLs) are nats-server's validateOptions
 * and belong to the WebSocket issue.
 * References: nats-server 2.9.10 server/opts.go parseWebsocket, parseStringArray,
 * parseSimpleAuth; inventory §8.2 (2.11's cookies, headers and ping_interval).
 */
#include "actors/alloc.h"
#include "cfg/opts_int.h"

static int
headers(nd_cfg_apply_t *a, const nd_cfg_entry_t *he, nd_strlist_t *out)
{
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

int
nd_cfg_apply_websocket(nd_cfg_apply_t *a, const nd_cfg_entry_t *we)
{
    const nd_cfg_node_t *v = we->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(we), "Expected websocket to be a map, got %s",
                           nd_cfg_go_type(v));
    nd_opts_t *o = a->o;
    if (o->ws == NULL)
        o->ws = nd_xcalloc(1, sizeof(*o->ws));
    nd_ws_opts_t *w = o->ws;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *x = e->val;
        const char *k = e->key;
        int rc = 0;
        if (nd_cfg_key_is(k, ND_CFG_LISTENER_KEYS)) {
            rc = nd_cfg_listener(a, e, &w->host, &w->port);
        } else if (nd_cfg_key_is(k, "advertise")) {
            rc = nd_cfg_str(a, at, x, &w->advertise);
        } else if (nd_cfg_key_is(k, "no_tls")) {
            rc = nd_cfg_bool(a, at, x, &w->no_tls);
        } else if (nd_cfg_key_is(k, "tls")) {
            rc = nd_cfg_tls(a, e, true, &w->tls);
        } else if (nd_cfg_key_is(k, "same_origin")) {
            rc = nd_cfg_bool(a, at, x, &w->same_origin);
        } else if (nd_cfg_key_is(k, "allowed_origins allowed_origin allow_origins allow_origin "
                                    "origins origin")) {
            rc = nd_cfg_strarray(a, at, "allowed origins", x, &w->allowed_origins);
        } else if (nd_cfg_key_is(k, "handshake_timeout")) {
            if (x->type == ND_CFG_INT)
                w->handshake_timeout_ms = x->u.i * 1000;
            else if (x->type == ND_CFG_STRING)
                rc = nd_cfg_duration_str(a, at, NULL, x, &w->handshake_timeout_ms);
            else
                rc = nd_cfg_fail(a, at, "error parsing handshake timeout: unsupported type %s",
                                 nd_cfg_go_type(x));
        } else if (nd_cfg_key_is(k, "compress compression")) {
            rc = nd_cfg_bool(a, at, x, &w->compression);
        } else if (nd_cfg_key_is(k, "authorization authentication")) {
            rc = nd_cfg_simple_auth(a, e, &w->user, &w->pass, &w->token, &w->auth_timeout_s);
        } else if (nd_cfg_key_is(k, "jwt_cookie")) {
            rc = nd_cfg_str(a, at, x, &w->jwt_cookie);
        } else if (nd_cfg_key_is(k, "user_cookie")) {
            rc = nd_cfg_str(a, at, x, &w->user_cookie);
        } else if (nd_cfg_key_is(k, "pass_cookie")) {
            rc = nd_cfg_str(a, at, x, &w->pass_cookie);
        } else if (nd_cfg_key_is(k, "token_cookie")) {
            rc = nd_cfg_str(a, at, x, &w->token_cookie);
        } else if (nd_cfg_key_is(k, "no_auth_user")) {
            rc = nd_cfg_str(a, at, x, &w->no_auth_user);
        } else if (nd_cfg_key_is(k, "headers")) {
            rc = headers(a, e, &w->headers);
        } else {
            rc = nd_cfg_unknown(a, e);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}
