/* /jsz: JetStream's figures (nats-server's JSInfo) through the server's JetStream hook
 * (net/server.h, filled by src/js/jsmon.c), or nats-server's answer of a server without
 * JetStream. Parameters as nats-server's HandleJsz: accounts, streams, consumers, config,
 * offset, limit, leader-only, raft, stream-leader-only (booleans and integers decoded in that
 * order, the first bad one answered 400) and acc (one account's details).
 */
#include <stddef.h>

#include "mon/mon_int.h"

void
nd_mon_jsz(nd_mon_req_t *req)
{
    /* nats-server's HandleJsz: each parameter decoded in its order, 400 on the first bad one. */
    nd_jsz_query_t q = {.acc = nd_mon_param(req, "acc")};
    static const struct {
        const char *name;
        size_t off;
    } bools[] = {
        {"accounts", offsetof(nd_jsz_query_t, accounts)},
        {"streams", offsetof(nd_jsz_query_t, streams)},
        {"consumers", offsetof(nd_jsz_query_t, consumers)},
        {"config", offsetof(nd_jsz_query_t, config)},
    };
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
        if (!nd_mon_param_bool(req, bools[i].name, (bool *)((char *)&q + bools[i].off)))
            return;
    if (!nd_mon_param_int(req, "offset", &q.offset) || !nd_mon_param_int(req, "limit", &q.limit))
        return;
    if (!nd_mon_param_bool(req, "leader-only", &q.leader_only) ||
        !nd_mon_param_bool(req, "raft", &q.raft) ||
        !nd_mon_param_bool(req, "stream-leader-only", &q.stream_leader_only))
        return;
    const nd_js_mon_t *jsm = nd_server_js_mon(req->mon->srv);
    if (jsm != NULL) {
        /* A server on its own is the leader: leader-only changes nothing. */
        nd_mon_reply_json(req, 200, jsm->jsz(jsm->arg, &q, req->now_ns));
        return;
    }
    if (q.leader_only) {
        nd_mon_reply_text(req, 400, "filtered response: not leader");
        return;
    }
    /* nats-server's JSInfo with JetStream off. */
    json_t *o = json_object();
    json_object_set_new(o, "memory", json_integer(0));
    json_object_set_new(o, "storage", json_integer(0));
    json_object_set_new(o, "reserved_memory", json_integer(0));
    json_object_set_new(o, "reserved_storage", json_integer(0));
    json_object_set_new(o, "accounts", json_integer(0));
    json_object_set_new(o, "ha_assets", json_integer(0));
    json_t *api = json_object();
    json_object_set_new(api, "level", json_integer(0));
    json_object_set_new(api, "total", json_integer(0));
    json_object_set_new(api, "errors", json_integer(0));
    json_object_set_new(o, "api", api);
    json_object_set_new(o, "server_id", json_string(req->mon->srv->server_id));
    json_object_set_new(o, "now", nd_mon_json_time(req->now_ns));
    json_object_set_new(o, "disabled", json_true());
    json_t *cfg = json_object();
    json_object_set_new(cfg, "max_memory", json_integer(0));
    json_object_set_new(cfg, "max_storage", json_integer(0));
    json_object_set_new(o, "config", cfg);
    json_object_set_new(o, "streams", json_integer(0));
    json_object_set_new(o, "consumers", json_integer(0));
    json_object_set_new(o, "messages", json_integer(0));
    json_object_set_new(o, "bytes", json_integer(0));
    json_object_set_new(o, "total", json_integer(0));
    nd_mon_reply_json(req, 200, o);
}
